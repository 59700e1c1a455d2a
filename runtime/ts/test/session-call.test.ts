// Calls (§3.2, §6.2–§6.4), credit (§6.6), abort (§8) and every per-stream
// error over the ./testing pair.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { StreamResetError } from '../src/errors.js';
import { Codec, FrameType, encodeFrame, putHeader } from '../src/wire/frame.js';
import { settle, type ScriptedCall } from '../src/testing.js';
import { connected, harness, rejection } from './engine-helpers.js';

async function nextCall(h: Awaited<ReturnType<typeof connected>>): Promise<ScriptedCall> {
  const c = await h.server1.acceptCall();
  assert.ok(c);
  return c;
}

test('§3.2 §6.2 a returns call: CALL_REQUEST then FIN, one CALL_RESPONSE, on a stream of its own', async () => {
  const h = await connected();
  const p = h.client.call('echo', { hello: 'world' });
  const c = await nextCall(h);
  assert.equal(c.request.type, FrameType.CALL_REQUEST);
  assert.equal(c.name, 'echo');
  assert.deepEqual(c.value, { hello: 'world' });
  assert.equal(await c.nextFrame(), null, 'the initiator sent FIN after the request');
  await c.respond({ back: 1 });
  await c.end();
  assert.deepEqual(await p, { back: 1 });
  const b = h.client.call('bin', new Uint8Array([1, 2, 3]));
  const c2 = await nextCall(h);
  assert.equal(c2.request.codec, Codec.BYTES);
  await c2.respond(new Uint8Array([9]));
  await c2.end();
  assert.deepEqual([...((await b) as Uint8Array)], [9]);
  assert.equal(h.pair.calls.length, 2);
});

test('§3.2 a call made before the server handshake waits for it', async () => {
  const h = harness({ serve: async (s) => void (await s.readHandshake()) });
  const connecting = h.client.connect();
  const p = h.client.call('echo', 1);
  const s = await h.server();
  await settle();
  assert.equal(h.pairs[0]?.calls.length, 0);
  await s.sendHandshake();
  await connecting;
  const c = (await s.acceptCall())!;
  await c.respond(2);
  await c.end();
  assert.equal(await p, 2);
});

test('§6.4 CALL_ERROR rejects with the server code and message; unknown codes kept', async () => {
  const h = await connected();
  const p = h.client.call('echo', 1);
  const c = await nextCall(h);
  await c.error('WT_VALIDATION_FAILED', "field 'body' must be a string");
  await c.end();
  const e = await rejection(p);
  assert.equal(e.code, 'WT_VALIDATION_FAILED');
  assert.equal(e.message, "field 'body' must be a string");
  assert.equal(c.clientStopped, 1, 'the client stops reading with WT_ABORTED, never 0');
  const q = h.client.call('echo', 1);
  const c2 = await nextCall(h);
  await c2.error('WT_APP_SPECIFIC', 'mine');
  const e2 = await rejection(q);
  assert.equal(e2.code, 'WT_APP_SPECIFIC');
  assert.equal(e2.number, undefined);
});

test('§3.2 §6.3 the returns shape accepts any number of responses: the first is the answer; none is WT_PROTOCOL_ERROR', async () => {
  const h = await connected();
  const p = h.client.call('echo', 1);
  const c = await nextCall(h);
  await c.respond('first');
  await c.respond('second');
  await c.end();
  assert.equal(await p, 'first');
  const q = h.client.call('echo', 1);
  const c2 = await nextCall(h);
  await c2.end();
  const e = await rejection(q);
  assert.equal(e.code, 'WT_PROTOCOL_ERROR');
  assert.equal(e.message, "'echo': no response");
  assert.equal(h.client.getSnapshot().status, 'connected', 'a per-stream error keeps the session');
});

