// Node ↔ Go over the WebSocket mapping (§3.3): the runtime's Client in
// Node, through connectWebSocket and Node's WebSocket, against
// cmd/tio-conformance --ws-only built from this tree. Run with
// `node --experimental-websocket --import tsx --test test/node-go/*.test.ts`
// (tests/nodego runs it in `make test`).

import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test, type TestContext } from 'node:test';

import { Client, RefusedError, TransportError, compileContract, type EventSpec } from '../../src/index.js';
import { FrameDecoder, FrameType } from '../../src/wire/frame.js';
import { withFallback } from '../../src/fallback.js';
import { connectWebTransport } from '../../src/webtransport.js';
import { connectWebSocket, type WebSocketConstructor, type WebSocketLike } from '../../src/websocket.js';
import { conformanceContract as contract } from './conformance.tio.js';
import { Server } from './server.js';

/** An event's id as the generated contract table gives it (§5.4). */
const eventId = (name: string): number => compileContract(contract).byName.get(name)!.id;

const NodeWebSocket = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
if (NodeWebSocket === undefined) {
  throw new Error('these tests need a global WebSocket: run node 20 with --experimental-websocket');
}

/** Node's WebSocket, recording every socket's traffic: the bytes each side sent, frame by frame. */
function recording(): { WebSocket: WebSocketConstructor; sockets: { sent: Uint8Array[]; receivedBytes: number }[] } {
  const sockets: { sent: Uint8Array[]; receivedBytes: number }[] = [];
  const Base = NodeWebSocket!;
  const Recording = function (this: unknown, url: string): WebSocketLike {
    const ws = new Base(url);
    const rec = { sent: [] as Uint8Array[], receivedBytes: 0 };
    sockets.push(rec);
    const send = ws.send.bind(ws);
    ws.send = (data: Uint8Array<ArrayBuffer>) => {
      rec.sent.push(data.slice());
      send(data);
    };
    (ws as unknown as EventTarget).addEventListener('message', (ev) => {
      const data = (ev as MessageEvent).data as unknown;
      if (data instanceof ArrayBuffer) rec.receivedBytes += data.byteLength;
    });
    return ws;
  } as unknown as WebSocketConstructor;
  return { WebSocket: Recording, sockets };
}

/** The frames in what a socket sent. */
function framesOf(chunks: readonly Uint8Array[]): { type: number; eventId: number }[] {
  const d = new FrameDecoder();
  const out: { type: number; eventId: number }[] = [];
  for (const c of chunks) {
    d.push(c);
    for (let f = d.next(); f !== undefined; f = d.next()) out.push({ type: f.type, eventId: f.eventId });
  }
  return out;
}

async function server(t: TestContext, opts: { token?: string } = {}): Promise<Server> {
  const s = await Server.start(opts);
  t.after(() => s.kill());
  return s;
}

function client(t: TestContext, url: string, extra: Partial<ConstructorParameters<typeof Client>[0]> = {}, WebSocket: WebSocketConstructor = NodeWebSocket!): Client {
  const c = new Client({ contract, connect: connectWebSocket(url, { WebSocket }), ...extra });
  t.after(() => c.close());
  return c;
}

/** The payloads of an event the server sends, as they arrive. */
function inbox(c: Client, name: string): { got: unknown[]; next(n?: number, ms?: number): Promise<unknown[]> } {
  const got: unknown[] = [];
  let wake: (() => void) | undefined;
  c.on(name, (v) => {
    got.push(v);
    wake?.();
  });
  return {
    got,
    async next(n = 1, ms = 5000) {
      const deadline = Date.now() + ms;
      while (got.length < n) {
        if (Date.now() > deadline) throw new Error(`'${name}': ${got.length} of ${n} arrived within ${ms} ms`);
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, 50);
        });
      }
      return got.slice(0, n);
    },
  };
}

