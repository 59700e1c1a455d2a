// A client's choice of mapping (the transport-io protocol, version 0, §2,
// §3.3, §10.3): the primary (WebTransport) first, and the secondary (the
// WebSocket mapping) only when no session could be had on the primary at
// all. Once a server has answered on the primary (a refusal, a contract
// mismatch, a close), its answer stands and nothing is retried on the
// secondary. Mirrors the Go runtime's fallback package.

import { TransportError } from './errors.js';
import type { ConnectContext, Connector, Opened } from './transport.js';

/**
 * Whether an error of the primary leaves the secondary worth trying: the
 * runtime has no WebTransport (WT_NO_SUPPORT), the transport-level
 * handshake failed (WT_HANDSHAKE_FAILED, or WT_UDP_UNREACHABLE when only
 * QUIC is blocked), or a session was established and no handshake arrived
 * on it (WT_HANDSHAKE_TIMEOUT, §4.1). Every other error is the server's
 * answer or the caller's (WT_UNAUTHORIZED is final, §4), and stands.
 */
export function shouldFallBack(err: unknown): boolean {
  if (!(err instanceof TransportError)) return false;
  switch (err.code) {
    case 'WT_NO_SUPPORT':
    case 'WT_HANDSHAKE_FAILED':
    case 'WT_UDP_UNREACHABLE':
    case 'WT_HANDSHAKE_TIMEOUT':
      return true;
  }
  return false;
}

/**
 * A connector that opens sessions through primary and, when primary's
 * error passes shouldFallBack, through secondary. Opened.fallbackReason
 * then names the error that made it fall back, with its code; conn.mapping
 * says which mapping carries the session. When both fail, the error
 * carries the secondary's code (the final answer) and says what each said.
 * While the session is on the primary, Opened.fallBack opens the secondary:
 * the client calls it when that session ended WT_HANDSHAKE_TIMEOUT before
 * its handshake (§4.1), which only the engine can see; waiting here for the
 * server's bytes would hold back this side's frame 0.
 */
export function withFallback(primary: Connector, secondary: Connector): Connector {
  const fallBack = async (why: TransportError, ctx: ConnectContext): Promise<Opened> => {
    let opened: Opened;
    try {
      opened = await secondary.open(ctx);
    } catch (err) {
      throw bothFailed(why, err);
    }
    return { conn: opened.conn, fallbackReason: describe(why) };
  };
  return {
    async open(ctx: ConnectContext): Promise<Opened> {
      let opened: Opened;
      try {
        opened = await primary.open(ctx);
      } catch (err) {
        if (!shouldFallBack(err) || ctx.signal.aborted) throw err;
        return fallBack(err as TransportError, ctx);
      }
      return { conn: opened.conn, fallbackReason: opened.fallbackReason, fallBack };
    },
  };
}

function describe(err: TransportError): string {
  return `${err.code}: ${err.message}`;
}

function bothFailed(primaryErr: TransportError, secondaryErr: unknown): unknown {
  if (!(secondaryErr instanceof TransportError)) return secondaryErr;
  return new TransportError(
    secondaryErr.code,
    `the first mapping failed (${describe(primaryErr)}), then the fallback failed (${describe(secondaryErr)})`,
    { cause: secondaryErr, remedy: secondaryErr.remedy },
  );
}
