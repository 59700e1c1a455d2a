// What the connectors and the engine share: the errors of how a session
// ended, of an operation its end interrupted and of an abandoned attempt,
// how they read a URL, and their waits.

import { CloseUnauthorized, sessionCodeName } from './codes.js';
import { RefusedError, TransportError } from './errors.js';
import type { Clock, CloseInfo, ConnectContext } from './transport.js';

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
 * The URL url names, or undefined when it names none. The connectors' errors
 * print its origin and path, never its query (§4.3): the origin is
 * scheme://host[:port] for https:, ws: and wss: (Chromium, Firefox and
 * Node alike; "null" for a scheme without one).
 */
export function parseUrl(url: string): URL | undefined {
  try {
    return new URL(url);
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
  ]).finally(() => {
    clock.clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort!);
  });
}