async function until(what: string, cond: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function codeOf(p: Promise<unknown>): Promise<TransportError> {
  const err = await p.then(
    () => assert.fail('resolved'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof TransportError, String(err));
  return err;
}

test('§3.3 shout is heard by the sender over the WebSocket mapping, in order', async (t) => {
  const s = await server(t);
  const c = client(t, s.ready.ws);
  const heard = inbox(c, 'heard');
  await c.connect();
  assert.equal(c.getSnapshot().transport, 'websocket');
  assert.equal(c.getSnapshot().fallbackReason, null);
  for (let i = 0; i < 100; i++) c.emit('shout', { text: `m${i}` });
  const got = await heard.next(100);
  assert.deepEqual(got, Array.from({ length: 100 }, (_, i) => ({ text: `m${i}` })));
});

test('§3.3 calls fail WT_LANE_UNAVAILABLE at once and the session stays up', async (t) => {
  const s = await server(t);
  const c = client(t, s.ready.ws);
  const heard = inbox(c, 'heard');
  await c.connect();
  for (const name of ['echo', 'enter', 'exit', 'counters', 'blob']) {
    const err = await codeOf(c.call(name, name === 'blob' ? new Uint8Array([1]) : { text: 'x', room: 'r' }));
    assert.equal(err.code, 'WT_LANE_UNAVAILABLE', `${name}: ${err.message}`);
  }
  const err = await codeOf(
    (async () => {
      for await (const _ of c.stream('count', { n: 3 })) assert.fail('an element arrived');
    })(),
  );
  assert.equal(err.code, 'WT_LANE_UNAVAILABLE');
  c.emit('shout', { text: 'still up' });
  assert.deepEqual(await heard.next(), [{ text: 'still up' }]);
  assert.equal(c.getSnapshot().status, 'connected');
});

test('§6.5 say reaches only the rooms the sender is in: with none joined (enter is a call) no said arrives, rooms stay empty', async (t) => {
  const s = await server(t);
  const c = client(t, s.ready.ws);
  const said = inbox(c, 'said');
  const heard = inbox(c, 'heard');
  await c.connect();
  c.emit('say', { text: 'anyone?' });
  // The emit lane is ordered both ways: once heard for a later shout arrived,
  // a said the server sent for the say would have arrived before it.
  c.emit('shout', { text: 'barrier' });
  await heard.next();
  assert.deepEqual(said.got, []);
  assert.deepEqual(c.getSnapshot().rooms, []);
  assert.equal((await codeOf(c.call('enter', { room: 'lobby' }))).code, 'WT_LANE_UNAVAILABLE');
});

test('§3.3 §7.6 move travels as DATAGRAM frames (codec 0x01, event id 0) and comes back through the §7.3 gate, newest last', async (t) => {
  const s = await server(t);
  const rec = recording();
  const c = client(t, s.ready.ws, {}, rec.WebSocket);
  const moves = inbox(c, 'move');
  await c.connect();
  const n = 200;
  for (let i = 1; i <= n; i++) c.emit('move', { x: i, y: -i });
  await until('the newest move to come back', () => moves.got.some((m) => (m as { x: number }).x === n));
  // Every one that came back came back in order and intact; bursts may be
  // thinned (§3.3: the ring moves frames onto the lane below 32 queued).
  const xs = moves.got.map((m) => (m as { x: number; y: number }).x);
  assert.deepEqual(xs, [...xs].sort((a, b) => a - b));
  for (const m of moves.got) assert.equal((m as { x: number; y: number }).y, -(m as { x: number }).x);
  const frames = framesOf(rec.sockets[0]!.sent);
  const datagramFrames = frames.filter((f) => f.type === FrameType.DATAGRAM);
  assert.ok(datagramFrames.length >= moves.got.length, `${datagramFrames.length} DATAGRAM frames sent, ${moves.got.length} moves back`);
  assert.ok(datagramFrames.every((f) => f.eventId === 0));
  assert.equal(frames.filter((f) => f.type === FrameType.EMIT && f.eventId === eventId('move')).length, 0, 'no move as an EMIT frame');
  assert.equal(c.stats().staleReceived, 0);
});

test('§4 refusal: 4007 with the reason bad-token is a RefusedError, no byte of the event table arrives, and no reconnect follows', async (t) => {
  const s = await server(t, { token: 'T' });
  const rec = recording();
  const c = client(t, s.ready.ws, { reconnect: { minMs: 20, maxMs: 40 } }, rec.WebSocket);
  const err = await c.connect().then(
    () => assert.fail('connected without the token'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof RefusedError, String(err));
  assert.equal(err.code, 'WT_UNAUTHORIZED');
  assert.equal(err.reason, 'bad-token');
  assert.deepEqual(c.getSnapshot().refused, { reason: 'bad-token' });
  assert.equal(rec.sockets.length, 1);
  assert.equal(rec.sockets[0]!.receivedBytes, 0, 'the refused peer received bytes: the server’s frame 0');
  await new Promise((r) => setTimeout(r, 200)); // five backoff periods
  assert.equal(rec.sockets.length, 1, 'reconnected after WT_UNAUTHORIZED');
  assert.equal(c.getSnapshot().status, 'closed');

  const ok = client(t, s.ready.ws + '?token=T');
  const heard = inbox(ok, 'heard');
  await ok.connect();
  ok.emit('shout', { text: 'let in' });
  assert.deepEqual(await heard.next(), [{ text: 'let in' }]);
  assert.doesNotMatch(s.lines().join('\n'), /token=T/, 'the server logged the query');
});

test('§4.3 §5.4 a table the Go server cannot take (an id 0, an id past 2^32-1, a name or id twice) is refused WT_PROTOCOL_ERROR naming the event', async (t) => {
  const s = await server(t);
  const extra = { lane: 'reliable', shape: 'emit', payload: 'json' } as const;
  // Events the server lacks, so this side's comparison lets them pass (§4.3).
  for (const [added, want] of [
    [[{ ...extra, name: 'zero', id: 0 }], /'zero' has id 0/],
    [[{ ...extra, name: 'wide', id: 2 ** 32 }], /'wide'.*4294967296/],
    [[{ ...extra, name: 'dup', id: 7 }, { ...extra, name: 'dup', id: 8 }], /'dup' appears twice/],
    [[{ ...extra, name: 'p', id: 9 }, { ...extra, name: 'q', id: 9 }], /'p' and 'q' share id 9/],
  ] as const) {
    const events: EventSpec[] = [...contract.events, ...added];
    const c: Client = new Client({ contract: { ...contract, events }, connect: connectWebSocket(s.ready.ws, { WebSocket: NodeWebSocket! }) });
    t.after(() => c.close());
    // The server reads the table after it sent its own handshake, so the
    // session may open before the server's close arrives.
    await c.connect().catch(() => {});
    await until('the server to close the session', () => c.getSnapshot().status === 'closed');
    const err: TransportError | null = c.getSnapshot().lastError;
    assert.ok(err instanceof TransportError, String(err));
    assert.equal(err.code, 'WT_PROTOCOL_ERROR', String(err));
    assert.match(err.message, want);
  }
});

test('§3.3 close codes from Node reach the Go server as 1000 and 3000 plus the code', async (t) => {
  const s = await server(t);
  for (const [code, name] of [
    ['WT_NO_ERROR', 'WT_NO_ERROR'],
    ['WT_PROTOCOL_ERROR', 'WT_PROTOCOL_ERROR'],
  ] as const) {
    const c = client(t, s.ready.ws);
    await c.connect();
    const reason = `bye-${name}-${Math.random().toString(36).slice(2)}`;
    await c.close(code, reason);
    const line = await s.waitForLog(new RegExp(`session ended.*${reason}`));
    assert.match(line, new RegExp(`code=${name}\\b`));
  }
});

test('§3.3 §10.2 the server’s shutdown reaches Node as WT_NO_ERROR with its reason', async (t) => {
  const s = await server(t);
  const c = client(t, s.ready.ws);
  await c.connect();
  assert.equal(await s.stop(), 0);
  await until('the session to end', () => c.getSnapshot().status === 'closed');
  const err = c.getSnapshot().lastError;
  assert.ok(err instanceof TransportError, String(err));
  assert.match(err.message, /shutting down/);
});

test('§11 reconnect after the server restarts: a new session on the same port, the same handlers', async (t) => {
  const first = await Server.start();
  const port = first.ready.tcp.split(':').pop()!;
  const c = client(t, first.ready.ws, { reconnect: { minMs: 50, maxMs: 200 } });
  const heard = inbox(c, 'heard');
  let sessions = 0;
  let was = c.getSnapshot().status;
  c.subscribe(() => {
    const now = c.getSnapshot().status;
    if (now === 'connected' && was !== 'connected') sessions++;
    was = now;
  });
  await c.connect();
  c.emit('shout', { text: 'before' });
  await heard.next(1);
  await first.kill();
  await until('the client to notice the lost session', () => c.getSnapshot().status === 'connecting');
  assert.equal(c.getSnapshot().transport, null);
  const again = await Server.start({ addr: `127.0.0.1:${port}` });
  t.after(() => again.kill());
  await until('the client to reconnect', () => c.getSnapshot().status === 'connected', 10000);
  assert.equal(sessions, 2);
  c.emit('shout', { text: 'after' });
  assert.deepEqual(await heard.next(2), [{ text: 'before' }, { text: 'after' }]);
});

test('§10.3 a WebSocket port where nothing listens is WT_HANDSHAKE_FAILED, promptly', async (t) => {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as { port: number }).port;
  await new Promise((r) => probe.close(r));
  const c = client(t, `ws://127.0.0.1:${port}/conformance?token=secret`);
  const started = Date.now();
  const err = await codeOf(c.connect());
  assert.equal(err.code, 'WT_HANDSHAKE_FAILED');
  assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
  assert.doesNotMatch(String(err), /secret/);
});

test('§10.3 withFallback in Node: no WebTransport (WT_NO_SUPPORT), so the session is on the WebSocket, and the snapshot says why', async (t) => {
  const s = await server(t);
  assert.equal((globalThis as { WebTransport?: unknown }).WebTransport, undefined);
  const c = new Client({
    contract,
    connect: withFallback(connectWebTransport('https://127.0.0.1:1/conformance'), connectWebSocket(s.ready.ws, { WebSocket: NodeWebSocket! })),
  });
  t.after(() => c.close());
  const heard = inbox(c, 'heard');
  await c.connect();
  assert.equal(c.getSnapshot().transport, 'websocket');
  assert.match(c.getSnapshot().fallbackReason ?? '', /^WT_NO_SUPPORT: /);
  c.emit('shout', { text: 'fell back' });
  assert.deepEqual(await heard.next(), [{ text: 'fell back' }]);
});
