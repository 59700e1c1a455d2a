// The helpers generated decoders and encoders call (src/typed.ts), on what
// the shared fixtures do not hold: values a TypeScript program can build but
// the contract's types cannot (so the encoder refuses them), the code point
// order of map keys, depth, and errors passing out through containers.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  MaxDepth,
  TransportError,
  ValidationError,
  byCodePoint,
  decodeBytes,
  decodeList,
  decodeMap,
  decodeRecord,
  decodeString,
  encodeBytes,
  encodeFloat64,
  encodeInt32,
  encodeInt64,
  encodeJson,
  encodeList,
  encodeMap,
  encodeString,
  encodeUint64,
  field,
} from '../src/index.js';

function refusal(f: () => unknown): ValidationError {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof ValidationError && e instanceof TransportError && e.code === 'WT_VALIDATION_FAILED', String(e));
    return e;
  }
  assert.fail('accepted');
}

test('§6.4 encoders refuse what the contract type cannot hold, in the Go wording', () => {
  assert.match(refusal(() => encodeFloat64(Number.NaN)).message, /^the payload must be a finite number, not 'NaN'$/);
  assert.match(refusal(() => encodeFloat64(Infinity)).message, /^the payload must be a finite number/);
  assert.match(refusal(() => encodeInt32(1.5)).message, /^the payload must be an integer from -2147483648 to 2147483647/);
  assert.match(refusal(() => encodeInt64(1n << 63n)).message, /^the payload must be an integer from -9223372036854775808 to 9223372036854775807 \(a decimal string\)/);
  assert.match(refusal(() => encodeUint64(-1n)).message, /^the payload must be an integer from 0 to 18446744073709551615/);
  assert.equal(refusal(() => encodeString('a\ud800')).rule, 'must not contain a lone surrogate');
  assert.equal(encodeFloat64(-0), '0');
  assert.equal(encodeInt64(-(1n << 63n)), '"-9223372036854775808"');
  assert.equal(encodeUint64((1n << 64n) - 1n), '"18446744073709551615"');
  assert.equal(encodeString('\u2028<&>\u0007😀'), '"\u2028<&>\\u0007😀"');
});

test('§6.4 a failure names its path as it passes out through lists and maps', () => {
  const e = refusal(() => encodeMap(encodeList(encodeInt32))({ a: [1], 'b.c': [1, 2.5] }));
  assert.equal(e.path, 'b.c[1]');
  assert.match(e.message, /^field 'b\.c\[1\]' must be an integer/);
  const d = refusal(() => decodeRecord({ tags: ['x', 5] }, (o) => ({ tags: field(o, 'tags', decodeList(decodeString)) })));
  assert.equal(d.path, 'tags[1]');
  assert.equal(d.message, "field 'tags[1]' must be a string, not '5'");
  assert.equal(refusal(() => decodeRecord({}, (o) => field(o, 'room', decodeString))).message, "field 'room' is required");
  // A peer's key may hold a URL: its query is never shown in the message (the path keeps the key as it is).
  const u = refusal(() => decodeMap(decodeString)({ 'wss://h/p?token=secret': 1 }));
  assert.equal(u.path, 'wss://h/p?token=secret');
  assert.doesNotMatch(u.message, /secret/);
});

test('§6.4 map keys are written in code point order, not UTF-16 unit order; __proto__ stays an own key', () => {
  const keys = ['\uffff', '😀', 'a', '', 'é'];
  assert.deepEqual([...keys].sort(byCodePoint), ['', 'a', 'é', '\uffff', '😀']);
  assert.deepEqual([...keys].sort(), ['', 'a', 'é', '😀', '\uffff'], 'the default sort differs');
  assert.equal(encodeMap(encodeString)({ '\uffff': 'x', '😀': 'y', '1': 'z', b: 'w' }), '{"1":"z","b":"w","\uffff":"x","😀":"y"}');
  assert.equal(encodeJson({ b: [1, { d: null, c: true }], a: -0 }), '{"a":0,"b":[1,{"c":true,"d":null}]}');
  const m = decodeMap(decodeString)(JSON.parse('{"__proto__":"p","x":"y"}'));
  assert.ok(Object.hasOwn(m, '__proto__'));
  assert.equal(Object.getPrototypeOf(m), Object.prototype);
  assert.equal(encodeMap(encodeString)(m), '{"__proto__":"p","x":"y"}');
});

test('§6.4 nesting: 512 levels decode, the 513th container is refused at its own path', () => {
  const nested = (n: number): unknown => (n === 0 ? [] : [nested(n - 1)]);
  const deep = (): ((v: unknown) => unknown) => (v) => decodeList(deep())(v);
  assert.doesNotThrow(() => deep()(nested(MaxDepth - 1)));
  const e = refusal(() => deep()(nested(MaxDepth)));
  assert.equal(e.rule, `nests deeper than ${MaxDepth} levels`);
  assert.equal(e.path, '[0]'.repeat(MaxDepth));
  assert.doesNotThrow(() => deep()(nested(3)), 'the depth count is back to 0 after a failure');
});

test('§6.4 bytes: strict standard padded base64 both ways', () => {
  assert.deepEqual([...decodeBytes('AAE=')], [0, 1]);
  assert.equal(encodeBytes(new Uint8Array([0, 1, 255])), '"AAH/"');
  assert.equal(encodeBytes(new Uint8Array(0)), '""');
  for (const bad of ['AB==', 'AAF=', 'AA', 'AA=', 'A A=', 'AA-_', 'AAE=\n']) assert.equal(refusal(() => decodeBytes(bad)).rule, 'must be standard padded base64', bad);
  const big = new Uint8Array(100_000).map((_, i) => i % 251);
  assert.deepEqual(decodeBytes(JSON.parse(encodeBytes(big))), big);
});
