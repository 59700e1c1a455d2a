// What generated code calls to decode and encode a contract's values: the
// TypeScript side of the Go runtime's runtime/typed, with the same rules
// and the same wording, so both sides refuse the same inputs naming the
// same field ("field 'replyTo.mood' must be one of 'happy', 'sad', 'angry',
// not 'glad'"). A decoder takes the value JSON.parse gave and returns the
// typed value (bigint, Uint8Array, maps as own keys); an encoder returns the
// canonical JSON text the runtime sends as it is. Nothing here is used by
// the Client itself, so a bundle without generated code drops all of it.

import type { ClientOptions } from './client.js';
import { TransportError, redactQueries } from './errors.js';
import { compareCodePoints } from './wire/handshake.js';

/** Reads a value JSON.parse gave as a T, or throws a ValidationError. */
export type Decoder<T> = (value: unknown) => T;
/** Writes a T as canonical JSON text, or throws a ValidationError. */
export type Encoder<T> = (value: T) => string;

/** Nesting deeper than this many objects and arrays is refused, as the Go runtime's typed.MaxDepth. */
export const MaxDepth = 512;

/**
 * A value that does not fit its contract type: WT_VALIDATION_FAILED (§6.4)
 * with the field path, as the Go runtime words it: "field 'tags[2]' must
 * be a string, not 5", or "the payload must be …" when the slot itself is
 * wrong. `path` is '' then; `rule` is what the value must be.
 */
export class ValidationError extends TransportError {
  /** Innermost first: 'mood', '.replyTo'; joined outermost first on output. */
  readonly #segs: string[] = [];
  readonly rule: string;
  readonly #shown: string;

  constructor(rule: string, shown: string) {
    super('WT_VALIDATION_FAILED', render([], rule, shown));
    this.rule = rule;
    this.#shown = shown;
  }

  override name = 'ValidationError';

