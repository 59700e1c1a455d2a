// §5.3: codec 0x01 is UTF-8 JSON. A JSON slot or a control payload whose
// bytes are not UTF-8 is refused, never read with U+FFFD in place of the
// bytes, as the Go runtime's tio and wire packages refuse it (utf8_test.go
// there holds the same cases).

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { FrameType, encodeFrame } from '../src/wire/frame.js';
import { decodeHandshake, encodeHandshake } from '../src/wire/handshake.js';
import { parseCallError, parseCredit, parseRoom } from '../src/wire/payload.js';
import { compileContract } from '../src/contract.js';
import { settle, type ScriptedCall } from '../src/testing.js';
import { connected, contract, harness, rejection, thrown } from './engine-helpers.js';

/** A JSON string whose bytes are not UTF-8: a lenient decoder reads it as "\ufffd". */
const notUTF8JSON = new Uint8Array([0x22, 0xff, 0x22]);
/** Bytes with one 0xff in place of the character `mark`. */
function withFF(text: string, mark: string): Uint8Array {
  const at = text.indexOf(mark);
  assert.ok(at >= 0);
  const b = new TextEncoder().encode(text);
  const out = new Uint8Array(b.length);
  out.set(b);
  out[new TextEncoder().encode(text.slice(0, at)).length] = 0xff;
  return out;
}

const notUTF8Reason = (name: string, slot: string) => `'${name}' ${slot} is not UTF-8`;

test('§5.3 control payloads that are not UTF-8 are refused by their parsers (handshake, JOIN/LEAVE room, CALL_ERROR, CALL_CREDIT)', () => {
  const hs = new TextDecoder().decode(encodeHandshake({ v: 0, feat: ['x'], events: [] }));
  const e1 = thrown(() => decodeHandshake(withFF(hs, 'x')));
  assert.equal(e1.code, 'WT_PROTOCOL_ERROR');
  assert.equal(e1.message, 'handshake: not UTF-8');
  const e2 = thrown(() => parseRoom(withFF('{"room":"lob~by"}', '~')));
  assert.equal(e2.code, 'WT_PROTOCOL_ERROR');
  assert.equal(e2.message, 'room: not UTF-8');
  const e3 = thrown(() => parseCallError(withFF('{"code":"WT_HANDLER_ERROR","message":"~"}', '~')));
  assert.equal(e3.code, 'WT_PROTOCOL_ERROR');
  assert.equal(e3.message, 'CALL_ERROR: not UTF-8');
  assert.equal(parseCredit(withFF('{"credit":16,"note":"~"}', '~')), undefined, 'a CALL_CREDIT that is not UTF-8 grants nothing');
  // An encoded surrogate (ED A0 80) is not UTF-8 either.
  const surrogate = new Uint8Array([...new TextEncoder().encode('{"room":"'), 0xed, 0xa0, 0x80, 0x22, 0x7d]);
  assert.match(thrown(() => parseRoom(surrogate)).message, /not UTF-8/);
  // A byte-order mark is no JSON whitespace: kept, not stripped, so the text is not JSON (as Go's reader sees it).
  const bom = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('{"room":"a"}')]);
  assert.equal(thrown(() => parseRoom(bom)).message, 'room: not JSON');
  // Valid UTF-8 beyond ASCII is read as it is.
  assert.equal(parseRoom(new TextEncoder().encode('{"room":"ünïcødé ✓ 𝄞"}')), 'ünïcødé ✓ 𝄞');
});

test('§5.3 §5.5 an EMIT whose JSON payload is not UTF-8 closes the session WT_PROTOCOL_ERROR (1004) naming the event and slot; no handler sees it', async () => {
  const h = await connected();
  const got: unknown[] = [];
  h.client.on('chat', (v) => got.push(v));
  await h.server1.sendEmit('chat', 0);
  await h.server1.sendFrame(FrameType.EMIT, 1, 836792189, notUTF8JSON);
  await settle();
  assert.deepEqual(got, [0]);
  assert.equal(h.pair.closeInfo?.server.code, 1004);
  assert.equal(h.pair.closeInfo?.server.reason, notUTF8Reason('chat', 'payload'));
  assert.equal(h.client.getSnapshot().lastError?.code, 'WT_PROTOCOL_ERROR');
});

test('§5.3 the UTF-8 check comes before the direction check: an EMIT of a client-sent event that is not UTF-8 closes the session, not counted', async () => {
  const h = await connected();
  await h.server1.sendFrame(FrameType.EMIT, 1, 12, notUTF8JSON); // 'up' is sent by the client only
  await settle();
  assert.equal(h.pair.closeInfo?.server.code, 1004);
  assert.equal(h.pair.closeInfo?.server.reason, notUTF8Reason('up', 'payload'));
  assert.equal(h.client.stats().directionDropped, 0);
});

test('§5.3 a bytes slot carries any bytes: an EMIT of 0xff on a bytes event is delivered', async () => {
  const h = await connected();
  const got: unknown[] = [];
  h.client.on('blob', (v) => got.push(v));
  await h.server1.sendFrame(FrameType.EMIT, 2, 13, new Uint8Array([0xff, 0x00]));
  await settle();
  assert.deepEqual(got.map((b) => [...(b as Uint8Array)]), [[0xff, 0x00]]);
  assert.equal(h.client.getSnapshot().status, 'connected');
});

