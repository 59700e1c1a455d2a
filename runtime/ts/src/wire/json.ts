// The strict JSON reader behind the JSON control payloads (§4.1, §6.4,
// §6.5, §6.6). JSON.parse alone is too lenient for them: it keeps the last
// of two equal keys and cannot tell 1e0 from 1. This reader keeps every
// number's text and every object's members in order, as the Go runtime's
// strict readers do, so both runtimes refuse the same payloads.

import { utf8Decode, utf8Encode } from './utf8.js';

/** A parsed JSON value: numbers keep their text, objects their members in order. */
export type JsonValue =
  | { readonly kind: 'object'; readonly members: ReadonlyArray<readonly [string, JsonValue]> }
  | { readonly kind: 'array'; readonly items: readonly JsonValue[] }
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'number'; readonly text: string }
  | { readonly kind: 'literal'; readonly text: 'true' | 'false' | 'null' };

/** Why a text is not one JSON value: thrown by parseJson. */
export class JsonSyntaxError extends Error {}

// A control payload is small; nesting deeper than this is hostile.
const maxDepth = 64;

// One JSON token after optional white space: a string, a number (its text
// kept), a literal, or a structural character.
const tokenRe = /[ \t\n\r]*(?:("(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*")|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)|(true|false|null)|([{}[\],:]))/y;

/** Parses exactly one JSON value (white space around it allowed, nothing else). */
export function parseJson(text: string): JsonValue {
  let i = 0;
  const next = (): RegExpExecArray => {
    tokenRe.lastIndex = i;
    const m = tokenRe.exec(text);
    if (m === null) throw new JsonSyntaxError(/^[ \t\n\r]*$/.test(text.slice(i)) ? 'unexpected end' : `invalid character at offset ${i}`);
    i = tokenRe.lastIndex;
    return m;
  };
  const value = (depth: number, m: RegExpExecArray): JsonValue => {
    if (m[1] !== undefined) return { kind: 'string', value: JSON.parse(m[1]) as string };
    if (m[2] !== undefined) return { kind: 'number', text: m[2] };
    if (m[3] !== undefined) return { kind: 'literal', text: m[3] as 'true' | 'false' | 'null' };
    if (depth > maxDepth) throw new JsonSyntaxError('nested too deeply');
    const close = m[4] === '{' ? '}' : m[4] === '[' ? ']' : undefined;
    if (close === undefined) throw new JsonSyntaxError(`unexpected '${m[4]}'`);
    const members: Array<readonly [string, JsonValue]> = [];
    const items: JsonValue[] = [];
    let t = next();
    if (t[4] !== close) {
      for (;;) {
        if (close === '}') {
          if (t[1] === undefined) throw new JsonSyntaxError('object key must be a string');
          if (next()[4] !== ':') throw new JsonSyntaxError("expected ':' after an object key");
          members.push([JSON.parse(t[1]) as string, value(depth + 1, next())]);
        } else {
          items.push(value(depth + 1, t));
        }
        t = next();
        if (t[4] === close) break;
        if (t[4] !== ',') throw new JsonSyntaxError(`expected ',' or '${close}'`);
        t = next();
      }
    }
    return close === '}' ? { kind: 'object', members } : { kind: 'array', items };
  };
  const v = value(0, next());
  if (!/^[ \t\n\r]*$/.test(text.slice(i))) throw new JsonSyntaxError('data after the JSON value');
  return v;
}

/**
 * Calls field once per member of the one JSON object text holds, in order.
 * A key given twice, a non-object or anything after the object throws an
 * Error whose message says which (the Go runtime's decodeObject wording).
 */
export function decodeObject(text: string, field: (key: string, value: JsonValue) => void): void {
  let v: JsonValue;
  try {
    v = parseJson(text);
  } catch (e) {
    if (e instanceof JsonSyntaxError) {
      // A complete first value with something after it is "data after".
      if (e.message === 'data after the JSON value') throw new Error('data after the JSON object');
      throw new Error('not valid JSON: ' + e.message);
    }
    throw e;
  }
  if (v.kind !== 'object') throw new Error('not a JSON object');
  const seen = new Set<string>();
  for (const [key, value] of v.members) {
    if (seen.has(key)) throw new Error(`field ${quoteShort(key)} appears twice`);
    seen.add(key);
    field(key, value);
  }
}

/** The text of a value as it appeared, for error messages. */
export function rawText(v: JsonValue): string {
  switch (v.kind) {
    case 'number':
    case 'literal':
      return v.text;
    case 'string':
      return JSON.stringify(v.value);
    case 'array':
      return '[…]';
    case 'object':
      return '{…}';
  }
}

/** A string value, or throws "must be a string, not X". */
export function jsonString(v: JsonValue): string {
  if (v.kind !== 'string') throw new Error(`must be a string, not ${quoteShort(rawText(v))}`);
  return v.value;
}

/** An array value, or throws "must be an array, not X". */
export function jsonArray(v: JsonValue): readonly JsonValue[] {
  if (v.kind !== 'array') throw new Error(`must be an array, not ${quoteShort(rawText(v))}`);
  return v.items;
}

/** A JSON number written as an integer (no fraction, no exponent) within ±2^53. */
export function jsonInt(v: JsonValue): number {
  if (v.kind !== 'number' || !/^-?[0-9]+$/.test(v.text) || !Number.isSafeInteger(Number(v.text))) {
    throw new Error(`must be an integer, not ${quoteShort(rawText(v))}`);
  }
  return Number(v.text);
}

/** A JSON integer from 0 to 2^32-1. */
export function jsonUint32(v: JsonValue): number {
  if (v.kind === 'number' && /^[0-9]+$/.test(v.text)) {
    const n = Number(v.text);
    if (n <= 0xffffffff) return n;
  }
  throw new Error(`must be an integer from 0 to 4294967295, not ${quoteShort(rawText(v))}`);
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
