// The datagram lane (§7) and its WebSocket mapping (§3.3, §7.6, §9): origin
// and sequence, the last-write-wins gate with its 60 s retention, the send
// ring's bound and TTL, the size ceiling, on the fake clock.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { FrameType } from '../src/wire/frame.js';
import { parseDatagram } from '../src/wire/datagram.js';
import { DatagramRing } from '../src/session/ring.js';
import { SequenceGate } from '../src/session/gate.js';
import { FakeClock, payloadValue, settle } from '../src/testing.js';
import { connected, thrown } from './engine-helpers.js';

test('§7.1 §7.3 a datagram carries the client origin and a sequence per event, from 1', async () => {
  const h = await connected();
  for (let i = 0; i < 3; i++) h.client.emit('cursor', { x: i });
  await settle();
  const sent = h.pair.clientDatagrams.map((b) => parseDatagram(b)!);
  assert.deepEqual(sent.map((d) => [d.codec, d.eventId, d.origin, d.seq]), [
    [1, 1185214141, 1, 1],
    [1, 1185214141, 1, 2],
    [1, 1185214141, 1, 3],
  ]);
  assert.deepEqual(payloadValue(sent[2]!), { x: 2 });
});

test('§7.4 a payload over maxDatagramSize()-13 raises WT_DATAGRAM_TOO_LARGE and sends nothing; 1024 when the transport reports 0', async () => {
  const h = await connected();
  const fits = 'x'.repeat(1011 - 2); // a JSON string of 1011 bytes
  h.client.emit('cursor', fits);
  assert.equal(h.pair.clientDatagrams.length, 1);
  const e = thrown(() => h.client.emit('cursor', fits + 'x'));
  assert.equal(e.code, 'WT_DATAGRAM_TOO_LARGE');
  assert.equal(e.message, "'cursor': 1012 bytes, over 1011");
  assert.equal(h.pair.clientDatagrams.length, 1, 'nothing sent');
  // Queried at send time: the path's limit changes under the session.
  h.pair.maxDatagramSize = 100;
  assert.equal(thrown(() => h.client.emit('cursor', 'y'.repeat(86))).code, 'WT_DATAGRAM_TOO_LARGE');
  h.client.emit('cursor', 'y'.repeat(85));
  assert.equal(h.pair.clientDatagrams.length, 2);
  const seqs = h.pair.clientDatagrams.map((b) => parseDatagram(b)!.seq);
  assert.deepEqual(seqs, [1, 2], 'a refused datagram takes no sequence');
});

test('§7.3 last-write-wins per (origin, event) with circular comparison; stale ones counted', async () => {
  const h = await connected();
  const got: unknown[] = [];
  h.client.on('cursor', (v) => got.push(v));
  const s = h.server1;
  for (const [origin, seq, v] of [
    [7, 5, 'a'],
    [7, 4, 'stale'],
    [7, 5, 'duplicate'],
    [7, 6, 'b'],
    [8, 1, 'other origin'],
    [7, 0x80000006, 'half the space ahead reads as behind'],
    [9, 0xfffffffe, 'near the top'],
    [9, 0xffffffff, 'the top'],
    [9, 1, 'wrapped'],
    [9, 0xffffffff, 'behind the wrap'],
  ] as const) {
    await s.sendDatagram(s.datagram('cursor', origin, seq, v));
  }
  await settle();
  assert.deepEqual(got, ['a', 'b', 'other origin', 'near the top', 'the top', 'wrapped']);
  assert.equal(h.client.stats().staleReceived, 4);
});

test('§7.3 a pair state is dropped after 60 s with no datagram for it', async () => {
  const h = await connected();
  const got: unknown[] = [];
  h.client.on('cursor', (v) => got.push(v));
  const s = h.server1;
  await s.sendDatagram(s.datagram('cursor', 7, 100, 'a'));
  await settle();
  h.clock.advance(59_999);
  await s.sendDatagram(s.datagram('cursor', 7, 1, 'stale at 59.999 s, and it restarts the retention'));
  await settle();
  h.clock.advance(59_999);
  await s.sendDatagram(s.datagram('cursor', 7, 2, 'still stale'));
  await settle();
  h.clock.advance(60_000);
  await s.sendDatagram(s.datagram('cursor', 7, 3, 'accepted after 60 s of silence'));
  await settle();
  assert.deepEqual(got, ['a', 'accepted after 60 s of silence']);
  assert.equal(h.client.stats().staleReceived, 2);
});