  /** The field path: keys joined by '.', list indexes as [i]; '' for the payload itself. */
  get path(): string {
    return joinPath(this.#segs);
  }

  /** Records that the failure is inside seg ('.key' or '[i]') as it passes out through it. */
  within(seg: string): this {
    this.#segs.push(seg);
    // As the constructor's message: a key may hold a URL, whose query is not shown.
    this.message = redactQueries(render(this.#segs, this.rule, this.#shown));
    return this;
  }
}

function joinPath(segs: readonly string[]): string {
  let p = '';
  for (let i = segs.length - 1; i >= 0; i--) p += segs[i];
  return p.startsWith('.') ? p.slice(1) : p;
}

function render(segs: readonly string[], rule: string, shown: string): string {
  const p = joinPath(segs);
  const what = p === '' ? 'the payload ' : `field '${p}' `;
  return what + rule + (shown === '' ? '' : ', not ' + shown);
}

function fail(rule: string, v: unknown): never {
  throw new ValidationError(rule, show(v));
}

/** Fails with a rule that shows no value ("is required"). */
function failBare(rule: string): never {
  throw new ValidationError(rule, '');
}

/** The value as a short phrase for a message, cut so a hostile payload cannot inflate it. */
function show(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  switch (typeof v) {
    case 'object':
      return 'an object';
    case 'string':
      return v.length > 40 ? `'${v.slice(0, 40)}…'` : `'${v}'`;
    case 'boolean':
      return 'a boolean';
    case 'number':
    case 'bigint':
      return `'${String(v)}'`;
    case 'undefined':
      return 'nothing';
  }
  return 'a ' + typeof v;
}

/**
 * Runs each over the keys of one object in their order; once one throws a
 * ValidationError, over the rest that sort before it, so that of several
 * members refused the one named is the first by code point order of the
 * keys (the order the canonical form writes), as the Go runtime names it:
 * JSON.parse has lost the order the payload sent them in
 * (docs/contract-language.md).
 */
function eachKey(keys: string[], each: (k: string) => void): void {
  let i = 0;
  try {
    for (; i < keys.length; i++) each(keys[i] as string);
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    // The keys before the one refused were read; of those after it, only
    // one that sorts before the first refused so far can change which.
    let first = keys[i] as string;
    let failure = e;
    for (const k of keys.slice(i + 1)) {
      if (byCodePoint(k, first) >= 0) continue;
      try {
        each(k);
      } catch (f) {
        if (!(f instanceof ValidationError)) throw f;
        first = k;
        failure = f;
      }
    }
    throw failure;
  }
}

/** Adds seg to a ValidationError passing out through it; other errors pass unchanged. */
function within(e: unknown, seg: string): unknown {
  return e instanceof ValidationError ? e.within(seg) : e;
}

// Objects and arrays open so far in the value being decoded or encoded.
let depth = 0;

function nest<T>(f: () => T): T {
  if (depth >= MaxDepth) failBare(`nests deeper than ${MaxDepth} levels`);
  depth++;
  try {
    return f();
  } finally {
    depth--;
  }
}

// ---- decoding -------------------------------------------------------

const hasOwn = Object.prototype.hasOwnProperty;
// A lone surrogate: one of a pair without the other (I-JSON, RFC 7493 §2.1).
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** A JSON boolean. */
export const decodeBool: Decoder<boolean> = (v) => (typeof v === 'boolean' ? v : fail('must be a boolean', v));

/** A JSON string without lone surrogates. */
export const decodeString: Decoder<string> = (v) => {
  if (typeof v !== 'string') fail('must be a string', v);
  noLoneSurrogate(v);
  return v;
};

function noLoneSurrogate(s: string): void {
  if (loneSurrogate.test(s)) failBare('must not contain a lone surrogate');
}

const int32Range = 'must be an integer from -2147483648 to 2147483647';
const uint32Range = 'must be an integer from 0 to 4294967295';
const int64Range = 'must be an integer from -9223372036854775808 to 9223372036854775807 (a decimal string)';
const uint64Range = 'must be an integer from 0 to 18446744073709551615 (a decimal string)';
// A JSON number beyond 2^53-1 may have lost precision in any JSON.parse (I-JSON, RFC 7493 §2.2).
const int64Number = 'must be an integer from -9007199254740991 to 9007199254740991 when sent as a JSON number; send a decimal string for any other int64';
const uint64Number = 'must be an integer from 0 to 9007199254740991 when sent as a JSON number; send a decimal string for any other uint64';

function int32(v: unknown, lo: number, hi: number, rule: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) fail(rule, v);
  // JSON.parse reads -0 as -0; an integer has no sign of zero.
  return v === 0 ? 0 : v;
}

/** A JSON number with an integral value from -2^31 to 2^31-1. */
export const decodeInt32: Decoder<number> = (v) => int32(v, -0x80000000, 0x7fffffff, int32Range);
/** A JSON number with an integral value from 0 to 2^32-1. */
export const decodeUint32: Decoder<number> = (v) => int32(v, 0, 0xffffffff, uint32Range);

// A decimal string as the JSON grammar writes integers: no '+', no leading zeros.
const decimal = /^-?(?:0|[1-9][0-9]*)$/;

function int64(v: unknown, lo: bigint, hi: bigint, rule: string, numberRule: string): bigint {
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v) || BigInt(v) < lo) fail(numberRule, v);
    return BigInt(v);
  }
  if (typeof v !== 'string' || !decimal.test(v)) fail(rule, v);
  const n = BigInt(v);
  if (n < lo || n > hi) fail(rule, v);
  return n;
}

/** A decimal string ("-12") from -2^63 to 2^63-1, or a JSON number with an integral value within ±(2^53-1). */
export const decodeInt64: Decoder<bigint> = (v) => int64(v, -(1n << 63n), (1n << 63n) - 1n, int64Range, int64Number);
/** A decimal string from 0 to 2^64-1, or a JSON number with an integral value from 0 to 2^53-1. */
export const decodeUint64: Decoder<bigint> = (v) => int64(v, 0n, (1n << 64n) - 1n, uint64Range, uint64Number);

/** A finite JSON number; JSON.parse gives Infinity for 1e400, which is refused. */
export const decodeFloat64: Decoder<number> = (v) => {
  if (typeof v !== 'number') fail('must be a number', v);
  if (!Number.isFinite(v)) fail('must be a number within the range of float64', v);
  return v;
};

// Padded, and the bits the padding leaves over are zero (RFC 4648 §3.5: "AB==" is refused, "AA==" is not).
const base64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?$/;