test('§5.1 §5.3 §10.1 per-stream errors reject the call and keep the session', async (t) => {
  const header = (type: number, codec: number, n: number) => {
    const b = new Uint8Array(12);
    putHeader(b, 0, type, codec, 0, n);
    return b;
  };
  const cases: Array<[string, (c: ScriptedCall) => Promise<void> | void, string, RegExp]> = [
    ['§5.3 result codec differs from the slot', async (c) => c.raw(encodeFrame(FrameType.CALL_RESPONSE, Codec.BYTES, 0, new Uint8Array([1]))), 'WT_PROTOCOL_ERROR', /'echo' returns is json, not bytes/],
    ['§5.1 a response over the 16 MiB cap, judged from the header', async (c) => c.raw(header(FrameType.CALL_RESPONSE, 1, (16 << 20) + 1)), 'WT_PROTOCOL_ERROR', /WT_PAYLOAD_TOO_LARGE/],
    ['§5.2 an EMIT on a call stream', async (c) => c.raw(encodeFrame(FrameType.EMIT, 1, 836792189, new Uint8Array([0x31]))), 'WT_PROTOCOL_ERROR', /'echo': EMIT in a response/],
    ['§6.4 a malformed CALL_ERROR', async (c) => c.raw(encodeFrame(FrameType.CALL_ERROR, 1, 0, new TextEncoder().encode('{"code":"nope","message":""}'))), 'WT_PROTOCOL_ERROR', /CALL_ERROR: code 'nope' is not WT_\*/],
    ['§10.1 reset WT_TOO_MANY_STREAMS (9)', (c) => c.stream.reset(9), 'WT_TOO_MANY_STREAMS', /'echo': over 256 calls/],
    ['§8 reset with another code', (c) => c.stream.reset(1), 'WT_PROTOCOL_ERROR', /'echo': reset, code 1/],
    ['§5 the stream ends inside a frame', async (c) => {
      await c.raw(header(FrameType.CALL_RESPONSE, 1, 5));
      await c.end();
    }, 'WT_PROTOCOL_ERROR', /'echo': stream ended mid-frame/],
  ];
  for (const [name, act, code, message] of cases) {
    await t.test(name, async () => {
      const h = await connected();
      const p = h.client.call('echo', 1);
      const c = await nextCall(h);
      await act(c);
      const e = await rejection(p);
      assert.equal(e.code, code);
      assert.match(e.message, message);
      await settle();
      assert.equal(h.client.getSnapshot().status, 'connected');
      // The session still carries calls.
      const q = h.client.call('echo', 2);
      const c2 = await nextCall(h);
      await c2.respond(3);
      await c2.end();
      assert.equal(await q, 3);
    });
  }
  await t.test('a result its validator refuses rejects WT_VALIDATION_FAILED', async () => {
    const h = await connected();
    const p = h.client.call('checked', 1);
    const c = await nextCall(h);
    await c.respond(42);
    await c.end();
    const e = await rejection(p);
    assert.equal(e.code, 'WT_VALIDATION_FAILED');
    assert.match(e.message, /must be a string/);
    const q = h.client.call('checked', 1);
    const c2 = await nextCall(h);
    await c2.respond('ok');
    await c2.end();
    assert.equal(await q, 'ok');
  });
});

test('§8 an AbortSignal resets the stream WT_ABORTED and stops reading; the call rejects WT_ABORTED', async () => {
  const h = await connected();
  const ac = new AbortController();
  const p = h.client.call('echo', 1, { signal: ac.signal });
  const c = await nextCall(h);
  ac.abort();
  const e = await rejection(p);
  assert.equal(e.code, 'WT_ABORTED');
  assert.equal(c.clientStopped, 1);
  // The returns initiator had already sent FIN; a reset after FIN changes nothing, the stop tells the server.
  const already = new AbortController();
  already.abort();
  assert.equal((await rejection(h.client.call('echo', 1, { signal: already.signal }))).code, 'WT_ABORTED');
  assert.equal(h.client.getSnapshot().status, 'connected');
});

test('§11 pending calls and streams reject WT_SESSION_CLOSED when the session closes', async () => {
  const h = await connected();
  const p = h.client.call('echo', 1);
  const it = h.client.stream('count', 1)[Symbol.asyncIterator]();
  const q = it.next();
  await nextCall(h);
  await nextCall(h);
  h.server1.close(0, 'shutting down');
  const e = await rejection(p);
  assert.equal(e.code, 'WT_SESSION_CLOSED');
  assert.equal(e.message, 'the session closed: session closed by the peer: shutting down');
  assert.equal((await rejection(q)).code, 'WT_SESSION_CLOSED');
});

test('§3.3 calls and streams on the WebSocket mapping fail WT_LANE_UNAVAILABLE at once; the session stays up', async () => {
  const h = await connected({ pair: { mapping: 'websocket' } });
  const e = await rejection(h.client.call('echo', 1));
  assert.equal(e.code, 'WT_LANE_UNAVAILABLE');
  assert.equal(e.message, "'echo': no calls over WebSocket");
  const it = h.client.stream('count', 1)[Symbol.asyncIterator]();
  assert.equal((await rejection(it.next())).code, 'WT_LANE_UNAVAILABLE');
  h.client.emit('chat', 'still here');
  assert.deepEqual((await h.server1.nextFrame())?.type, FrameType.EMIT);
  assert.equal(h.client.getSnapshot().status, 'connected');
});