test('§7.2 §7.5 short, malformed, early and unknown datagrams are dropped and counted (a probe before the handshake is not early); the session stays', async () => {
  const h = await connected({ serve: async (s, pair) => {
    // Before the server's handshake: discarded silently (§7.5). A probe
    // may overtake the handshake too (the Go server sends one as soon as it
    // accepted the client's): it carries no event, so it is no early datagram.
    pair.server.sendDatagram?.([new Uint8Array(1)]);
    pair.server.sendDatagram?.([s.datagram('cursor', 7, 1, 'early')]);
    await new Promise((r) => setTimeout(r, 0));
    await s.establish();
  } });
  const got: unknown[] = [];
  h.client.on('cursor', (v) => got.push(v));
  const s = h.server1;
  await s.sendDatagram(new Uint8Array(0)); // a liveness probe
  await s.sendDatagram(new Uint8Array(12));
  await s.sendDatagram(new Uint8Array(13)); // reserved codec 0
  const unknown = s.datagram('cursor', 7, 2, 'x');
  unknown[4] = (unknown[4] as number) ^ 1;
  await s.sendDatagram(unknown);
  await s.sendDatagram(s.datagram('cursor', 7, 3, 'ok'));
  await settle();
  assert.deepEqual(got, ['ok']);
  const st = h.client.stats();
  assert.equal(st.earlyDiscarded, 1);
  assert.equal(st.malformedDropped, 1);
  assert.equal(st.unknownDropped, 1);
  assert.equal(h.client.getSnapshot().status, 'connected');
});

test('§3 a datagram carrying a reliable event closes WT_PROTOCOL_ERROR (1004)', async () => {
  const h = await connected();
  const b = h.server1.datagram('cursor', 7, 1, 'x');
  b.set([0x31, 0xe0, 0x6f, 0x7d], 1); // chat's id
  await h.server1.sendDatagram(b);
  await settle();
  assert.equal(h.pair.closeInfo?.server.code, 1004);
  assert.equal(h.pair.closeInfo?.server.reason, "datagram of reliable emit 'chat'");
});

test('§3.3 on the WebSocket mapping unreliable events travel as DATAGRAM frames: codec 0x01, event id 0, a §7.1 datagram inside', async () => {
  const h = await connected({ pair: { mapping: 'websocket' } });
  h.client.emit('cursor', { x: 1 });
  const f = await h.server1.nextFrame();
  assert.equal(f?.type, FrameType.DATAGRAM);
  assert.equal(f?.codec, 1);
  assert.equal(f?.eventId, 0);
  const d = parseDatagram(f!.payload)!;
  assert.deepEqual([d.eventId, d.origin, d.seq], [1185214141, 1, 1]);
  assert.deepEqual(payloadValue(d), { x: 1 });
  // Received DATAGRAM frames pass the §7.3 gate.
  const got: unknown[] = [];
  h.client.on('cursor', (v) => got.push(v));
  const s = h.server1;
  await s.sendDatagram(s.datagram('cursor', 9, 2, 'a'));
  await s.sendDatagram(s.datagram('cursor', 9, 1, 'stale'));
  await settle();
  assert.deepEqual(got, ['a']);
  assert.equal(h.client.stats().staleReceived, 1);
});

test('§3.3 unreliable frames move onto the emit lane only while it holds fewer than 32 frames', async () => {
  const h = await connected({ pair: { mapping: 'websocket' } });
  const types = async (n: number) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await h.server1.nextFrame())!.type);
    return out;
  };
  // 10 emits and 5 datagrams in one turn: one write with all 15.
  let before = h.pair.clientEmit!.writes;
  for (let i = 0; i < 10; i++) h.client.emit('chat', i);
  for (let i = 0; i < 5; i++) h.client.emit('cursor', i);
  await settle();
  assert.equal(h.pair.clientEmit!.writes - before, 1);
  assert.deepEqual(await types(15), [...Array(10).fill(FrameType.EMIT), ...Array(5).fill(FrameType.DATAGRAM)]);
  // 40 emits and 5 datagrams: the emits first, the datagrams only in the next write.
  before = h.pair.clientEmit!.writes;
  for (let i = 0; i < 40; i++) h.client.emit('chat', i);
  for (let i = 0; i < 5; i++) h.client.emit('cursor', i);
  await settle();
  assert.equal(h.pair.clientEmit!.writes - before, 2);
  assert.deepEqual(await types(45), [...Array(40).fill(FrameType.EMIT), ...Array(5).fill(FrameType.DATAGRAM)]);
});

