// The strict JSON reader behind the JSON control payloads (§4.1, §6.4,
// §6.5, §6.6). JSON.parse alone is too lenient for them: it keeps the last
// of two equal keys and cannot tell 1e0 from 1. This reader keeps every
// number's text and every object's members in order, as the Go runtime's
// strict readers do, so both runtimes refuse the same payloads.

import { utf8Decode, utf8Encode } from './utf8.js';

/** A JSON number as it was written: the payloads' rules judge its text (1 is an integer; 1.0 and 1e0 are not). */
export class JsonNumber {
  constructor(readonly text: string) {}
}

/** A parsed JSON value: numbers keep their text, objects are Maps with their members in order. */
export type JsonValue = string | boolean | null | JsonNumber | JsonValue[] | Map<string, JsonValue>;

// A control payload is small; nesting deeper than this is hostile.
const maxDepth = 64;

// One JSON token after optional white space: a string, a number (its text
// kept), a literal, or a structural character.
const tokenRe = /[ \t\n\r]*(?:("(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*")|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)|(true|false|null)|([{}[\],:]))/y;
const blank = /^[ \t\n\r]*$/;

/**
 * Parses exactly one JSON value (white space around it allowed, nothing
 * else). A key given twice in the outermost object, a syntax error or
 * anything after the value throws an Error whose message says which.
 */
export function parseJson(text: string): JsonValue {
  let i = 0;
  const fail = (why: string): never => {
    throw new Error('not valid JSON: ' + why);
  };
  const next = (): RegExpExecArray => {
    tokenRe.lastIndex = i;
    const m = tokenRe.exec(text) ?? fail(blank.test(text.slice(i)) ? 'unexpected end' : `invalid character at offset ${i}`);
    i = tokenRe.lastIndex;
    return m;
  };
  const value = (depth: number, m: RegExpExecArray): JsonValue => {
    // Strings and literals are exact in JSON.parse once the token matched.
    if (m[1] !== undefined || m[3] !== undefined) return JSON.parse(m[0]) as JsonValue;
    if (m[2] !== undefined) return new JsonNumber(m[2]);
    const open = m[4];
    if (open !== '{' && open !== '[') return fail(`unexpected '${open}'`);
    if (depth > maxDepth) fail('nested too deeply');
    const close = open === '{' ? '}' : ']';
    const members = new Map<string, JsonValue>();
    const items: JsonValue[] = [];
    let t = next();
    if (t[4] !== close) {
      for (;;) {
        if (open === '{') {
          if (t[1] === undefined) fail('object key must be a string');
          const key = JSON.parse(t[1] as string) as string;
          if (next()[4] !== ':') fail("expected ':' after an object key");
          // The fields read are the outermost object's: a key given twice there is ambiguous.
          if (depth === 0 && members.has(key)) throw new Error(`field ${quoteShort(key)} appears twice`);
          members.set(key, value(depth + 1, next()));
        } else {
          items.push(value(depth + 1, t));
        }
        t = next();
        if (t[4] === close) break;
        if (t[4] !== ',') fail(`expected ',' or '${close}'`);
        t = next();
      }
    }
    return open === '{' ? members : items;
  };
  const v = value(0, next());
  if (!blank.test(text.slice(i))) throw new Error('data after the JSON value');
  return v;
}

/** Calls field once per member of the one JSON object text holds, in order; anything else throws an Error saying what. */
export function decodeObject(text: string, field: (key: string, value: JsonValue) => void): void {
  const v = parseJson(text);
  if (!(v instanceof Map)) throw new Error('not a JSON object');
  v.forEach((value, key) => field(key, value));
}

/** Throws "<what> must be <want>, not <the value as written>" unless ok. */
function expect(ok: boolean, v: JsonValue, what: string, want: string): void {
  if (ok) return;
  const text = v instanceof JsonNumber ? v.text : Array.isArray(v) ? '[…]' : v instanceof Map ? '{…}' : JSON.stringify(v);
  throw new Error(`${what} must be ${want}, not ${quoteShort(text)}`);
}

/** A string value, or throws. */
export function jsonString(v: JsonValue, what: string): string {
  expect(typeof v === 'string', v, what, 'a string');
  return v as string;
}

/** An array value, or throws. */
export function jsonArray(v: JsonValue, what: string): JsonValue[] {
  expect(Array.isArray(v), v, what, 'an array');
  return v as JsonValue[];
}

/** A JSON number written as an integer (no fraction, no exponent) within ±2^53, or throws. */
export function jsonInt(v: JsonValue, what: string): number {
  const n = v instanceof JsonNumber && /^-?[0-9]+$/.test(v.text) ? Number(v.text) : NaN;
  expect(Number.isSafeInteger(n), v, what, 'an integer');
  return n;
}

/** A JSON integer from 0 to 2^32-1, or throws. */
export function jsonUint32(v: JsonValue, what: string): number {
  const n = v instanceof JsonNumber && /^[0-9]+$/.test(v.text) ? Number(v.text) : NaN;
  expect(n <= 0xffffffff, v, what, 'an integer from 0 to 4294967295');
  return n;
}

/** Quotes a peer-supplied value for an error message, cut so a hostile payload cannot inflate a close reason. */
export function quoteShort(s: string): string {
  const cut = cutReason(s, 40);
  return cut === s ? "'" + s + "'" : "'" + cut + "…'";
}

/**
 * Cuts s to at most n bytes of UTF-8 without splitting a character (§3.3,
 * §10.2), as the Go runtime's CutReason.
 */
export function cutReason(s: string, n: number): string {
  const b = utf8Encode(s);
  if (b.length <= n) return s;
  let i = n;
  // Step back over continuation bytes (10xxxxxx) to a character start.
  while (i > 0 && ((b[i] as number) & 0xc0) === 0x80) i--;
  return utf8Decode(b.subarray(0, i));
}
