// The strict reader behind the JSON control payloads (§4.1, §6.4, §6.5,
// §6.6). JSON.parse judges the syntax, but alone it is too lenient for
// them: it keeps the last of two equal keys and cannot tell 1e0 from 1. A
// scan of the text's tokens (strings whole, so nothing inside one counts)
// adds what it misses, so this runtime refuses the payloads the Go
// runtime's strict readers refuse.

import { TransportError, protocolError } from '../errors.js';
import { utf8Decode, utf8Encode } from './utf8.js';

// The tokens of valid JSON the scan needs: strings, braces, colons, and a
// digit before a fraction or an exponent, which only a number not written as
// an integer has (outside strings no other digit is followed by . e or E).
// Brackets need no counting: a colon belongs to the innermost object around
// it, and an array holds none of its own.
const tokenRe = /"(?:[^"\\]|\\.)*"|\d[.eE]|[{}:]/g;

/**
 * Reads the control payload b (what names it in errors): a JSON object whose
 * members named in fields are read by their reader (given the member's name
 * quoted, for its errors), in the order of fields and before anything else
 * is judged, so that a reader may end the read by throwing a TransportError
 * of its own (the handshake's v, §4.2); each must be there (a reader may
 * return undefined to call a value absent), and hold no number not written
 * as an integer. Other members are ignored, or with strict refused. Any
 * other fault throws WT_PROTOCOL_ERROR, "<what>: <why>" (§5.5).
 */
export function readObject<T>(b: Uint8Array, what: string, fields: Record<string, (v: unknown, what: string) => unknown>, strict?: boolean): T {
  const out: Record<string, unknown> = {};
  try {
    const [o, members] = decodeObject(b);
    for (const key in fields) {
      // Absent (undefined), or whether every number in it is written as an integer.
      const integral = members.get(key);
      if (integral === false) throw new Error(`'${key}' holds a number not an integer`);
      if ((out[key] = integral && fields[key]!(o[key], `'${key}'`)) === undefined) throw new Error(`no '${key}'`);
    }
    if (strict) for (const key of members.keys()) if (!Object.hasOwn(fields, key)) throw new Error(`unknown ${quoteShort(key)}`);
  } catch (e) {
    throw e instanceof TransportError ? e : protocolError(what + ': ' + (e as Error).message);
  }
  return out as T;
}

/**
 * Reads the one JSON object b holds: the object, and its members' names in
 * order, each with whether every number in its value is written as an
 * integer (no fraction, no exponent). Bytes that are not UTF-8 (§5.3),
 * anything but an object, or a key given twice throw an Error saying what.
 */
export function decodeObject(b: Uint8Array): [Record<string, unknown>, Map<string, boolean>] {
  let text: string;
  try {
    text = utf8Decode(b);
  } catch {
    throw new Error('not UTF-8');
  }
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch {
    throw new Error('not JSON');
  }
  if (!(o instanceof Object) || Array.isArray(o)) throw new Error('not an object');
  const members = new Map<string, boolean>();
  // Objects open around the token: a colon at 1 is the outermost object's.
  let depth = 0;
  let last = '';
  // The member whose value the scan is in.
  let member = '';
  // An object holds a brace at least, so match finds a token.
  for (const t of text.match(tokenRe)!) {
    if (t === '{') depth++;
    else if (t === '}') depth--;
    // Every string, decoded: an escaped surrogate that pairs with none names no
    // character; JSON.parse keeps it where Go's encoding/json reads U+FFFD, so
    // both runtimes refuse it, wherever it stands.
    else if (t[0] === '"') {
      if (/\p{Cs}/u.test((last = JSON.parse(t) as string))) throw new Error('an unpaired surrogate');
    }
    // A number not written as an integer, which only a member's value holds.
    else if (t !== ':') members.set(member, false);
    else if (depth === 1) {
      // A key of the outermost object: a key given twice there is ambiguous.
      if (members.has(last)) throw new Error(`${quoteShort(last)} twice`);
      members.set((member = last), true);
    }
  }
  return [o as Record<string, unknown>, members];
}

/**
 * Cuts s to at most n bytes of UTF-8 without splitting a character (§3.3,
 * §10.2), as the Go runtime's CutReason.
 */
export function cutReason(s: string, n: number): string {
  const b = utf8Encode(s);
  if (b.length <= n) return s;
  // Step back over continuation bytes (10xxxxxx) to a character start; the
  // encoder's bytes start with one, so the loop ends at 0 at the latest.
  while (((b[n] as number) & 0xc0) === 0x80) n--;
  return utf8Decode(b.subarray(0, n));
}

/** A string value, or throws. */
export function jsonString(v: unknown, what: string): string {
  return expect(typeof v === 'string', v, what, 'a string');
}

/** An array value, or throws. */
export function jsonArray(v: unknown, what: string): unknown[] {
  return expect(Array.isArray(v), v, what, 'an array');
}

/** Quotes a peer-supplied value for an error message, cut so a hostile payload cannot inflate a close reason. */
export function quoteShort(s: string): string {
  const cut = cutReason(s, 40);
  return "'" + cut + (cut === s ? "'" : "…'");
}

/** v (a value JSON.parse gave, which JSON.stringify writes as a string) as a T when ok; else throws "<what> is <the value>, not <want>". */
export function expect<T>(ok: boolean, v: unknown, what: string, want: string): T {
  if (ok) return v as T;
  const text = Array.isArray(v) ? '[…]' : v instanceof Object ? '{…}' : JSON.stringify(v);
  throw new Error(`${what} is ${quoteShort(text)}, not ${want}`);
}
