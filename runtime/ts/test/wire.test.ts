// The codec against the shared golden vectors (testdata/wire/vectors.json,
// read at test time so a vector added later is covered), byte for byte in
// both directions, and the decoder fed in every chunking.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import {
  Codec,
  FrameDecoder,
  FrameType,
  MaxCallPayload,
  compareTables,
  cutReason,
  decodeHandshake,
  encodeCallError,
  encodeCredit,
  encodeDatagram,
  encodeFrame,
  encodeHandshake,
  encodeRoom,
  maxDatagramPayload,
  negotiateFeatures,
  nextSeq,
  parseCallError,
  parseCredit,
  parseDatagram,
  parseRoom,
  seqNewer,
  utf8Encode,
  type Frame,
  type Lane,
} from '../src/wire/index.js';
import { utf8Into } from '../src/wire/utf8.js';
import { TransportError } from '../src/errors.js';
import { sessionCodeFromWebSocket, webSocketCloseCode } from '../src/codes.js';

interface Vectors {
  frames: Array<{ name: string; type: number; codec: number; eventId: number; payloadHex: string; payloadRepeat?: { hex: string; count: number }; hex: string }>;
  invalidFrames: Array<{ name: string; hex: string; code: string }>;
  truncatedFrames: Array<{ name: string; hex: string; error: 'EOF' | 'UnexpectedEOF' }>;
  datagrams: Array<{ name: string; codec: number; eventId: number; origin: number; seq: number; payloadHex: string; hex: string }>;
  invalidDatagrams: Array<{ name: string; hex: string; code: string }>;
  handshakes: Array<{ name: string; json: string; encodes: boolean; v: number; feat: string[]; events: Array<[string, number, Lane]> }>;
  invalidHandshakes: Array<{ name: string; json: string; code: string }>;
  webSocketCloseCodes: Array<{ sessionCode: number; webSocket: number }>;
}

const vectorsPath = fileURLToPath(new URL('../../../testdata/wire/vectors.json', import.meta.url));
const vectors = JSON.parse(readFileSync(vectorsPath, 'utf8')) as Vectors;

function unhex(s: string): Uint8Array {
  return Uint8Array.from(s.match(/../g) ?? [], (h) => parseInt(h, 16));
}

function repeat(b: Uint8Array, count: number): Uint8Array {
  const out = new Uint8Array(b.length * count);
  for (let i = 0; i < count; i++) out.set(b, i * b.length);
  return out;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** Decodes all of b pushed in chunks of the given size; returns the frames and whether the end was clean. */
function decodeAll(b: Uint8Array, chunk: number): { frames: Frame[]; clean: boolean } {
  const d = new FrameDecoder();
  const frames: Frame[] = [];
  for (let i = 0; i < b.length; i += chunk) {
    d.push(b.slice(i, i + chunk));
    for (let f = d.next(); f !== undefined; f = d.next()) frames.push(f);
  }
  return { frames, clean: d.empty };
}

function payloadOf(v: Vectors['frames'][number]): Uint8Array {
  const p = unhex(v.payloadHex);
  return v.payloadRepeat ? concat(p, repeat(unhex(v.payloadRepeat.hex), v.payloadRepeat.count)) : p;
}

function codeOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (e instanceof TransportError) return e.code;
    throw e;
  }
  return 'accepted';
}

test('§5 the vector file has every section', () => {
  assert.ok(vectors.frames.length > 0 && vectors.invalidFrames.length > 0 && vectors.datagrams.length > 0 && vectors.handshakes.length > 0);
});

test('§5 golden frames encode and decode byte-identically', async (t) => {
  const seen = new Set<number>();
  for (const v of vectors.frames) {
    await t.test(v.name, () => {
      const payload = payloadOf(v);
      const want = v.payloadRepeat ? concat(unhex(v.hex), payload) : unhex(v.hex);
      assert.deepEqual(encodeFrame(v.type, v.codec, v.eventId, payload), want);
      for (const chunk of [want.length, 4096, 7, 1]) {
        if (chunk === 1 && want.length > 1 << 16) continue; // the byte-at-a-time case below covers a cap-sized one
        const { frames, clean } = decodeAll(want, chunk);
        assert.equal(frames.length, 1, `chunk ${chunk}`);
        const f = frames[0] as Frame;
        assert.equal(f.type, v.type);
        assert.equal(f.codec, v.codec);
        assert.equal(f.eventId, v.eventId);
        assert.deepEqual(f.payload, payload);
        assert.ok(clean);
      }
      seen.add(v.type);
    });
  }
  for (let t = FrameType.HANDSHAKE; t <= FrameType.DATAGRAM; t++) assert.ok(seen.has(t), `no golden vector for type ${t}`);
});

