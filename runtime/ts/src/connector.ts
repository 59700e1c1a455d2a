// What the connectors share: how they name a URL and a close in their
// errors, and the errors of an abandoned attempt and of an ended session.

import { sessionCodeName } from './codes.js';
import { TransportError } from './errors.js';
import type { Clock, CloseInfo, ConnectContext, Mapping } from './transport.js';

/** A URL as errors may print it: scheme, host and path, never the query (§4.3). */
export function describeUrl(url: string): { scheme: string; origin: string; text: string } | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  return { scheme: u.protocol, origin: `${u.protocol}//${u.host}`, text: `${u.protocol}//${u.host}${u.pathname}` };
}

/** The error of an attempt the client gave up on (close() during connect). */
export function abandoned(): TransportError {
  return new TransportError('WT_SESSION_CLOSED', 'the connect attempt was abandoned: the client closed while connecting');
}

const mappingName: Record<Mapping, string> = { webtransport: 'WebTransport', websocket: 'WebSocket' };

/** The error of an operation on a session that ended, saying how it ended. */
export function sessionEndedError(mapping: Mapping, info: CloseInfo | null): TransportError {
  const m = mappingName[mapping];
  if (info === null || info.lost) return new TransportError('WT_SESSION_CLOSED', `the ${m} connection was lost`);
  const name = sessionCodeName(info.code) ?? `code ${info.code}`;
  const what = info.reason === '' ? name : `${name}, ${JSON.stringify(info.reason)}`;
  return new TransportError(
    'WT_SESSION_CLOSED',
    info.remote ? `the peer closed the ${m} session (${what})` : `this side closed the ${m} session (${what})`,
  );
}

/** Waits on clock for at most ms, or until p settles; reports whether p settled first. */
export async function settlesWithin(p: Promise<unknown>, ms: number, clock: Clock): Promise<boolean> {
  let timer: unknown;
  const settled = await Promise.race([
    p.then(
      () => true,
      () => true,
    ),
    new Promise<false>((resolve) => (timer = clock.setTimeout(() => resolve(false), ms))),
  ]);
  clock.clearTimeout(timer);
  return settled;
}

/**
 * Races an opening against the deadline and the client giving up: what
 * start reports through done, or 'timeout' after ms, or 'aborted' once
 * ctx.signal aborts. The timer and the listener are gone once it settles.
 */
export function openWithin<T>(ctx: ConnectContext, ms: number, start: (done: (outcome: T) => void) => void): Promise<T | 'timeout' | 'aborted'> {
  return new Promise((resolve) => {
    const timer = ctx.clock.setTimeout(() => done('timeout'), ms);
    const onAbort = (): void => done('aborted');
    ctx.signal.addEventListener('abort', onAbort);
    function done(outcome: T | 'timeout' | 'aborted'): void {
      ctx.clock.clearTimeout(timer);
      ctx.signal.removeEventListener('abort', onAbort);
      resolve(outcome);
    }
    start(done);
  });
}
