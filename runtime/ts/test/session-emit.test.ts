// The emit lane (§3.1, §6.1, §9), rooms (§6.5), the snapshot and the
// client's lifecycle over the ./testing pair.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { Client, backoff } from '../src/client.js';
import { FrameType, encodeFrame } from '../src/wire/frame.js';
import { utf8Encode } from '../src/wire/utf8.js';
import { encodeHandshake } from '../src/wire/handshake.js';
import { compileContract } from '../src/contract.js';
import { FakeClock, memoryConnector, payloadValue, settle } from '../src/testing.js';
import { connected, contract, harness, rejection, thrown } from './engine-helpers.js';

test('§6.1 emits travel in order both ways, JSON and bytes', async () => {
  const h = await connected();
  const got: unknown[] = [];
  h.client.on('chat', (v) => got.push(v));
  h.client.on('blob', (v) => got.push(v));
  for (let i = 0; i < 200; i++) h.client.emit('chat', { i });
  h.client.emit('blob', new Uint8Array([0, 255]));
  for (let i = 0; i < 200; i++) {
    const f = await h.server1.nextFrame();
    assert.equal(f?.type, FrameType.EMIT);
    assert.deepEqual(payloadValue(f!), { i });
  }
  const b = await h.server1.nextFrame();
  assert.equal(b?.codec, 2);
  assert.deepEqual([...b!.payload], [0, 255]);
  for (let i = 0; i < 200; i++) await h.server1.sendEmit('chat', i);
  await h.server1.sendEmit('blob', new Uint8Array([7]));
  await settle();
  assert.equal(got.length, 201);
  assert.deepEqual(got.slice(0, 3), [0, 1, 2]);
  assert.deepEqual([...(got[200] as Uint8Array)], [7]);
});

/** The EMIT frames of 'chat' 0, 1, … n−1, in one chunk, after the frames given. */
function chatChunk(n: number, ...before: Uint8Array[]): Uint8Array {
  const frames = [...before, ...Array.from({ length: n }, (_, i) => encodeFrame(FrameType.EMIT, 1, 836792189, utf8Encode(JSON.stringify(i))))];
  const chunk = new Uint8Array(frames.reduce((len, f) => len + f.length, 0));
  frames.reduce((off, f) => (chunk.set(f, off), off + f.length), 0);
  return chunk;
}

test('§3.1 §6.1 the frames of one chunk reach their handlers in one go: no microtask turn between them', async () => {
  const h = await connected();
  const order: unknown[] = [];
  h.client.on('chat', (v) => {
    // Runs only once the reader yields: after every frame of the chunk, not after the first.
    if (v === 0) queueMicrotask(() => order.push('turn'));
    order.push(v);
  });
  await h.server1.sendRaw(chatChunk(50));
  await settle();
  assert.deepEqual(order, [...Array.from({ length: 50 }, (_, i) => i), 'turn']);
});

test('§4.1 the frames after the server\'s handshake in its chunk reach the handlers once the client reports itself connected', async () => {
  const handshake = encodeFrame(FrameType.HANDSHAKE, 1, 0, encodeHandshake({ v: 0, feat: [], events: compileContract(contract).table }));
  const h = harness({ serve: (s) => s.sendRaw(chatChunk(3, handshake)) });
  const seen: unknown[] = [];
  h.client.on('chat', (v) => seen.push([v, h.client.getSnapshot().status]));
  await h.client.connect();
  await settle();
  assert.deepEqual(seen, [
    [0, 'connected'],
    [1, 'connected'],
    [2, 'connected'],
  ]);
  await h.client.close();
});

test('§10.2 a handler that closes the client sees no frame after it, not even one of the chunk it came in', async () => {
  const h = await connected();
  const got: unknown[] = [];
  let closed: Promise<void> | undefined;
  h.client.on('chat', (v) => {
    got.push(v);
    if (v === 2) closed = h.client.close();
  });
  await h.server1.sendRaw(chatChunk(10));
  await settle();
  await closed;
  assert.deepEqual(got, [0, 1, 2]);
  assert.equal(h.client.getSnapshot().status, 'closed');
});

test('§9 emits queued in one turn are coalesced into one write, headers encoded into one buffer', async () => {
  const h = await connected();
  const before = h.pair.clientEmit?.writes ?? 0;
  for (let i = 0; i < 100; i++) h.client.emit('chat', i);
  await settle();
  assert.equal((h.pair.clientEmit?.writes ?? 0) - before, 1, 'one write for 100 frames');
  for (let i = 0; i < 100; i++) assert.equal(payloadValue((await h.server1.nextFrame())!), i);
});