for (const mapping of ['webtransport', 'websocket'] as const) {
  test(`§5.3 §7.2 a JSON datagram whose payload is not UTF-8 closes the session WT_PROTOCOL_ERROR (1004), as a codec mismatch does (${mapping})`, async () => {
    const h = await connected({ pair: { mapping } });
    const got: unknown[] = [];
    h.client.on('cursor', (v) => got.push(v));
    const d = h.server1.datagram('cursor', 7, 1, 'x');
    d.set(notUTF8JSON, 13);
    await h.server1.sendDatagram(d);
    await settle();
    assert.deepEqual(got, []);
    assert.equal(h.pair.closeInfo?.server.code, 1004);
    assert.equal(h.pair.closeInfo?.server.reason, notUTF8Reason('cursor', 'payload'));
    assert.equal(h.client.stats().malformedDropped, 0, 'a protocol error, not a malformed datagram');
  });
}

test('§4.1 §5.3 a server handshake that is not UTF-8 closes the session WT_PROTOCOL_ERROR (1004)', async () => {
  const table = compileContract(contract).table;
  const hs = new TextDecoder().decode(encodeHandshake({ v: 0, feat: ['x'], events: table }));
  const h = harness({ serve: (s) => s.sendFrame(FrameType.HANDSHAKE, 1, 0, withFF(hs, 'x')) });
  const e = await rejection(h.client.connect());
  assert.equal(e.code, 'WT_PROTOCOL_ERROR');
  assert.equal(h.pairs[0]?.closeInfo?.server.code, 1004);
  assert.match(h.pairs[0]?.closeInfo?.server.reason ?? '', /^handshake: not UTF-8/);
});

test('§5.3 §6.5 a JOIN whose room is not UTF-8 closes the session WT_PROTOCOL_ERROR (1004); the client joins nothing', async () => {
  const h = await connected();
  await h.server1.sendFrame(FrameType.JOIN, 1, 0, withFF('{"room":"lob~by"}', '~'));
  await settle();
  assert.equal(h.pair.closeInfo?.server.code, 1004);
  assert.match(h.pair.closeInfo?.server.reason ?? '', /not UTF-8/);
  assert.deepEqual(h.client.getSnapshot().rooms, []);
});

async function nextCall(h: Awaited<ReturnType<typeof connected>>): Promise<ScriptedCall> {
  const c = await h.server1.acceptCall();
  assert.ok(c);
  return c;
}

test('§5.3 a CALL_RESPONSE whose JSON is not UTF-8 fails the call WT_PROTOCOL_ERROR naming the returns slot; the session stays', async () => {
  const h = await connected();
  const p = h.client.call('echo', 1);
  const c = await nextCall(h);
  await c.raw(encodeFrame(FrameType.CALL_RESPONSE, 1, 0, notUTF8JSON));
  await c.end();
  const e = await rejection(p);
  assert.equal(e.code, 'WT_PROTOCOL_ERROR');
  assert.equal(e.message, notUTF8Reason('echo', 'returns'));
  assert.equal(h.client.getSnapshot().status, 'connected');
});

test('§5.3 a streamed element whose JSON is not UTF-8 ends the sequence WT_PROTOCOL_ERROR naming the yields slot, after the valid elements', async () => {
  const h = await connected();
  const got: unknown[] = [];
  const done = (async () => {
    for await (const v of h.client.stream('count', { n: 2 })) got.push(v);
  })();
  const c = await nextCall(h);
  await c.respond({ i: 0 });
  await c.raw(encodeFrame(FrameType.CALL_RESPONSE, 1, 0, notUTF8JSON));
  await c.end();
  const e = await rejection(done);
  assert.deepEqual(got, [{ i: 0 }]);
  assert.equal(e.code, 'WT_PROTOCOL_ERROR');
  assert.equal(e.message, notUTF8Reason('count', 'yields'));
});

test('§5.3 §6.4 a CALL_ERROR whose message is not UTF-8 fails the call WT_PROTOCOL_ERROR, not with a repaired message', async () => {
  const h = await connected();
  const p = h.client.call('echo', 1);
  const c = await nextCall(h);
  await c.raw(encodeFrame(FrameType.CALL_ERROR, 1, 0, withFF('{"code":"WT_HANDLER_ERROR","message":"~"}', '~')));
  await c.end();
  const e = await rejection(p);
  assert.equal(e.code, 'WT_PROTOCOL_ERROR');
  assert.match(e.message, /not UTF-8/);
  assert.doesNotMatch(e.message, /\ufffd/);
});

test('§5.3 §6.4 a CALL_REQUEST the server opens whose JSON is not UTF-8 is answered CALL_ERROR WT_PROTOCOL_ERROR naming the request slot', async () => {
  const h = await connected();
  const call = await h.server1.openCall(encodeFrame(FrameType.CALL_REQUEST, 1, 21, notUTF8JSON));
  const f = await call.next();
  assert.equal(f?.type, FrameType.CALL_ERROR);
  assert.deepEqual(parseCallError(f!.payload), { code: 'WT_PROTOCOL_ERROR', message: notUTF8Reason('echo', 'request') });
  assert.equal(h.client.stats().directionDropped, 0, 'refused for its bytes before its direction');
  assert.equal(h.client.getSnapshot().status, 'connected');
});
