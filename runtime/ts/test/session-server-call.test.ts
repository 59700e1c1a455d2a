// Call streams the server opens (§3.2): calls are the client's to make, so
// the client answers each with the CALL_ERROR that says why (§6.4) and
// keeps the session; past 256 at once it resets them WT_TOO_MANY_STREAMS
// without reading them (§10.1). As the Go runtime's client does.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { StreamResetError } from '../src/errors.js';
import { FrameType, encodeFrame, putHeader } from '../src/wire/frame.js';
import { parseCallError } from '../src/wire/payload.js';
import { settle } from '../src/testing.js';
import { utf8Encode } from '../src/wire/utf8.js';
import { connected } from './engine-helpers.js';

const json = (v: unknown) => utf8Encode(JSON.stringify(v));

/** Opens a call stream from the server with these bytes and FIN; resolves with the client's CALL_ERROR and whether its FIN followed. */
async function answer(h: Awaited<ReturnType<typeof connected>>, bytes: Uint8Array, fin = true) {
  const call = await h.server1.openCall(bytes, fin);
  const f = await call.next();
  assert.ok(f, 'the client answered nothing');
  assert.equal(f.type, FrameType.CALL_ERROR);
  const ce = parseCallError(f.payload);
  assert.equal(await call.next(), null, 'the client finished its side after the CALL_ERROR');
  return ce;
}

test('§3.2 §6.4 a call stream the server opens is answered with a CALL_ERROR naming why; the session stays up', async () => {
  const h = await connected();
  // A call event: only the client makes calls (counted as a direction drop).
  assert.deepEqual(await answer(h, encodeFrame(FrameType.CALL_REQUEST, 1, 21, json({ x: 1 }))), {
    code: 'WT_PROTOCOL_ERROR',
    message: "'echo' is a call: only clients call",
  });
  assert.equal(h.client.stats().directionDropped, 1);
  // An id the contract lacks (§5.4).
  assert.deepEqual(await answer(h, encodeFrame(FrameType.CALL_REQUEST, 1, 999, json(1))), {
    code: 'WT_UNKNOWN_EVENT',
    message: 'id 999 is not in test',
  });
  // An emit named in a CALL_REQUEST (§3.2).
  assert.deepEqual(await answer(h, encodeFrame(FrameType.CALL_REQUEST, 1, 836792189, json('hi'))), {
    code: 'WT_PROTOCOL_ERROR',
    message: "'chat' is emit, not a call",
  });
  // The request's codec differs from the slot (§5.3).
  assert.deepEqual(await answer(h, encodeFrame(FrameType.CALL_REQUEST, 2, 21, new Uint8Array([1]))), {
    code: 'WT_PROTOCOL_ERROR',
    message: "'echo' request is json, not bytes",
  });
  // Not a CALL_REQUEST first (§5.2).
  assert.deepEqual(await answer(h, encodeFrame(FrameType.EMIT, 1, 836792189, json('hi'))), {
    code: 'WT_PROTOCOL_ERROR',
    message: 'call opened by EMIT',
  });
  // A malformed header: the framing is lost, answered with the decoder's code.
  const bad = new Uint8Array(13);
  putHeader(bad, 0, 0x0a, 1, 0, 1);
  const ce = await answer(h, bad);
  assert.equal(ce.code, 'WT_PROTOCOL_ERROR');
  assert.match(ce.message, /reserved frame type 0x0a/);
  assert.equal(h.client.getSnapshot().status, 'connected');
  assert.deepEqual(await (async () => {
    const p = h.client.call('echo', 'still up');
    const c = await h.server1.acceptCall();
    assert.ok(c);
    await c.respond('yes');
    await c.end();
    return p;
  })(), 'yes');
  await h.client.close();
});

test('§5.1 §8 a call stream the server opens and resets, or whose first frame is over the cap, is abandoned WT_ABORTED', async () => {
  const h = await connected();
  const over = new Uint8Array(12);
  putHeader(over, 0, FrameType.EMIT, 1, 836792189, (1 << 20) + 1);
  const call = await h.server1.openCall(over, false);
  await assert.rejects(call.next(), (e: unknown) => e instanceof StreamResetError && e.code === 1 && e.remote);
  const cut = await h.server1.openCall(new Uint8Array([0, 0]), false);
  cut.stream.reset(1);
  await assert.rejects(cut.next(), (e: unknown) => e instanceof StreamResetError && e.code === 1);
  assert.equal(h.client.getSnapshot().status, 'connected');
  await h.client.close();
});

test('§6.4 a call stream the server opens and never completes its first frame on is answered WT_ABORTED after 120000 ms, on the injected clock', async () => {
  const h = await connected();
  const call = await h.server1.openCall(new Uint8Array([0, 0, 0]), false);
  const answered = call.next();
  await h.clock.tick(119_999);
  assert.equal(await Promise.race([answered.then(() => 'answered'), settle().then(() => 'waiting')]), 'waiting');
  await h.clock.tick(1);
  const f = await answered;
  assert.ok(f);
  assert.equal(f.type, FrameType.CALL_ERROR);
  assert.deepEqual(parseCallError(f.payload), {
    code: 'WT_ABORTED',
    message: 'no whole request in 120000 ms',
  });
  await h.client.close();
});

test('§10.1 past 256 call streams the server opened at once, the client resets the next WT_TOO_MANY_STREAMS without reading it', async () => {
  const h = await connected();
  // 256 that never send a whole frame hold the client's answers.
  const held = [];
  for (let i = 0; i < 256; i++) held.push(await h.server1.openCall(new Uint8Array([0]), false));
  await settle();
  const next = await h.server1.openCall(new Uint8Array(0), false);
  await assert.rejects(next.next(), (e: unknown) => e instanceof StreamResetError && e.code === 9 && e.remote);
  assert.equal(next.stream.out.stoppedWith, 9, 'STOP_SENDING 9: the client reads nothing of it');
  await assert.rejects(next.stream.write(encodeFrame(FrameType.CALL_REQUEST, 1, 21, json(1))), (e: unknown) => e instanceof StreamResetError && e.code === 9);
  // One held stream ends (reset by the server): its slot is free again.
  (held[0] as (typeof held)[number]).stream.reset(1);
  await settle();
  assert.equal((await answer(h, encodeFrame(FrameType.CALL_REQUEST, 1, 21, json(1)))).code, 'WT_PROTOCOL_ERROR');
  await h.client.close();
});