test('§9 a loop of 1,000 emits that awaits once between batches of 250 keeps the session: the writer empties the queue when it runs (README)', async () => {
  const h = await connected();
  for (let i = 0; i < 1000; i++) {
    if (i % 250 === 0) await null;
    h.client.emit('chat', i);
  }
  for (let i = 0; i < 1000; i++) assert.equal(payloadValue((await h.server1.nextFrame())!), i);
  assert.equal(h.client.getSnapshot().status, 'connected');
});

test('§9 a batch over 64 KiB is written in writes of whole frames of up to 64 KiB each, a larger frame alone, in order', async () => {
  const h = await connected();
  const before = h.pair.clientEmit?.writes ?? 0;
  const sizes = [30_000, 30_000, 30_000, 30_000, 70_000, 1];
  sizes.forEach((n, i) => h.client.emit('blob', new Uint8Array(n).fill(i)));
  await settle();
  // 2 × 30,012 B fit in 65,536; a third does not. The 70,012 B frame exceeds it alone.
  assert.equal((h.pair.clientEmit?.writes ?? 0) - before, 4, 'writes: 2 frames, 2 frames, the large one, the last');
  for (const [i, n] of sizes.entries()) {
    const f = await h.server1.nextFrame();
    assert.equal(f?.payload.length, n);
    assert.equal(f?.payload[0], i);
  }
});

test('§5.3 §9 JSON emits are encoded straight into the writer\'s own buffer, reused: every frame exact across batches, non-ASCII and long texts included, writes cut at 3 bytes per UTF-16 unit', async () => {
  const h = await connected();
  const before = h.pair.clientEmit?.writes ?? 0;
  // 6,002 B, 11 B and 3 B (6,052 B framed); then 20,002 B of ASCII, which
  // would fit beside them, but not its bound of 3 bytes per unit (60,018 B
  // framed), so it starts the next write; then 90,002 B, too long for one
  // batch, so encoded at emit and written alone; then 3 B.
  const first = ['y'.repeat(6000), 'é€😀', 'x', 'w'.repeat(20_000), '€'.repeat(30_000), 'z'];
  for (const v of first) h.client.emit('chat', v);
  await settle();
  assert.equal((h.pair.clientEmit?.writes ?? 0) - before, 4, 'writes: 3 frames, the 20,002 B one, the 90,002 B one alone, the last');
  // Shorter frames over the bytes the first batch left in the buffer.
  const second = ['a', 'b'.repeat(300), 'ü'];
  for (const v of second) h.client.emit('chat', v);
  await settle();
  assert.equal((h.pair.clientEmit?.writes ?? 0) - before, 5, 'the second batch in one write');
  for (const v of [...first, ...second]) {
    const f = await h.server1.nextFrame(); // the reader refuses a frame with reserved bits set (§5.1)
    assert.equal(f?.type, FrameType.EMIT);
    assert.deepEqual(payloadValue(f!), v);
    assert.equal(f?.payload.length, new TextEncoder().encode(JSON.stringify(v)).length);
  }
});

test('§5.1 an emit within the 1 MiB cap in UTF-16 units but not in UTF-8 bytes is refused at emit WT_PAYLOAD_TOO_LARGE; the session stays', async () => {
  const h = await connected();
  // 400,000 units, 1,200,002 bytes.
  assert.equal(thrown(() => h.client.emit('chat', '€'.repeat(400_000))).code, 'WT_PAYLOAD_TOO_LARGE');
  h.client.emit('chat', 'after');
  assert.deepEqual(payloadValue((await h.server1.nextFrame())!), 'after');
  assert.equal(h.client.getSnapshot().status, 'connected');
});

test('§9 an emit queue over 256 frames closes the session WT_PEER_TOO_SLOW (1003); the emit lane never drops', async () => {
  // A window of 0: every write waits for the server, which never reads.
  const h = await connected({ pair: { window: 0 }, serve: (s) => s.sendHandshake() });
  await settle();
  for (let i = 0; i < 256; i++) h.client.emit('chat', i);
  assert.equal(h.client.stats().emitQueueDepth, 256);
  const e = thrown(() => h.client.emit('chat', 256));
  assert.equal(e.code, 'WT_PEER_TOO_SLOW');
  await settle();
  assert.equal(h.pair.closeInfo?.server.code, 1003);
  assert.equal(h.pair.closeInfo?.server.reason, 'emit queue over 256 frames');
  // As the Go runtime says it: how the session ended.
  const after = thrown(() => h.client.emit('chat', 1));
  assert.equal(after.code, 'WT_SESSION_CLOSED');
  assert.equal(after.message, 'the session closed: session closed by this side: emit queue over 256 frames');
});