test('§5 every golden frame in one stream, fed one byte at a time', () => {
  const small = vectors.frames.filter((v) => !v.payloadRepeat);
  const stream = concat(...small.map((v) => unhex(v.hex)));
  const { frames, clean } = decodeAll(stream, 1);
  assert.equal(frames.length, small.length);
  frames.forEach((f, i) => assert.deepEqual(f.payload, unhex((small[i] as Vectors['frames'][number]).payloadHex)));
  assert.ok(clean);
});

/**
 * Runs fn and returns the length of every Uint8Array constructed while it
 * runs (views made by subarray excluded): what a decoder allocated to hold
 * bytes, the largest being the most it held at once.
 */
function allocations(fn: () => void): number[] {
  const lengths: number[] = [];
  const Real = globalThis.Uint8Array;
  class Spy extends Real {
    constructor(...args: ConstructorParameters<typeof Uint8Array>) {
      super(...args);
      lengths.push(this.length);
    }
  }
  Object.defineProperty(globalThis, 'Uint8Array', { value: Spy, configurable: true, writable: true });
  try {
    fn();
  } finally {
    Object.defineProperty(globalThis, 'Uint8Array', { value: Real, configurable: true, writable: true });
  }
  return lengths;
}

test('§5.1 a cap-sized call frame fed one byte at a time decodes, holding no more than the frame', () => {
  const payload = new Uint8Array(1 << 20).fill(0x61);
  const b = encodeFrame(FrameType.CALL_RESPONSE, Codec.BYTES, 0, payload);
  const d = new FrameDecoder();
  let got: Frame | undefined;
  const held = allocations(() => {
    for (let i = 0; i < b.length; i++) {
      d.push(b.subarray(i, i + 1));
      const f = d.next();
      if (f !== undefined) got = f;
    }
  });
  assert.ok(got);
  // A copy: the payload is a view of a buffer the spy constructed.
  assert.deepEqual(Uint8Array.from(got.payload), payload);
  assert.ok(held.length, 'the decoder joined the chunks into buffers of its own');
  const most = Math.max(...held);
  assert.ok(most <= b.length, `held ${most} bytes for a ${b.length}-byte frame`);
});

test('§5.1 a header claiming 16 MiB followed by 2 bytes, one at a time, holds 64 KiB, not 16 MiB', () => {
  const d = new FrameDecoder();
  const held = allocations(() => {
    d.push(unhex('010000080402000000000000'));
    assert.equal(d.next(), undefined);
    // The second byte is joined to the first in a buffer of the decoder's own.
    d.push(new Uint8Array(1));
    assert.equal(d.next(), undefined);
    d.push(new Uint8Array(1));
    assert.equal(d.next(), undefined);
  });
  assert.ok(held.length, 'the decoder joined the bytes into a buffer of its own');
  assert.ok(held.every((n) => n <= 64 << 10), `holds ${held.join(', ')}`);
  assert.ok(!d.empty);
});

test('§5 golden invalid frames carry the code the Go side gives, whole or byte at a time', async (t) => {
  for (const v of vectors.invalidFrames) {
    await t.test(v.name, () => {
      for (const chunk of [1 << 20, 1]) {
        const b = unhex(v.hex);
        const d = new FrameDecoder();
        const code = codeOf(() => {
          for (let i = 0; i < b.length; i += chunk) {
            d.push(b.slice(i, i + chunk));
            while (d.next() !== undefined);
          }
        });
        assert.equal(code, v.code, `chunk ${chunk}`);
        // Again: the header that failed is still held, and judged alike.
        assert.equal(codeOf(() => d.next()), v.code);
      }
    });
  }
});

test('§5 golden truncated frames end cleanly only between frames', async (t) => {
  for (const v of vectors.truncatedFrames) {
    await t.test(v.name, () => {
      const { frames, clean } = decodeAll(unhex(v.hex), 1);
      assert.equal(frames.length, 0);
      assert.equal(clean, v.error === 'EOF');
    });
  }
});

