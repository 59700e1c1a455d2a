// The WebSocket connector (§3.3) against a WebSocket class the test drives,
// on a clock the test moves: no test waits out 15 s or 45 s.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { TransportError } from '../src/errors.js';
import type { Conn } from '../src/transport.js';
import {
  CloseGraceMs,
  connectWebSocket,
  DefaultConnectTimeoutMs,
  IdleTimeoutMs,
  KeepaliveIntervalMs,
  MaxUnreadBytes,
  type WebSocketConstructor,
} from '../src/websocket.js';
import { context, FakeWebSocket, ManualClock, message, settle } from './connector-fakes.js';

// The browser's WebSocket is accepted as it is (checked by the compiler).
export function acceptsTheBrowsersWebSocket(ws: typeof WebSocket): WebSocketConstructor {
  return ws;
}

async function open(clock = new ManualClock()): Promise<{ conn: Conn; sock: FakeWebSocket; clock: ManualClock }> {
  const opening = connectWebSocket('ws://127.0.0.1:1/conformance?token=s3cret', { WebSocket: FakeWebSocket }).open(context(clock));
  const sock = FakeWebSocket.last!;
  sock.serverOpen();
  const { conn, fallbackReason } = await opening;
  assert.equal(fallbackReason, null);
  return { conn, sock, clock };
}