/** Standard padded base64 (RFC 4648 §4) in a JSON string, strictly: nothing outside the alphabet, zero pad bits. */
export const decodeBytes: Decoder<Uint8Array> = (v) => {
  if (typeof v !== 'string') fail('must be a base64 string', v);
  if (!base64.test(v)) fail('must be standard padded base64', v);
  const s = atob(v);
  const b = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) b[i] = s.charCodeAt(i);
  return b;
};

/** A JSON value of any kind. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Any JSON value, checked for depth and lone surrogates, kept as JSON.parse gave it. */
export const decodeJson: Decoder<JsonValue> = (v) => {
  check(v);
  return v as JsonValue;
};

function check(v: unknown): void {
  if (typeof v === 'string') {
    decodeString(v);
  } else if (Array.isArray(v)) {
    nest(() => {
      for (let i = 0; i < v.length; i++) {
        try {
          check(v[i]);
        } catch (e) {
          throw within(e, `[${i}]`);
        }
      }
    });
  } else if (typeof v === 'object' && v !== null) {
    nest(() => {
      eachKey(Object.keys(v), (k) => {
        // A bad key is reported at the object's path: the key is not a path segment.
        noLoneSurrogate(k);
        try {
          check((v as Record<string, unknown>)[k]);
        } catch (e) {
          throw within(e, '.' + k);
        }
      });
    });
  } else if (typeof v === 'number' && !Number.isFinite(v)) {
    fail('must be a number within the range of float64', v);
  }
}

/** A JSON array of elements read by elem. */
export function decodeList<T>(elem: Decoder<T>): Decoder<T[]> {
  return (v) => {
    if (!Array.isArray(v)) fail('must be an array', v);
    return nest(() => {
      const out = new Array<T>(v.length);
      for (let i = 0; i < v.length; i++) {
        try {
          out[i] = elem(v[i]);
        } catch (e) {
          throw within(e, `[${i}]`);
        }
      }
      return out;
    });
  };
}

/** A JSON object of values read by elem; every key, "__proto__" too, is an own key of a plain object. */
export function decodeMap<T>(elem: Decoder<T>): Decoder<Record<string, T>> {
  return (v) => {
    const o = object(v);
    return nest(() => {
      const out: Record<string, T> = {};
      eachKey(Object.keys(o), (k) => {
        noLoneSurrogate(k); // at the map's path, as the key is no path segment
        let x: T;
        try {
          x = elem(o[k]);
        } catch (e) {
          throw within(e, '.' + k);
        }
        if (k === '__proto__') Object.defineProperty(out, k, { value: x, enumerable: true, writable: true, configurable: true });
        else out[k] = x;
      });
      return out;
    });
  };
}

/** One of an enum's values. */
export function decodeEnum<T extends string>(values: readonly T[]): Decoder<T> {
  const rule = 'must be ' + enumWant(values);
  return (v) => (values.includes(v as T) ? (v as T) : fail(rule, v));
}

function enumWant(values: readonly string[]): string {
  return 'one of ' + values.map((v) => `'${v}'`).join(', ');
}

function object(v: unknown): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) fail('must be an object', v);
  return v as Record<string, unknown>;
}

// How many of the keys the record being read looks up it has: fewer than
// its keys means it has unknown keys.
let present = 0;
// The key of the last member refused (or required field missing): when a
// record's read fails, its own.
let failedKey = '';
// The fields of a record, while its read runs only to list them (fieldsOf).
let listing: Map<string, { dec: Decoder<unknown>; optional: boolean }> | undefined;

/**
 * Reads a record: the object's own keys, with the fields read by read,
 * inside one more level of nesting. read calls field and optionalField.
 * Unknown keys are not read, but their values count their levels of
 * nesting as the Go runtime's skipping them does. When something is
 * refused, the one named is the member refused first by code point order
 * of the keys (eachKey), or else the first required field missing.
 */