test('§5.4 unknown emits are ignored and counted; the direction and the validator drop and count', async () => {
  const h = await connected();
  const got: unknown[] = [];
  h.client.on('typed', (v) => got.push(v));
  await h.server1.sendFrame(FrameType.EMIT, 1, 0xdeadbeef, new TextEncoder().encode('1'));
  await h.server1.sendEmit('up', 1); // an event only the client sends
  await h.server1.sendEmit('typed', 'not a number');
  await h.server1.sendFrame(FrameType.EMIT, 1, 14, new TextEncoder().encode('{bad json'));
  await h.server1.sendEmit('typed', 5);
  await settle();
  assert.deepEqual(got, [5]);
  const st = h.client.stats();
  assert.equal(st.unknownDropped, 1);
  assert.equal(st.directionDropped, 1);
  assert.equal(st.validationDropped, 2);
  assert.equal(h.client.getSnapshot().status, 'connected');
});

test('§6.1 sending refuses locally what the contract does not allow', async () => {
  const h = await connected();
  assert.equal(thrown(() => h.client.emit('nope', 1)).code, 'WT_UNKNOWN_EVENT');
  assert.equal(thrown(() => h.client.emit('note', 1)).code, 'WT_PROTOCOL_ERROR'); // server-sent
  assert.equal(thrown(() => h.client.emit('echo', 1)).code, 'WT_PROTOCOL_ERROR'); // a call
  assert.equal(thrown(() => h.client.emit('blob', 'text')).code, 'WT_VALIDATION_FAILED');
  assert.equal(thrown(() => h.client.emit('chat', 'x'.repeat(1 << 20))).code, 'WT_PAYLOAD_TOO_LARGE');
  assert.throws(() => h.client.on('up', () => {}), TypeError);
  assert.throws(() => h.client.on('nope', () => {}), TypeError);
  assert.equal(h.client.getSnapshot().status, 'connected');
});

test('§6.5 the rooms view follows JOIN and LEAVE; the snapshot changes identity only when it changes', async () => {
  const h = await connected();
  let notified = 0;
  h.client.subscribe(() => notified++);
  const s0 = h.client.getSnapshot();
  assert.ok(Object.isFrozen(s0));
  assert.equal(h.client.getSnapshot(), s0);
  await h.server1.join('lobby');
  await settle();
  const s1 = h.client.getSnapshot();
  assert.notEqual(s1, s0);
  assert.deepEqual(s1.rooms, ['lobby']);
  assert.ok(Object.isFrozen(s1.rooms));
  await h.server1.join('lobby'); // no change
  await h.server1.join('attic');
  await settle();
  const s2 = h.client.getSnapshot();
  assert.deepEqual(s2.rooms, ['attic', 'lobby']);
  await h.server1.leave('nowhere'); // no change
  await settle();
  assert.equal(h.client.getSnapshot(), s2);
  await h.server1.leave('lobby');
  await settle();
  assert.deepEqual(h.client.getSnapshot().rooms, ['attic']);
  assert.equal(notified, 3);
  await h.client.close();
  assert.deepEqual(h.client.getSnapshot().rooms, []);
});

test('§11 constructing a client does no I/O; connect() is idempotent; the snapshot walks idle, connecting, connected, closing, closed', async () => {
  let opened = 0;
  const connector = memoryConnector(contract, (s) => s.establish());
  const counting = { open: (ctx: Parameters<typeof connector.open>[0]) => (opened++, connector.open(ctx)) };
  const client = new Client({ contract, connect: counting });
  assert.equal(opened, 0);
  assert.equal(client.getSnapshot().status, 'idle');
  assert.equal(client.getSnapshot().transport, null);
  const statuses: string[] = [client.getSnapshot().status];
  client.subscribe(() => {
    const st = client.getSnapshot().status;
    if (statuses.at(-1) !== st) statuses.push(st);
  });
  const a = client.connect();
  const b = client.connect();
  assert.equal(a, b);
  await a;
  assert.equal(opened, 1);
  assert.equal(client.getSnapshot().transport, 'webtransport');
  assert.equal(client.getSnapshot().fallbackReason, null);
  await client.connect();
  assert.equal(opened, 1);
  await client.close();
  assert.deepEqual(statuses, ['idle', 'connecting', 'connected', 'closing', 'closed']);
  assert.equal(thrown(() => client.emit('chat', 1)).code, 'WT_SESSION_CLOSED');
  assert.equal((await rejection(client.call('echo', 1))).code, 'WT_SESSION_CLOSED');
});

