// The strict JSON reader behind the JSON control payloads (§4.1, §6.4,
// §6.5, §6.6). JSON.parse alone is too lenient for them: it keeps the last
// of two equal keys and cannot tell 1e0 from 1. This reader keeps every
// number's text and every object's members in order, as the Go runtime's
// strict readers do, so both runtimes refuse the same payloads.

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

/** Parses exactly one JSON value (white space around it allowed, nothing else). */
export function parseJson(text: string): JsonValue {
  const p = new Parser(text);
  p.space();
  const v = p.value(0);
  p.space();
  if (p.i !== text.length) throw new JsonSyntaxError('data after the JSON value');
  return v;
}

class Parser {
  i = 0;
  constructor(readonly s: string) {}

  space(): void {
    const s = this.s;
    while (this.i < s.length) {
      const c = s.charCodeAt(this.i);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
      this.i++;
    }
  }

  value(depth: number): JsonValue {
    if (depth > maxDepth) throw new JsonSyntaxError('nested too deeply');
    const c = this.s[this.i];
    switch (c) {
      case '{':
        return this.object(depth);
      case '[':
        return this.array(depth);
      case '"':
        return { kind: 'string', value: this.string() };
      case 't':
        return this.literal('true');
      case 'f':
        return this.literal('false');
      case 'n':
        return this.literal('null');
      case undefined:
        throw new JsonSyntaxError('unexpected end');
    }
    if (c === '-' || (c >= '0' && c <= '9')) return { kind: 'number', text: this.number() };
    throw new JsonSyntaxError(`invalid character '${c}'`);
  }

  object(depth: number): JsonValue {
    this.i++; // {
    const members: Array<readonly [string, JsonValue]> = [];
    this.space();
    if (this.s[this.i] === '}') {
      this.i++;
      return { kind: 'object', members };
    }
    for (;;) {
      this.space();
      if (this.s[this.i] !== '"') throw new JsonSyntaxError(this.i >= this.s.length ? 'unexpected end' : 'object key must be a string');
      const key = this.string();
      this.space();
      if (this.s[this.i] !== ':') throw new JsonSyntaxError(this.i >= this.s.length ? 'unexpected end' : "expected ':' after an object key");
      this.i++;
      this.space();
      members.push([key, this.value(depth + 1)]);
      this.space();
      const c = this.s[this.i++];
      if (c === '}') return { kind: 'object', members };
      if (c !== ',') throw new JsonSyntaxError(c === undefined ? 'unexpected end' : "expected ',' or '}' in an object");
    }
  }

  array(depth: number): JsonValue {
    this.i++; // [
    const items: JsonValue[] = [];
    this.space();
    if (this.s[this.i] === ']') {
      this.i++;
      return { kind: 'array', items };
    }
    for (;;) {
      this.space();
      items.push(this.value(depth + 1));
      this.space();
      const c = this.s[this.i++];
      if (c === ']') return { kind: 'array', items };
      if (c !== ',') throw new JsonSyntaxError(c === undefined ? 'unexpected end' : "expected ',' or ']' in an array");
    }
  }

  string(): string {
    const s = this.s;
    const start = this.i;
    this.i++; // opening quote
    let plain = true;
    for (;;) {
      if (this.i >= s.length) throw new JsonSyntaxError('unexpected end');
      const c = s.charCodeAt(this.i);
      if (c === 0x22) break;
      if (c < 0x20) throw new JsonSyntaxError('control character in a string');
      if (c === 0x5c) {
        plain = false;
        const e = s[this.i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(s.slice(this.i + 2, this.i + 6))) throw new JsonSyntaxError('invalid \\u escape');
          this.i += 6;
          continue;
        }
        if (e === undefined || '"\\/bfnrt'.indexOf(e) < 0) throw new JsonSyntaxError('invalid escape in a string');
        this.i += 2;
        continue;
      }
      this.i++;
    }
    this.i++; // closing quote
    const raw = s.slice(start, this.i);
    return plain ? raw.slice(1, -1) : (JSON.parse(raw) as string);
  }

  number(): string {
    const m = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/.exec(this.s.slice(this.i, this.i + 400));
    if (m === null) throw new JsonSyntaxError('invalid number');
    this.i += m[0].length;
    const next = this.s[this.i];
    if (next !== undefined && /[0-9.eE+-]/.test(next)) throw new JsonSyntaxError('invalid number');
    return m[0];
  }

  literal(word: 'true' | 'false' | 'null'): JsonValue {
    if (this.s.startsWith(word, this.i)) {
      this.i += word.length;
      return { kind: 'literal', text: word };
    }
    throw new JsonSyntaxError('invalid literal');
  }
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
  const limit = 40;
  if (utf8Length(s) > limit) return "'" + cutReason(s, limit) + "…'";
  return "'" + s + "'";
}

/** The length of s in UTF-8 bytes. */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/**
 * Cuts s to at most n bytes of UTF-8 without splitting a character (§3.3,
 * §10.2), as the Go runtime's CutReason.
 */
export function cutReason(s: string, n: number): string {
  let bytes = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let size: number;
    let units = 1;
    if (c < 0x80) size = 1;
    else if (c < 0x800) size = 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      size = 4;
      units = 2;
    } else size = 3;
    if (bytes + size > n) return s.slice(0, i);
    bytes += size;
    i += units - 1;
  }
  return s;
}