test('§5.1–§5.4 the encoder refuses what a receiver must reject', () => {
  assert.equal(codeOf(() => encodeFrame(FrameType.EMIT, Codec.JSON, 1, new Uint8Array(0))), 'WT_PROTOCOL_ERROR');
  assert.equal(codeOf(() => encodeFrame(0x0a, Codec.JSON, 0, new Uint8Array(1))), 'WT_PROTOCOL_ERROR');
  assert.equal(codeOf(() => encodeFrame(FrameType.EMIT, 3, 1, new Uint8Array(1))), 'WT_UNSUPPORTED_CODEC');
  assert.equal(codeOf(() => encodeFrame(FrameType.JOIN, Codec.BYTES, 0, new Uint8Array(1))), 'WT_PROTOCOL_ERROR');
  assert.equal(codeOf(() => encodeFrame(FrameType.EMIT, Codec.JSON, 0, new Uint8Array(1))), 'WT_PROTOCOL_ERROR');
  assert.equal(codeOf(() => encodeFrame(FrameType.CALL_RESPONSE, Codec.JSON, 5, new Uint8Array(1))), 'WT_PROTOCOL_ERROR');
  assert.equal(codeOf(() => encodeFrame(FrameType.EMIT, Codec.JSON, 1, new Uint8Array((1 << 20) + 1))), 'WT_PAYLOAD_TOO_LARGE');
  assert.equal(codeOf(() => encodeFrame(FrameType.CALL_REQUEST, Codec.JSON, 1, new Uint8Array(MaxCallPayload + 1))), 'WT_PAYLOAD_TOO_LARGE');
  assert.equal(encodeFrame(FrameType.CALL_REQUEST, Codec.BYTES, 1, new Uint8Array(MaxCallPayload)).length, MaxCallPayload + 12);
});

test('§7.1 golden datagrams encode and decode byte-identically; invalid ones carry their code', async (t) => {
  for (const v of vectors.datagrams) {
    await t.test(v.name, () => {
      const b = unhex(v.hex);
      assert.deepEqual(encodeDatagram({ codec: v.codec as Codec, eventId: v.eventId, origin: v.origin, seq: v.seq, payload: unhex(v.payloadHex) }), b);
      const d = parseDatagram(b);
      assert.ok(d);
      assert.deepEqual({ ...d, payload: [...d.payload] }, { codec: v.codec, eventId: v.eventId, origin: v.origin, seq: v.seq, payload: [...unhex(v.payloadHex)] });
    });
  }
  for (const v of vectors.invalidDatagrams) {
    await t.test(v.name, () => {
      let got = 'accepted';
      try {
        got = parseDatagram(unhex(v.hex)) === undefined ? 'discard' : 'accepted';
      } catch (e) {
        got = (e as TransportError).code;
      }
      assert.equal(got, v.code);
    });
  }
});

test('§4 golden handshakes decode, and encode byte-identically from a reversed table', async (t) => {
  for (const v of vectors.handshakes) {
    await t.test(v.name, () => {
      const h = decodeHandshake(utf8Encode(v.json));
      const want = { v: v.v, feat: v.feat, events: v.events.map(([name, id, lane]) => ({ name, id, lane })) };
      assert.deepEqual(h, want);
      if (!v.encodes) return;
      const reversed = { ...want, events: [...want.events].reverse() };
      assert.equal(new TextDecoder().decode(encodeHandshake(reversed)), v.json);
      // Byte-identical to JSON.stringify of {v, feat, events} (§4.1).
      assert.equal(new TextDecoder().decode(encodeHandshake(want)), JSON.stringify({ v: v.v, feat: v.feat, events: v.events }));
    });
  }
  for (const v of vectors.invalidHandshakes) {
    await t.test(v.name, () => assert.equal(codeOf(() => decodeHandshake(utf8Encode(v.json))), v.code));
  }
});

test('§3.3 golden WebSocket close codes both ways', () => {
  for (const c of vectors.webSocketCloseCodes) {
    assert.equal(webSocketCloseCode(c.sessionCode), c.webSocket);
    assert.equal(sessionCodeFromWebSocket(c.webSocket), c.sessionCode);
  }
  assert.equal(sessionCodeFromWebSocket(1006), undefined);
  assert.equal(sessionCodeFromWebSocket(1001), undefined);
  assert.equal(webSocketCloseCode(2000), 1011);
});