test('§11 the snapshot reports a fallback and its reason', async () => {
  const client = new Client({ contract, connect: memoryConnector(contract, (s) => s.establish(), { mapping: 'websocket', fallbackReason: 'WT_UDP_UNREACHABLE: no UDP' }) });
  await client.connect();
  assert.equal(client.getSnapshot().transport, 'websocket');
  assert.equal(client.getSnapshot().fallbackReason, 'WT_UDP_UNREACHABLE: no UDP');
  await client.close();
});

test('§11 reconnect: jittered backoff on the clock, a new session each time, the same handlers attached', async () => {
  const h = harness({ client: { reconnect: { minMs: 100, maxMs: 1000, random: () => 0.5 } } });
  const got: unknown[] = [];
  h.client.on('note', (v) => got.push(v));
  await h.client.connect();
  const s1 = await h.server(1);
  await settle();
  await s1.sendEmit('note', 'one');
  await settle();
  s1.close(0, 'server restarting');
  await settle();
  assert.equal(h.client.getSnapshot().status, 'connecting');
  assert.equal(h.client.getSnapshot().lastError?.message, 'session closed by the peer: server restarting');
  assert.equal(h.pairs.length, 1);
  await h.clock.tick(99); // backoff(0) = 100 ms with this jitter
  assert.equal(h.pairs.length, 1);
  await h.clock.tick(1);
  assert.equal(h.pairs.length, 2);
  const s2 = await h.server(2);
  await settle();
  assert.equal(h.client.getSnapshot().status, 'connected');
  assert.equal(h.client.getSnapshot().lastError, null);
  await s2.sendEmit('note', 'two');
  await settle();
  assert.deepEqual(got, ['one', 'two']);
  await h.client.close();
  await h.clock.tick(10_000);
  assert.equal(h.pairs.length, 2, 'no reconnect after close()');
});

test('§11 reconnect retries failed attempts with growing waits between min and max', async () => {
  const waits: number[] = [];
  const r = { minMs: 100, maxMs: 1000, random: () => 0.999 };
  for (let i = 0; i < 6; i++) waits.push(Math.round(backoff(r, i)));
  assert.deepEqual(waits, [100, 200, 400, 800, 1000, 1000]);
  assert.equal(Math.round(backoff(r, 5000)), 1000, 'an attempt past 1023 (2 ** n is Infinity) still waits max');
  assert.equal(backoff({ minMs: 100, maxMs: 1000, random: () => 0 }, 3), 400);
  const h = harness({ client: { reconnect: r }, fail: (n) => (n <= 2 ? new Error('down') : undefined) });
  const p = h.client.connect();
  await settle();
  assert.equal(h.pairs.length, 1);
  await h.clock.tick(100);
  assert.equal(h.pairs.length, 2);
  await h.clock.tick(200);
  assert.equal(h.pairs.length, 3);
  await p;
  assert.equal(h.client.getSnapshot().status, 'connected');
});

test('§11 close() from a snapshot listener as the client starts its backoff ends the run at once', async () => {
  const h = harness({ client: { reconnect: { minMs: 1000, maxMs: 1000 } }, fail: () => new Error('down') });
  let closed: Promise<void> | undefined;
  h.client.subscribe(() => {
    const snap = h.client.getSnapshot();
    // The update that starts the wait: connecting again, after a failure.
    if (snap.status === 'connecting' && snap.lastError !== null && !closed) closed = h.client.close();
  });
  h.client.connect().catch(() => {});
  await settle();
  assert.ok(closed, 'the listener closed the client');
  // The clock does not move: a wait that missed the stop would hold close() for its 1000 ms.
  const done = await Promise.race([closed.then(() => 'closed'), settle().then(() => 'waiting')]);
  assert.equal(done, 'closed');
  assert.equal(h.client.getSnapshot().status, 'closed');
  assert.equal(h.pairs.length, 1, 'no reconnect after close()');
});