async function rejects(p: Promise<unknown>, code: string, message?: RegExp): Promise<TransportError> {
  const err = await p.then(
    () => assert.fail(`resolved, want ${code}`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof TransportError, `want a TransportError, got ${String(err)}`);
  assert.equal(err.code, code, err.message);
  if (message !== undefined) assert.match(err.message, message);
  return err;
}

test('§3.3 the connector does no I/O until open, and opens the socket with binaryType arraybuffer', async () => {
  const before = FakeWebSocket.count;
  const connector = connectWebSocket('ws://127.0.0.1:1/x', { WebSocket: FakeWebSocket });
  assert.equal(FakeWebSocket.count, before);
  const p = connector.open(context(new ManualClock()));
  assert.equal(FakeWebSocket.count, before + 1);
  assert.equal(FakeWebSocket.last!.binaryType, 'arraybuffer');
  FakeWebSocket.last!.serverOpen();
  const { conn } = await p;
  assert.equal(conn.mapping, 'websocket');
});

test('§3.3 the mapping has no call streams and no datagrams', async () => {
  const { conn } = await open();
  assert.equal(conn.openCall, undefined);
  assert.equal(conn.sendDatagram, undefined);
  assert.equal(conn.receiveDatagram, undefined);
  assert.equal(conn.maxDatagramSize(), 0);
});

test('§10.3 WT_NO_SUPPORT when the runtime has no WebSocket and none is injected', async (t) => {
  const saved = Object.getOwnPropertyDescriptor(globalThis, 'WebSocket');
  Reflect.deleteProperty(globalThis, 'WebSocket');
  t.after(() => saved && Object.defineProperty(globalThis, 'WebSocket', saved));
  await rejects(connectWebSocket('ws://127.0.0.1:1/x').open(context(new ManualClock())), 'WT_NO_SUPPORT');
});

test('§10.3 a failed upgrade is WT_HANDSHAKE_FAILED, and the error never prints the query', async () => {
  const p = connectWebSocket('ws://127.0.0.1:1/conformance?token=s3cret', { WebSocket: FakeWebSocket }).open(context(new ManualClock()));
  FakeWebSocket.last!.serverClose(1006);
  const err = await rejects(p, 'WT_HANDSHAKE_FAILED', /ws:\/\/127\.0\.0\.1:1\/conformance/);
  assert.doesNotMatch(String(err), /s3cret/);
});

test('§10.3 a failed upgrade reported by an error alone (Node 20) is WT_HANDSHAKE_FAILED at once', async () => {
  const p = connectWebSocket('ws://127.0.0.1:1/x', { WebSocket: FakeWebSocket }).open(context(new ManualClock()));
  FakeWebSocket.last!.serverError();
  await rejects(p, 'WT_HANDSHAKE_FAILED', /socket error/);
});

test('§11 an error on an open socket with no close after it is a lost session once the grace passed', async () => {
  const { conn, sock, clock } = await open();
  sock.serverError();
  await clock.advance(CloseGraceMs - 1);
  assert.equal(await Promise.race([conn.closed.then(() => 'ended'), settle().then(() => 'open')]), 'open');
  await clock.advance(1);
  assert.deepEqual(await conn.closed, { code: 0, reason: '', remote: false, lost: true });
  assert.equal(sock.closes.length, 1, 'the socket is let go');
});

test('§3.3 an error followed by the close: the close says how the session ended', async () => {
  const { conn, sock } = await open();
  sock.serverError();
  sock.serverClose(4004, 'bad frame');
  assert.deepEqual(await conn.closed, { code: 1004, reason: 'bad frame', remote: true, lost: false });
});

test('§10.3 a URL that is not ws:// or wss:// is WT_HANDSHAKE_FAILED before any socket', async () => {
  const before = FakeWebSocket.count;
  await rejects(connectWebSocket('https://127.0.0.1:1/x', { WebSocket: FakeWebSocket }).open(context(new ManualClock())), 'WT_HANDSHAKE_FAILED', /ws:\/\//);
  await rejects(connectWebSocket('not a url', { WebSocket: FakeWebSocket }).open(context(new ManualClock())), 'WT_HANDSHAKE_FAILED');
  assert.equal(FakeWebSocket.count, before);
});

test('an upgrade that does not complete in time is WT_HANDSHAKE_FAILED, and the socket is closed', async () => {
  const clock = new ManualClock();
  const p = connectWebSocket('ws://127.0.0.1:1/x', { WebSocket: FakeWebSocket }).open(context(clock));
  const sock = FakeWebSocket.last!;
  const outcome = p.catch((e: unknown) => e);
  await clock.advance(DefaultConnectTimeoutMs - 1);
  await settle();
  assert.equal(sock.closes.length, 0);
  await clock.advance(1);
  const err = await outcome;
  assert.ok(err instanceof TransportError && err.code === 'WT_HANDSHAKE_FAILED', String(err));
  assert.equal(sock.closes.length, 1);
});

test('an aborted connect closes the socket and rejects', async () => {
  const ac = new AbortController();
  const p = connectWebSocket('ws://127.0.0.1:1/x', { WebSocket: FakeWebSocket }).open(context(new ManualClock(), ac.signal));
  const sock = FakeWebSocket.last!;
  ac.abort();
  await rejects(p, 'WT_SESSION_CLOSED');
  assert.equal(sock.closes.length, 1);
});

test('§3.3 messages are bytes of the stream: their boundaries carry no meaning, an empty one carries none', async () => {
  const { conn, sock } = await open();
  const recv = await conn.acceptEmit();
  sock.serverSend(message(1, 2));
  sock.serverSend(message());
  sock.serverSend(message(3));
  assert.deepEqual(await recv.read(), new Uint8Array([1, 2]));
  assert.deepEqual(await recv.read(), new Uint8Array([3]));
  const pending = recv.read();
  sock.serverSend(message(4, 5, 6));
  assert.deepEqual(await pending, new Uint8Array([4, 5, 6]));
});

test('§3.3 this side sends binary messages: each write as one, a maximum-size frame included', async () => {
  const { conn, sock } = await open();
  const send = await conn.openEmit();
  await send.write(new Uint8Array([9, 8, 7]));
  assert.deepEqual(sock.sent, [new Uint8Array([9, 8, 7])]);
  const big = new Uint8Array(12 + (1 << 20)).fill(1);
  await send.write(big);
  assert.equal(sock.sent.length, 2);
  assert.equal(sock.sent[1]!.length, 12 + (1 << 20));
});

test('§3.3 each message is the connector’s own copy: the engine reuses its buffer once a write settles, and `ws` keeps a message by reference while it compresses another', async () => {
  const { conn, sock } = await open();
  sock.byReference = true;
  const send = await conn.openEmit();
  const buf = new Uint8Array([1, 2, 3, 4]);
  await send.write(buf.subarray(0, 3));
  buf.set([5, 6, 7]);
  await send.write(buf.subarray(0, 3));
  assert.deepEqual(sock.sent, [new Uint8Array([1, 2, 3]), new Uint8Array([5, 6, 7])]);
});

test('§3.3 a text message is a protocol error: the session closes WT_PROTOCOL_ERROR as 4004', async () => {
  const { conn, sock } = await open();
  const recv = await conn.acceptEmit();
  const reading = recv.read();
  sock.serverSend('hello');
  await rejects(reading, 'WT_SESSION_CLOSED', /session closed by this side: text message, not binary/);
  const info = await conn.closed;
  assert.deepEqual({ code: info.code, remote: info.remote, lost: info.lost }, { code: 1004, remote: false, lost: false });
  assert.match(info.reason, /^text message, not binary$/);
  assert.equal(sock.closes[0]!.code, 4004);
});

test('§3.3 message boundaries carry no meaning: a message of any size is bytes of the stream, taken whole (3 MiB + 1 byte, over the Go mapping\'s 2 MiB)', async () => {
  const { conn, sock } = await open();
  const recv = await conn.acceptEmit();
  const big = new Uint8Array((3 << 20) + 1).fill(7);
  sock.serverSend(big.buffer);
  sock.serverSend(new Uint8Array([8]).buffer);
  assert.deepEqual(await recv.read(), big);
  assert.deepEqual(await recv.read(), new Uint8Array([8]));
  await settle();
  assert.equal(sock.closes.length, 0);
});

test('§9 bytes not yet read are held up to MaxUnreadBytes, in order; one byte more closes the session WT_PEER_TOO_SLOW (4003)', async () => {
  const { conn, sock } = await open();
  const recv = await conn.acceptEmit();
  const size = 2 << 20;
  const held = MaxUnreadBytes / size;
  for (let i = 0; i < held; i++) sock.serverSend(new Uint8Array(size).fill(i).buffer);
  await settle();
  assert.equal(sock.closes.length, 0, 'exactly MaxUnreadBytes is held');
  assert.equal(((await recv.read()) as Uint8Array)[0], 0);
  assert.equal(((await recv.read()) as Uint8Array)[0], 1);
  // Two read: two more fit, then one byte is over.
  sock.serverSend(new Uint8Array(size).buffer);
  sock.serverSend(new Uint8Array(size).buffer);
  await settle();
  assert.equal(sock.closes.length, 0);
  sock.serverSend(new ArrayBuffer(1));
  assert.equal((await conn.closed).code, 1003);
  assert.equal(sock.closes[0]!.code, 4003);
});

test('§3.3 keepalive: an empty binary message once 15000 ms passed with nothing sent, and not before', async () => {
  const { conn, sock, clock } = await open();
  const send = await conn.openEmit();
  await clock.advance(KeepaliveIntervalMs - 1);
  assert.equal(sock.sent.length, 0);
  await clock.advance(1);
  assert.deepEqual(sock.sent, [new Uint8Array(0)]);
  // Something sent postpones the next one: 10 s in, a write; the keepalive
  // follows 15 s after it, not 15 s after the last keepalive.
  await clock.advance(10000);
  await send.write(new Uint8Array([1]));
  await clock.advance(KeepaliveIntervalMs - 1);
  assert.equal(sock.sent.length, 2);
  await clock.advance(1);
  assert.equal(sock.sent.length, 3);
  assert.equal(sock.sent[2]!.length, 0);
  assert.equal((await Promise.race([conn.closed, Promise.resolve('open')])), 'open');
});

test('§3.3 a keepalive due while the socket closes is the socket’s to drop: the session lasts until the close event', async () => {
  const { conn, sock, clock } = await open();
  sock.readyState = 2; // closing: the peer's close is on its way
  await clock.advance(KeepaliveIntervalMs);
  assert.equal(sock.sent.length, 0);
  assert.equal(await Promise.race([conn.closed, Promise.resolve('open')]), 'open');
  sock.serverClose(1000);
  assert.equal((await conn.closed).remote, true);
});

test('§3.3 idle deadline: WT_IDLE_TIMEOUT once 45000 ms passed with nothing received, a keepalive counting', async () => {
  const { conn, sock, clock } = await open();
  await clock.advance(30000);
  sock.serverSend(message()); // the peer's keepalive
  await clock.advance(IdleTimeoutMs - 1);
  assert.equal(sock.closes.length, 0);
  await clock.advance(1);
  const info = await conn.closed;
  assert.equal(info.code, 1005);
  assert.equal(info.remote, false);
  assert.match(info.reason, /45000 ms/);
  assert.equal(sock.closes[0]!.code, 4005);
  assert.equal(clock.pending() <= 1, true, 'only the close grace may stay armed');
});

test('§3.3 close codes this side sends: 1000 for WT_NO_ERROR, 3000 plus every other code', async () => {
  for (const [code, ws] of [
    [0, 1000],
    [1001, 4001],
    [1007, 4007],
    [1999, 4999],
  ] as const) {
    const { conn, sock } = await open();
    conn.close(code, 'r');
    assert.deepEqual(sock.closes, [{ code: ws, reason: 'r' }]);
    assert.deepEqual(await conn.closed, { code, reason: 'r', remote: false, lost: false });
  }
});

test('§3.3 a code with no WebSocket close code is sent as a close without one', async () => {
  const { conn, sock } = await open();
  conn.close(2000, 'r');
  assert.deepEqual(sock.closes, [{ code: undefined, reason: undefined }]);
  assert.equal((await conn.closed).code, 2000);
});

test('§3.3 close codes the peer sends: 1000, 3000 plus the code; 1006 and 1001 are the socket’s own and carry no code (§11)', async () => {
  const cases: [number, string, object][] = [
    [1000, 'bye', { code: 0, reason: 'bye', remote: true, lost: false }],
    [4007, 'bad-token', { code: 1007, reason: 'bad-token', remote: true, lost: false }],
    [4001, "event 'move' differs", { code: 1001, reason: "event 'move' differs", remote: true, lost: false }],
    [3999, '', { code: 999, reason: '', remote: true, lost: false }],
    [1006, '', { code: 0, reason: '', remote: false, lost: true }],
    [1001, 'going away', { code: 0, reason: '', remote: false, lost: true }],
  ];
  for (const [ws, reason, want] of cases) {
    const { conn, sock } = await open();
    sock.serverClose(ws, reason);
    assert.deepEqual(await conn.closed, want, `WebSocket close ${ws}`);
  }
});

test('§3.3 a peer that closes ends the session at once: reads and writes fail, the first close wins', async () => {
  const { conn, sock } = await open();
  const send = await conn.openEmit();
  const recv = await conn.acceptEmit();
  sock.serverSend(message(1));
  sock.serverClose(4007, 'bad-token');
  // What the peer sent before its close is read first.
  assert.deepEqual(await recv.read(), new Uint8Array([1]));
  await rejects(recv.read(), 'WT_SESSION_CLOSED', /refused: bad-token/);
  await rejects(send.write(new Uint8Array([1])), 'WT_SESSION_CLOSED');
  await rejects(conn.openEmit(), 'WT_SESSION_CLOSED');
  conn.close(0, 'late');
  assert.equal(sock.closes.length, 0);
  assert.equal((await conn.closed).code, 1007);
});

test('§3.3 this side’s close ends the session at once, and a `ws` socket is dropped after the grace', async () => {
  const { conn, sock, clock } = await open();
  const recv = await conn.acceptEmit();
  sock.serverSend(message(1));
  const before = recv.read();
  assert.deepEqual(await before, new Uint8Array([1]));
  const reading = recv.read();
  conn.close(1004, 'bad frame');
  await rejects(reading, 'WT_SESSION_CLOSED', /session closed by this side/);
  assert.equal(sock.terminated, false);
  await clock.advance(CloseGraceMs);
  assert.equal(sock.terminated, true);
});

test('§3.3 the close reason is cut to 123 bytes on a character boundary', async () => {
  const { conn, sock } = await open();
  conn.close(1001, 'é'.repeat(100));
  assert.equal(sock.closes[0]!.reason, 'é'.repeat(61));
  assert.equal(new TextEncoder().encode(sock.closes[0]!.reason).length, 122);
  assert.equal((await conn.closed).reason, 'é'.repeat(61));
  // A 4-byte character is not split either.
  const other = await open();
  other.conn.close(1001, 'a'.repeat(121) + '\u{1F600}');
  assert.equal(other.sock.closes[0]!.reason, 'a'.repeat(121));
});

test('§4 a write failing on a socket closed under it waits for the close, so a refusal is reported as one', async () => {
  const { conn, sock, clock } = await open();
  const send = await conn.openEmit();
  sock.readyState = 3; // the socket closed; its close event is still on its way
  const writing = send.write(new Uint8Array([1]));
  await clock.advance(CloseGraceMs - 1);
  sock.serverClose(4007, 'bad-token');
  await rejects(writing, 'WT_SESSION_CLOSED', /bad-token/);
  assert.deepEqual(await conn.closed, { code: 1007, reason: 'bad-token', remote: true, lost: false });
});

test('§11 a write failing with no close within the grace is a lost session', async () => {
  const { conn, sock, clock } = await open();
  const send = await conn.openEmit();
  sock.readyState = 3;
  const writing = send.write(new Uint8Array([1])).catch((e: unknown) => e);
  await clock.advance(CloseGraceMs);
  const err = await writing;
  assert.ok(err instanceof TransportError && err.code === 'WT_SESSION_CLOSED' && /lost/.test(err.message), String(err));
  assert.deepEqual(await conn.closed, { code: 0, reason: '', remote: false, lost: true });
});

test('a write waits while the socket buffers over its high-water mark', async () => {
  const { conn, sock, clock } = await open();
  const send = await conn.openEmit();
  sock.bufferedAmount = 2 << 20;
  let done = false;
  const writing = send.write(new Uint8Array([1])).then(() => (done = true));
  await clock.advance(50);
  assert.equal(done, false);
  sock.bufferedAmount = 0;
  await clock.advance(10);
  await writing;
  assert.equal(done, true);
});