test('§4.3 per-event comparison names the event as the Go runtime does', () => {
  const local = [
    { name: 'chat', id: 836792189, lane: 'reliable' as const },
    { name: 'cursor', id: 1185214141, lane: 'unreliable' as const },
  ];
  const reason = (peer: Array<{ name: string; id: number; lane: Lane }>) => {
    try {
      compareTables(local, peer);
      return 'ok';
    } catch (e) {
      assert.equal((e as TransportError).code, 'WT_CONTRACT_MISMATCH');
      return (e as TransportError).message;
    }
  };
  assert.equal(reason([{ name: 'cursor', id: 1185214141, lane: 'reliable' }]), "event 'cursor' is 'unreliable' here and 'reliable' at the peer");
  assert.equal(reason([{ name: 'chat', id: 7, lane: 'reliable' }]), "event 'chat' has id 836792189 here and 7 at the peer");
  assert.equal(reason([{ name: 'talk', id: 836792189, lane: 'reliable' }]), "id 836792189 is event 'chat' here and 'talk' at the peer");
  assert.equal(reason([{ name: 'other', id: 5, lane: 'reliable' }]), 'ok');
  // Lane before id, first local event in name order.
  assert.equal(reason([{ name: 'cursor', id: 9, lane: 'reliable' }, { name: 'chat', id: 8, lane: 'reliable' }]), "event 'chat' has id 836792189 here and 8 at the peer");
  const long = 'é'.repeat(100);
  const cut = reason.call(null, []) && (() => {
    try {
      compareTables([{ name: long, id: 1, lane: 'reliable' }], [{ name: long, id: 1, lane: 'unreliable' }]);
    } catch (e) {
      return (e as TransportError).message;
    }
    return '';
  })();
  assert.ok(new TextEncoder().encode(cut).length <= 123);
  assert.equal(negotiateFeatures(['b', 'a', 'x', 'a'], ['a', 'b', 'c']).join(), 'a,b');
});

test('§6.4 §6.5 §6.6 control payloads', () => {
  assert.equal(new TextDecoder().decode(encodeCredit(16)), '{"credit":16}');
  assert.equal(parseCredit(encodeCredit(16)), 16);
  for (const [text, want] of [
    ['{"credit":16.0}', 16],
    ['{"credit":1e2}', 100],
    ['{"credit":0}', undefined],
    ['{"credit":-3}', undefined],
    ['{"credit":1.5}', undefined],
    ['{"credit":"16"}', undefined],
    ['{"credit":16,"credit":16}', undefined],
    ['[16]', undefined],
    ['{"credit":99999999999}', 0x7fffffff],
  ] as const) {
    assert.equal(parseCredit(utf8Encode(text)), want, text);
  }
  const ce = { code: 'WT_VALIDATION_FAILED', message: "field 'body' must be a string" };
  assert.deepEqual(parseCallError(encodeCallError(ce)), ce);
  assert.equal(new TextDecoder().decode(encodeCallError(ce)), JSON.stringify(ce));
  assert.deepEqual(parseCallError(utf8Encode('{"code":"WT_MINE","message":"m","extra":1}')), { code: 'WT_MINE', message: 'm' });
  for (const bad of ['{"code":"NOPE","message":""}', '{"message":"m"}', '{"code":"WT_X"}', '{"code":1,"message":"m"}', 'x']) {
    assert.equal(codeOf(() => parseCallError(utf8Encode(bad))), 'WT_PROTOCOL_ERROR', bad);
  }
  assert.equal(parseRoom(encodeRoom('lobby')), 'lobby');
  for (const bad of ['{"room":""}', '{}', '{"room":3}', 'null']) assert.equal(codeOf(() => parseRoom(utf8Encode(bad))), 'WT_PROTOCOL_ERROR', bad);
});

