// The JSON control payloads: CALL_CREDIT (§6.6), CALL_ERROR (§6.4), JOIN
// and LEAVE (§6.5). Mirrors the Go runtime's wire/payload.go.

import { decodeObject, jsonString, quoteShort, readObject } from './json.js';
import { utf8Encode } from './utf8.js';

/**
 * Reads a CALL_CREDIT payload (§6.6): the grant, or undefined when the frame
 * must be ignored (credit missing, not a number, not whole, not positive, or
 * the payload not a JSON object). A grant above 2^31-1 reads as 2^31-1.
 */
export function parseCredit(b: Uint8Array): number | undefined {
  let f: unknown;
  try {
    f = decodeObject(b)[0]['credit'];
  } catch {
    return undefined;
  }
  if (typeof f !== 'number' || !(f > 0) || f !== Math.trunc(f)) return undefined;
  return f >= maxInt32 ? maxInt32 : f;
}

/** The payload of a CALL_ERROR frame (§6.4). */
export interface CallError {
  readonly code: string;
  readonly message: string;
}

/** {"code":"WT_…","message":"…"} (§6.4): the two fields alone, in that order. */
export function encodeCallError(e: CallError): Uint8Array {
  return utf8Encode(JSON.stringify({ code: e.code, message: e.message }));
}

/** Reads a JOIN or LEAVE payload (§6.5): room a non-empty string, other fields ignored; else WT_PROTOCOL_ERROR. */
export function parseRoom(b: Uint8Array): string {
  // An empty room is as good as none.
  return readObject<{ room: string }>(b, 'room', { room: (v, what) => jsonString(v, what) || undefined }).room;
}

/** The JOIN and LEAVE payload {"room":"…"} (§6.5). */
export function encodeRoom(room: string): Uint8Array {
  return utf8Encode('{"room":' + JSON.stringify(room) + '}');
}

/** The CALL_CREDIT payload {"credit":n} (§6.6). */
export function encodeCredit(n: number): Uint8Array {
  return utf8Encode(JSON.stringify({ credit: n }));
}

const maxInt32 = 0x7fffffff;

/**
 * Reads a CALL_ERROR payload (§6.4): code a WT_-prefixed string, message a
 * string; unknown codes are kept (opaque) and other fields ignored. Anything
 * else throws WT_PROTOCOL_ERROR.
 */
export function parseCallError(b: Uint8Array): CallError {
  return readObject<CallError>(b, 'CALL_ERROR', {
    code(v, what) {
      const s = jsonString(v, what);
      if (!s.startsWith('WT_')) throw new Error(`code ${quoteShort(s)} is not WT_*`);
      return s;
    },
    message: jsonString,
  });
}