/**
 * A responder that obeys §6.6: it starts with 32, spends one per element,
 * waits at zero for CALL_CREDIT, and checks it never holds more than
 * granted. Reads grants in the background.
 */
async function obeyCredit(c: ScriptedCall, total: number, after?: (c: ScriptedCall) => Promise<void>): Promise<{ maxOutstanding: number }> {
  let sent = 0;
  let maxOutstanding = 0;
  let wake: (() => void) | undefined;
  let ended = false;
  void (async () => {
    for (;;) {
      let f;
      try {
        f = await c.nextFrame();
      } catch {
        f = null;
      }
      if (f === null) {
        ended = true;
        wake?.();
        return;
      }
      assert.equal(f.type, FrameType.CALL_CREDIT, 'only CALL_CREDIT follows the request');
      wake?.();
    }
  })();
  while (sent < total) {
    while (sent >= 32 + c.granted) {
      if (ended) return { maxOutstanding };
      await new Promise<void>((r) => (wake = r));
    }
    await c.respond(sent);
    sent++;
    maxOutstanding = Math.max(maxOutstanding, sent - c.granted);
  }
  if (after !== undefined) await after(c);
  else await c.end();
  return { maxOutstanding };
}

test('§6.6 a yields stream of 1000 under credit, consumed irregularly: grants of 16 per 16 consumed, never more outstanding than granted', async () => {
  const h = await connected();
  const it = h.client.stream('count', { n: 1000 });
  const got: unknown[] = [];
  let server: Promise<{ maxOutstanding: number }> | undefined;
  let call: ScriptedCall | undefined;
  void h.server1.acceptCall().then((c) => {
    call = c!;
    server = obeyCredit(c!, 1000);
  });
  let i = 0;
  for await (const v of it) {
    got.push(v);
    i++;
    // Irregular consumption: pauses of varying length at irregular points.
    if (i % 7 === 0 || i % 13 === 0) await settle(1 + (i % 3));
    // The grants so far are exactly 16 per 16 consumed before this element.
    if (call !== undefined) assert.ok(call.granted <= Math.floor(i / 16) * 16, `granted ${call.granted} after ${i}`);
  }
  assert.deepEqual(got, Array.from({ length: 1000 }, (_, k) => k));
  const { maxOutstanding } = await server!;
  assert.ok(maxOutstanding <= 32, `outstanding ${maxOutstanding}`);
  assert.equal(call!.granted, Math.floor(1000 / 16) * 16);
  assert.equal(call!.creditFrames, Math.floor(1000 / 16));
  await settle();
  assert.equal(call!.stream.in.finished, true, 'FIN after the complete sequence');
  assert.equal(call!.clientReset, undefined);
});

test('§6.6 a consumer that stops consuming stops the grants: the responder waits at 32', async () => {
  const h = await connected();
  const it = h.client.stream('count', 1)[Symbol.asyncIterator]();
  const accepted = h.server1.acceptCall().then((c) => (void obeyCredit(c!, 100), c!));
  await it.next();
  const c = await accepted;
  await settle(10);
  assert.equal(c.granted, 0, 'one element consumed, nothing granted');
  for (let k = 1; k < 16; k++) await it.next();
  await settle(5);
  assert.equal(c.granted, 0, 'the 16th element is consumed when the loop comes back');
  await it.next();
  await settle(5);
  assert.equal(c.granted, 16);
  await it.return?.();
});

test('§6.4 a CALL_ERROR after elements: the elements, then the error', async () => {
  const h = await connected();
  const got: unknown[] = [];
  void h.server1.acceptCall().then((c) => obeyCredit(c!, 3, async (call) => {
    await call.error('WT_HANDLER_ERROR', 'failed at 3');
    await call.end();
  }));
  const e = await rejection((async () => {
    for await (const v of h.client.stream('count', 1)) got.push(v);
  })());
  assert.deepEqual(got, [0, 1, 2]);
  assert.equal(e.code, 'WT_HANDLER_ERROR');
  assert.equal(e.message, 'failed at 3');
});

test('§3.2 zero elements then close is a complete empty sequence', async () => {
  const h = await connected();
  void h.server1.acceptCall().then((c) => c!.end());
  const got: unknown[] = [];
  for await (const v of h.client.stream('count', 1)) got.push(v);
  assert.deepEqual(got, []);
});