export function decodeRecord<T>(v: unknown, read: (o: Record<string, unknown>) => T): T {
  const o = object(v);
  return nest(() => {
    const outer = present;
    present = 0;
    try {
      const out = read(o);
      const keys = Object.keys(o);
      if (present < keys.length) {
        const fields = fieldsOf(o, read);
        eachKey(keys, (k) => {
          if (!fields.has(k)) readMember(k, o[k], deep);
        });
      }
      return out;
    } catch (e) {
      if (!(e instanceof ValidationError)) throw e;
      // Every member that sorts before the one refused is read (again):
      // the first refused in that order is named, else e, which is that
      // member's failure or the first required field missing.
      const refused = failedKey;
      const fields = fieldsOf(o, read);
      for (const k of Object.keys(o).sort(byCodePoint)) {
        if (k === refused) break;
        const f = fields.get(k);
        const x = o[k];
        if (f === undefined) readMember(k, x, deep);
        else if (!(f.optional && x === null)) readMember(k, x, f.dec);
      }
      throw e;
    } finally {
      present = outer;
    }
  });
}

/** The fields read looks up, by key: read runs without decoding anything. */
function fieldsOf<T>(o: Record<string, unknown>, read: (o: Record<string, unknown>) => T): NonNullable<typeof listing> {
  const fields: NonNullable<typeof listing> = new Map();
  listing = fields;
  try {
    read(o);
  } finally {
    listing = undefined;
  }
  return fields;
}

/** Reads a member's value with dec, its failure within the key. */
function readMember(key: string, x: unknown, dec: (v: unknown) => unknown): void {
  try {
    dec(x);
  } catch (e) {
    failedKey = key;
    throw within(e, '.' + key);
  }
}

/** Checks only how deeply a value nests (an unknown key's). */
function deep(v: unknown): void {
  if (typeof v !== 'object' || v === null) return;
  nest(() => {
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        try {
          deep(v[i]);
        } catch (e) {
          throw within(e, `[${i}]`);
        }
      }
    } else {
      eachKey(Object.keys(v), (k) => readMember(k, (v as Record<string, unknown>)[k], deep));
    }
  });
}

/** A required field: "is required" when absent; null is a value (and refused unless json). */
export function field<T>(o: Record<string, unknown>, key: string, dec: Decoder<T>): T {
  if (listing) {
    listing.set(key, { dec, optional: false });
    return undefined as T;
  }
  try {
    if (!hasOwn.call(o, key)) failBare('is required');
    present++;
    return dec(o[key]);
  } catch (e) {
    failedKey = key;
    throw within(e, '.' + key);
  }
}

/** An optional field: set on into as prop when present; absent or null leaves prop absent. */
export function optionalField<R, K extends keyof R>(into: R, prop: K, o: Record<string, unknown>, key: string, dec: Decoder<Exclude<R[K], undefined>>): void {
  if (listing) {
    listing.set(key, { dec, optional: true });
    return;
  }
  if (!hasOwn.call(o, key)) return;
  present++;
  const x = o[key];
  if (x === undefined || x === null) return;
  try {
    into[prop] = dec(x);
  } catch (e) {
    failedKey = key;
    throw within(e, '.' + key);
  }
}

// ---- encoding -------------------------------------------------------

/** A boolean as JSON. */
export const encodeBool: Encoder<boolean> = (v) => (v === true ? 'true' : v === false ? 'false' : fail('must be a boolean', v));

/** A string as JSON.stringify writes it; a lone surrogate is refused. */
export const encodeString: Encoder<string> = (v) => JSON.stringify(decodeString(v));

/** An int32 as a JSON number. */
export const encodeInt32: Encoder<number> = (v) => String(decodeInt32(v));
/** A uint32 as a JSON number. */
export const encodeUint32: Encoder<number> = (v) => String(decodeUint32(v));

function bigInt(v: bigint, lo: bigint, hi: bigint, rule: string): string {
  if (typeof v !== 'bigint' || v < lo || v > hi) fail(rule, v);
  return '"' + v.toString() + '"';
}

/** An int64 as a decimal string. */
export const encodeInt64: Encoder<bigint> = (v) => bigInt(v, -(1n << 63n), (1n << 63n) - 1n, int64Range);
/** A uint64 as a decimal string. */
export const encodeUint64: Encoder<bigint> = (v) => bigInt(v, 0n, (1n << 64n) - 1n, uint64Range);

/** A finite number as JSON.stringify writes it (-0 as 0); NaN and infinities are refused. */
export const encodeFloat64: Encoder<number> = (v) => {
  if (typeof v !== 'number') fail('must be a number', v);
  if (!Number.isFinite(v)) fail('must be a finite number', v);
  return JSON.stringify(v);
};

