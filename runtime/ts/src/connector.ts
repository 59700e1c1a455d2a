// What the connectors and the engine share: the errors of how a session
// ended, of an operation its end interrupted and of an abandoned attempt,
// how they name a URL in their errors, and their waits. (This order is
// the one gzip codes the bundle in fewest bytes.)

import { CloseUnauthorized, sessionCodeName } from './codes.js';
import { RefusedError, TransportError } from './errors.js';
import type { Clock, CloseInfo, ConnectContext } from './transport.js';

/**
 * Waits on clock for at most ms, or until p resolves (a Conn's closed or a
 * session's ended: neither rejects, and each resolves with an object);
 * gives what p resolved with, or what other resolved with if it came
 * first, or false once ms passed.
 */
export function settlesWithin<T = never>(p: Promise<object>, ms: number, clock: Clock, other: Promise<T> = never): Promise<object | T | false> {
  return outcomeWithin(clock, ms, Promise.race([p, other])).then((first) => first !== 'timeout' && (first as object | T));
}

/** What an operation the session's end interrupted reports (§11): WT_SESSION_CLOSED, caused by how it ended. */
export function closedBy(cause: TransportError): TransportError {
  return new TransportError('WT_SESSION_CLOSED', 'the session closed: ' + cause.message, { cause });
}

/** How a session ended, as pending operations and the client report it (§11). */
export function closeError(info: CloseInfo): TransportError {
  if (info.lost) return new TransportError('WT_NO_ERROR', 'the connection was lost', { remedy: 'Reconnect.' });
  if (info.code === CloseUnauthorized && info.remote) return new RefusedError(info.reason);
  return new TransportError(
    sessionCodeName(info.code) ?? (('WT_CLOSE_' + info.code) as `WT_${string}`),
    `session closed by ${info.remote ? 'the peer' : 'this side'}` + (info.reason && ': ' + info.reason),
  );
}

/** An error's message (its name when the message is empty), or any other value as a string. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}

/** The error of an attempt the client gave up on (close() during connect). */
export function abandoned(): TransportError {
  return new TransportError('WT_SESSION_CLOSED', 'client closed while connecting');
}

/** A promise that never settles: what a race waits on when one side has nothing to give. */
export const never = new Promise<never>(() => {});

/**
 * A URL as errors may print it: scheme, host and path, never the query
 * (§4.3). The origin is the URL's own, scheme://host[:port] for https:,
 * ws: and wss: (Chromium, Firefox and Node alike; "null" for a scheme
 * without one).
 */
export function describeUrl(url: string): { scheme: string; origin: string; text: string } | undefined {
  try {
    const u = new URL(url);
    return { scheme: u.protocol, origin: u.origin, text: u.origin + u.pathname };
  } catch {
    // Not a URL: undefined.
  }
}

/** What an operation on a Conn reports once its session ended as info says (§11). */
export function endedError(info: CloseInfo): TransportError {
  return closedBy(closeError(info));
}

/**
 * What outcome resolves with, or 'timeout' once ms passed on clock, or
 * 'aborted' once signal aborts, whichever comes first. The timer and the
 * listener are gone once it settles.
 */
export function outcomeWithin<T>(clock: Clock, ms: number, outcome: Promise<T>, signal?: AbortSignal): Promise<T | 'timeout' | 'aborted'> {
  let timer: unknown;
  let onAbort: (() => void) | undefined;
  return Promise.race([
    outcome,
    new Promise<'timeout' | 'aborted'>((resolve) => {
      timer = clock.setTimeout(() => resolve('timeout'), ms);
      onAbort = () => resolve('aborted');
      // A signal aborted already fires no more 'abort' (a snapshot listener's close() just before the wait).
      signal?.aborted ? onAbort() : signal?.addEventListener('abort', onAbort);
    }),
  ]).then((first) => {
    clock.clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort!);
    return first;
  });
}