test('§8 break, return() and an AbortSignal reset the stream WT_ABORTED and stop reading', async (t) => {
  await t.test('break', async () => {
    const h = await connected();
    let call: ScriptedCall | undefined;
    void h.server1.acceptCall().then((c) => {
      call = c!;
      void obeyCredit(c!, 100);
    });
    for await (const v of h.client.stream('count', 1)) if (v === 5) break;
    await settle();
    assert.equal(call?.clientReset, 1);
    assert.equal(call?.clientStopped, 1);
  });
  await t.test('an AbortSignal while the loop waits', async () => {
    const h = await connected();
    const ac = new AbortController();
    let call: ScriptedCall | undefined;
    void h.server1.acceptCall().then(async (c) => {
      call = c!;
      await c!.respond(0); // then nothing: the consumer waits
    });
    const got: unknown[] = [];
    const e = await rejection((async () => {
      for await (const v of h.client.stream('count', 1, { signal: ac.signal })) {
        got.push(v);
        setTimeout(() => ac.abort(new Error('user left')), 0);
      }
    })());
    assert.deepEqual(got, [0]);
    assert.equal(e.code, 'WT_ABORTED');
    assert.match(e.message, /user left/);
    await settle();
    assert.equal(call?.clientReset, 1);
    assert.equal(call?.clientStopped, 1);
    assert.equal(h.client.getSnapshot().status, 'connected');
  });
  await t.test('a reset by the server mid-stream rejects WT_PROTOCOL_ERROR', async () => {
    const h = await connected();
    void h.server1.acceptCall().then(async (c) => {
      await c!.respond(0);
      c!.stream.reset(1);
    });
    const got: unknown[] = [];
    const e = await rejection((async () => {
      for await (const v of h.client.stream('count', 1)) got.push(v);
    })());
    assert.equal(e.code, 'WT_PROTOCOL_ERROR');
    assert.ok(!(e instanceof StreamResetError));
  });
});

test('§10.1 a refusal seen first on the request write stands: abandoning the stream does not turn it into WT_ABORTED code 1', async () => {
  // A window of 0 keeps the request's write pending until the server reads it, which it never does.
  const h = await connected({ pair: { window: 0 } });
  const p = h.client.call('echo', 1);
  await settle();
  h.pair.calls[0]!.up.stop(9); // STOP_SENDING 9: the write fails first; the read is still pending
  const e = await rejection(p);
  assert.equal(e.code, 'WT_TOO_MANY_STREAMS');
  await settle();
  assert.equal(h.pair.calls[0]!.down.stoppedWith, 1, 'the client abandoned its read side with WT_ABORTED');
  assert.equal(h.client.getSnapshot().status, 'connected');
});

test('§5.1 §6.4 a responder that answers CALL_ERROR and stops reading the request: the call rejects with its code and message, not the stopped write (as the Go client)', async () => {
  // A window of 0 keeps the request's write pending until the server reads it, which it never does.
  const h = await connected({ pair: { window: 0 } });
  const p = h.client.call('echo', 1);
  await settle();
  const { up, down } = h.pair.calls[0]!;
  // The Go server's answer to a request over its byte budget: CALL_ERROR,
  // FIN and STOP_SENDING WT_ABORTED; here the stop arrives first, and the
  // pending write fails before the answer is read.
  up.stop(1);
  await settle();
  await down.write(encodeFrame(FrameType.CALL_ERROR, Codec.JSON, 0, new TextEncoder().encode('{"code":"WT_PAYLOAD_TOO_LARGE","message":"the call requests of all sessions would hold more than 8 bytes"}')));
  await down.finish();
  const e = await rejection(p);
  assert.equal(e.code, 'WT_PAYLOAD_TOO_LARGE');
  assert.equal(e.message, 'the call requests of all sessions would hold more than 8 bytes');
  assert.equal(h.client.getSnapshot().status, 'connected');
});

test('§10.1 a STOP_SENDING without its code on the request write still fails the call: the reset that came with it may be lost (Chromium), so the read side may never end', async () => {
  const h = await connected({ pair: { window: 0 } });
  const p = h.client.call('echo', 1);
  let outcome: unknown = 'pending';
  p.then(
    () => (outcome = 'resolved'),
    (e: unknown) => (outcome = e),
  );
  await settle();
  h.pair.calls[0]!.up.stop(undefined as unknown as number); // the write fails with no code; nothing comes on the read side
  await settle();
  assert.ok(outcome instanceof Error, `the call is ${String(outcome)}`);
  assert.equal((outcome as { code?: string }).code, 'WT_PROTOCOL_ERROR');
  assert.equal(outcome.message, "'echo': reset, code ?");
  assert.equal(h.client.getSnapshot().status, 'connected');
});