test('§3.3 §9 a burst on the unreliable lane never closes WT_PEER_TOO_SLOW: the ring drops the oldest and the stale, counted apart', async () => {
  // A window of 0: every write waits for the server, which reads only when told.
  const h = await connected({ pair: { mapping: 'websocket', window: 0 }, serve: (s) => s.sendHandshake() });
  for (let i = 0; i < 1000; i++) h.client.emit('cursor', i);
  await settle();
  assert.equal(h.client.getSnapshot().status, 'connected');
  const st = h.client.stats();
  assert.equal(st.overflowDropped, 1000 - 64);
  assert.equal(st.emitQueueDepth, 0, 'datagrams never enter the emit queue');
  // The writer is stuck on the handshake write; 150 ms pass; then it drains.
  h.clock.advance(151);
  await h.server1.readHandshake();
  const next = h.server1.nextFrame();
  const f = await Promise.race([next, settle(5).then(() => 'nothing')]);
  assert.equal(f, 'nothing', 'every queued datagram was stale at dequeue');
  assert.equal(h.client.stats().staleDropped, 64);
  assert.equal(h.client.stats().overflowDropped, 936);
  // A fresh one goes out.
  h.client.emit('cursor', 'fresh');
  const g = await next;
  assert.equal(payloadValue(parseDatagram(g!.payload)!), 'fresh');
});

test('§9 the ring: 64 entries, oldest dropped on overflow; an entry exactly 150 ms old is still sent, older is stale', () => {
  const clock = new FakeClock();
  const drops = { overflowDropped: 0, staleDropped: 0 };
  const r = new DatagramRing(clock, drops);
  for (let i = 0; i < 70; i++) r.push(new Uint8Array([i]));
  // 64 held: the 6 oldest dropped, then 2 sent and 62 stale below.
  assert.equal(drops.overflowDropped, 6);
  assert.equal(r.pop()?.[0], 6);
  clock.advance(150);
  assert.equal(r.pop()?.[0], 7);
  clock.advance(1);
  assert.equal(r.pop(), undefined);
  assert.equal(drops.staleDropped, 62);
});

test('§7.3 the gate holds a bounded number of pairs, evicting the least recently seen', () => {
  const clock = new FakeClock();
  const g = new SequenceGate(clock, 3);
  assert.ok(g.accept(1, 1, 5));
  assert.ok(g.accept(2, 1, 5));
  assert.ok(g.accept(3, 1, 5));
  assert.ok(!g.accept(1, 1, 5)); // 1 is now the most recent: 2, 3, 1
  assert.ok(g.accept(4, 1, 5)); // evicts 2: 3, 1, 4
  assert.ok(g.accept(2, 1, 5), 'an evicted pair is accepted once more'); // evicts 3: 1, 4, 2
  assert.ok(!g.accept(1, 1, 4)); // 4, 2, 1
  // Three pairs are held at once: each still refuses its last sequence.
  assert.ok(!g.accept(4, 1, 5)); // 2, 1, 4
  assert.ok(!g.accept(2, 1, 5)); // 1, 4, 2
  assert.ok(!g.accept(1, 1, 5)); // 4, 2, 1
  // A fourth evicts the least recently seen (4), and only it.
  assert.ok(g.accept(3, 1, 5), 'the pair evicted before is accepted once more'); // evicts 4: 2, 1, 3
  assert.ok(!g.accept(2, 1, 5)); // 1, 3, 2
  assert.ok(g.accept(4, 1, 5), 'the least recently seen was evicted');
  // Origins above 2^21 keep distinct state (the pair does not fit one JS number).
  const big = new SequenceGate(clock);
  assert.ok(big.accept(0xffffffff, 1, 2));
  assert.ok(big.accept(0xfffffffe, 1, 1));
  assert.ok(!big.accept(0xffffffff, 1, 2));
});

test('§9 on WebTransport the ring holds what the transport has no room for: the oldest dropped and counted, the stale at dequeue, the rest sent as room frees', async () => {
  const h = await connected();
  // A transport with no room: it keeps the queue and takes nothing yet.
  let queue: { pop(): Uint8Array | undefined } | undefined;
  const conn = h.pair.client as { sendDatagram?: (q: { pop(): Uint8Array | undefined }) => void };
  conn.sendDatagram = (q) => (queue = q);
  for (let i = 0; i < 100; i++) h.client.emit('cursor', i);
  assert.equal(h.client.stats().overflowDropped, 100 - 64, 'past 64 the oldest is dropped, counted');
  const seqs: number[] = [];
  for (let d = queue!.pop(); d !== undefined; d = queue!.pop()) seqs.push(parseDatagram(d)!.seq);
  assert.deepEqual(seqs, Array.from({ length: 64 }, (_, i) => 37 + i), 'the newest 64, oldest first');
  h.client.emit('cursor', 'late');
  h.clock.advance(151);
  assert.equal(queue!.pop(), undefined, 'stale at dequeue');
  assert.equal(h.client.stats().staleDropped, 1);
});