/** Bytes as standard padded base64 in a JSON string. */
export const encodeBytes: Encoder<Uint8Array> = (v) => {
  if (!(v instanceof Uint8Array)) fail('must be a Uint8Array', v);
  let s = '';
  for (let i = 0; i < v.length; i += 0x8000) s += String.fromCharCode(...v.subarray(i, i + 0x8000));
  return '"' + btoa(s) + '"';
};

/**
 * A JSON value in canonical form: compact, object members sorted by code
 * point of the key (as maps), numbers and strings as JSON.stringify writes
 * them; depth, lone surrogates and non-finite numbers are refused.
 */
export const encodeJson: Encoder<JsonValue> = (v) => {
  if (Array.isArray(v)) return encodeList(encodeJson)(v);
  if (typeof v === 'object' && v !== null) return encodeMap(encodeJson)(v);
  if (typeof v === 'string') return encodeString(v);
  if (typeof v === 'number') return encodeFloat64(v);
  if (v === null || typeof v === 'boolean') return String(v);
  return fail('must be a JSON value', v);
};

/** An array of elements written by elem. */
export function encodeList<T>(elem: Encoder<T>): Encoder<T[]> {
  return (v) => {
    if (!Array.isArray(v)) fail('must be an array', v);
    return nest(() => {
      let s = '[';
      for (let i = 0; i < v.length; i++) {
        try {
          s += (i === 0 ? '' : ',') + elem(v[i] as T);
        } catch (e) {
          throw within(e, `[${i}]`);
        }
      }
      return s + ']';
    });
  };
}

/** An object with its keys sorted by Unicode code point (as the Go runtime sorts UTF-8 bytes), values written by elem. */
export function encodeMap<T>(elem: Encoder<T>): Encoder<Record<string, T>> {
  return (v) => {
    const o = object(v);
    return nest(() => {
      let s = '{';
      const keys = Object.keys(o).sort(byCodePoint);
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i] as string;
        try {
          s += (i === 0 ? '' : ',') + encodeString(k) + ':' + elem(o[k] as T);
        } catch (e) {
          throw within(e, '.' + k);
        }
      }
      return s + '}';
    });
  };
}

/** Orders strings by code point (map keys, §6.4): the handshake's comparison (§4.3). */
export const byCodePoint: (a: string, b: string) => number = compareCodePoints;

/** One of an enum's values, as a JSON string. */
export function encodeEnum<T extends string>(values: readonly T[]): Encoder<T> {
  const rule = 'must be ' + enumWant(values);
  return (v) => (values.includes(v) ? '"' + v + '"' : fail(rule, v));
}

/**
 * Writes a record: write returns its members' text in declaration order
 * (members of member and optionalMember).
 */
export function encodeRecord<T>(v: T, write: (v: T) => string): string {
  object(v);
  return nest(() => '{' + write(v) + '}');
}

/** A required member of a record, "key":value; a value missing (undefined) is refused. */
export function member<T>(key: string, x: T, enc: Encoder<T>): string {
  try {
    if (x === undefined) failBare('is required');
    // A field's key is a contract identifier: nothing in it needs escaping.
    return '"' + key + '":' + enc(x);
  } catch (e) {
    throw within(e, '.' + key);
  }
}

/** An optional member of a record: '' when absent (undefined), else "key":value. */
export function optionalMember<T>(key: string, x: T | undefined, enc: Encoder<T>): string {
  return x === undefined ? '' : member(key, x, enc);
}

/** Joins the members of a record, skipping the absent ones. */
export function members(...parts: string[]): string {
  let s = '';
  for (const p of parts) if (p !== '') s += (s === '' ? '' : ',') + p;
  return s;
}

/**
 * The options of a generated client factory (createChatClient): the
 * Client's options without the contract, which the generated file brings.
 * Only a runtime that supports generated code of this version exports this
 * name, and every generated file uses it, so a runtime older than the
 * generator fails at compile time, not at run time; the generator moves to
 * a new name when its code needs a newer runtime.
 */
export type GeneratedClientOptionsV1 = Omit<ClientOptions, 'contract'>;