test('§11 without reconnect, a session that ends leaves the client closed with the reason', async () => {
  const h = await connected();
  h.server1.close(1004, 'broken');
  await settle();
  await h.clock.tick(60_000);
  assert.equal(h.pairs.length, 1);
  const snap = h.client.getSnapshot();
  assert.equal(snap.status, 'closed');
  assert.equal(snap.lastError?.code, 'WT_PROTOCOL_ERROR');
  assert.equal(snap.lastError?.number, 1004);
});

test('§11 close() while connecting abandons the attempt', async () => {
  const h = harness({ serve: () => {} });
  const p = h.client.connect();
  await settle();
  await h.client.close();
  assert.equal((await rejection(p)).code, 'WT_SESSION_CLOSED');
  assert.equal(h.client.getSnapshot().status, 'closed');
  assert.equal(h.pairs[0]?.closeInfo?.server.code, 0);
});

test('§4.1 a session on the first mapping that never handshakes falls back through Opened.fallBack', async () => {
  const clock = new FakeClock();
  const silent = memoryConnector(contract, () => {}); // opens, never sends a byte
  const ws = memoryConnector(contract, (s) => s.establish(), { mapping: 'websocket' });
  let why: string | undefined;
  const connect = {
    async open(ctx: Parameters<typeof silent.open>[0]) {
      const opened = await silent.open(ctx);
      return {
        ...opened,
        fallBack: async (err: { code: string }, c: typeof ctx) => {
          why = err.code;
          return { ...(await ws.open(c)), fallbackReason: 'WT_HANDSHAKE_TIMEOUT: no bytes' };
        },
      };
    },
  };
  const client = new Client({ contract, connect, clock });
  const p = client.connect();
  await settle();
  clock.advance(5000);
  await p;
  assert.equal(why, 'WT_HANDSHAKE_TIMEOUT');
  assert.equal(silent.pairs[0]?.closeInfo?.server.code, 1002);
  const snap = client.getSnapshot();
  assert.equal(snap.status, 'connected');
  assert.equal(snap.transport, 'websocket');
  assert.equal(snap.fallbackReason, 'WT_HANDSHAKE_TIMEOUT: no bytes');
  await client.close();
});

test('§3.1 an emit made before the server handshake is written after frame 0', async () => {
  const h = harness({ serve: () => {} });
  void h.client.connect();
  const s = await h.server();
  await settle();
  h.client.emit('chat', 'early');
  await s.readHandshake();
  const f = await s.nextFrame();
  assert.equal(f?.type, FrameType.EMIT);
  assert.equal(payloadValue(f!), 'early');
});

/** Runs fn with globalThis.reportError recording what it is given, as a page's uncaught errors; restores it after. */
async function reportingErrors(fn: (reported: unknown[]) => Promise<void>): Promise<void> {
  const reported: unknown[] = [];
  const g = globalThis as { reportError?: ((e: unknown) => void) | undefined };
  const saved = g.reportError;
  g.reportError = (e) => reported.push(e);
  try {
    await fn(reported);
  } finally {
    if (saved === undefined) delete g.reportError;
    else g.reportError = saved;
  }
}

test('§6.5 a subscribe listener that throws is reported as uncaught; the session reads on and stays up', async () => {
  const h = await connected();
  try {
    await reportingErrors(async (reported) => {
      const off = h.client.subscribe(() => {
        throw new Error('the listener failed');
      });
      await h.server1.join('lobby');
      await settle();
      off();
      await h.server1.join('kitchen');
      await settle();
      assert.deepEqual(h.client.getSnapshot().rooms, ['kitchen', 'lobby']);
      assert.equal(h.client.getSnapshot().status, 'connected');
      assert.equal(reported.length, 1);
      assert.match((reported[0] as Error).message, /the listener failed/);
    });
  } finally {
    await h.client.close();
  }
});

test('§11 a subscribe listener that throws on a status change stops neither the other listeners nor the client: close() resolves', async () => {
  const h = await connected();
  await reportingErrors(async (reported) => {
    const seen: string[] = [];
    h.client.subscribe(() => {
      throw new Error('the listener failed');
    });
    h.client.subscribe(() => seen.push(h.client.getSnapshot().status));
    await h.client.close();
    // closing, the session's end (its transport cleared), closed: each change reaches both listeners.
    assert.deepEqual(seen, ['closing', 'closing', 'closed']);
    assert.equal(reported.length, 3);
    assert.match((reported[0] as Error).message, /the listener failed/);
  });
});