// A control payload escaping a surrogate that pairs with none is refused
// wherever the escape stands, as the Go runtime refuses it: JSON.parse keeps
// it, Go's encoding/json reads U+FFFD, and two runtimes would read two rooms.
test('§5.3 control payloads escaping an unpaired surrogate are refused; pairs and escaped backslashes are text', () => {
  for (const bad of ['{"room":"\\ud800"}', '{"room":"a\\udc00"}', '{"room":"\\ude00\\ud83d"}', '{"room":"\\ud800\\u0041"}', '{"room":"x","\\ud800":1}', '{"room":"x","y":["\\udbff"]}']) {
    assert.throws(() => parseRoom(utf8Encode(bad)), (e: TransportError) => e.code === 'WT_PROTOCOL_ERROR' && /unpaired surrogate/.test(e.message), bad);
  }
  assert.equal(codeOf(() => parseCallError(utf8Encode('{"code":"WT_X","message":"\\udfff"}'))), 'WT_PROTOCOL_ERROR');
  assert.equal(parseCredit(utf8Encode('{"credit":1,"\\ud800\\ue000":1}')), undefined);
  assert.equal(parseRoom(utf8Encode('{"room":"\\ud83d\\ude00"}')), '😀');
  assert.equal(parseRoom(utf8Encode('{"room":"\\\\ud800"}')), '\\ud800');
  assert.equal(parseRoom(utf8Encode('{"room":"\\uFFFD"}')), '\ufffd');
});

test('§7.3 §7.4 sequence comparison is circular; the size ceiling follows the transport', () => {
  assert.ok(seqNewer(2, 1));
  assert.ok(!seqNewer(1, 1));
  assert.ok(!seqNewer(1, 2));
  assert.ok(seqNewer(1, 0xffffffff)); // wrap
  assert.ok(seqNewer(0x7fffffff, 0));
  assert.ok(!seqNewer(0x80000000, 0));
  assert.equal(nextSeq(0), 1);
  assert.equal(nextSeq(0xffffffff), 1);
  assert.equal(maxDatagramPayload(0), 1011);
  assert.equal(maxDatagramPayload(1215), 1202);
  assert.equal(maxDatagramPayload(5), 0);
});

test('§3.3 §10.2 reasons are cut on a character boundary', () => {
  assert.equal(cutReason('abc', 2), 'ab');
  assert.equal(cutReason('aé', 2), 'a');
  assert.equal(cutReason('a😀', 4), 'a');
  assert.equal(cutReason('a😀', 5), 'a😀');
});

test('§4.3 the table is sorted by code point, not by UTF-16 unit', () => {
  // U+FB01 sorts before U+1F600 by code point; as UTF-16 units 0xFB01 > 0xD83D.
  const events = [
    { name: '😀', id: 2, lane: 'reliable' as const },
    { name: 'ﬁ', id: 1, lane: 'reliable' as const },
  ];
  assert.equal(new TextDecoder().decode(encodeHandshake({ v: 0, feat: [], events })), '{"v":0,"feat":[],"events":[["ﬁ",1,"reliable"],["😀",2,"reliable"]]}');
});

test('§5.3 utf8Encode gives TextEncoder\'s bytes for short ASCII, non-ASCII and long strings', () => {
  const enc = new TextEncoder();
  const cases = ['', 'a', '\u0000\u007f', 'x'.repeat(63), 'x'.repeat(64), 'x'.repeat(65), 'x'.repeat(1024), '\u0080', 'é', '€', 'x'.repeat(63) + '😀', '😀' + 'x'.repeat(62), 'a\ud800b', '\udc00', '{"text":"' + 'x'.repeat(53) + '"}'];
  for (const s of cases) assert.deepEqual(utf8Encode(s), enc.encode(s), JSON.stringify(s));
});

test('§5.3 utf8Into writes TextEncoder\'s bytes at an offset and returns their count: ASCII up to 256 units by hand, non-ASCII and longer strings by encodeInto', () => {
  const enc = new TextEncoder();
  const cases = ['', 'a', '\u0000\u007f', 'x'.repeat(256), 'x'.repeat(257), 'x'.repeat(1024), '\u0080', 'é', '€'.repeat(4096), 'x'.repeat(255) + '😀', '😀' + 'x'.repeat(62), 'a\ud800b', '\udc00', '{"text":"' + 'x'.repeat(53) + '"}'];
  for (const s of cases) {
    // Room for 3 bytes per UTF-16 unit, the caller's guarantee, filled with
    // a mark: the bytes before off and after the count stay as they were.
    const b = new Uint8Array(7 + 3 * s.length + 5).fill(0xaa);
    const n = utf8Into(s, b, 7);
    const want = enc.encode(s);
    assert.equal(n, want.length, JSON.stringify(s.slice(0, 20)));
    assert.deepEqual(b.subarray(7, 7 + n), want, JSON.stringify(s.slice(0, 20)));
    assert.ok(b.subarray(0, 7).every((x) => x === 0xaa) && b.subarray(7 + n).every((x) => x === 0xaa), 'nothing written outside');
  }
});
