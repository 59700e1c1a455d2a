// §6.5 over the WebSocket mapping, Node ↔ Go: the snapshot's rooms follow
// the server's JOIN and LEAVE frames, and room broadcasts reach exactly the
// members. The conformance contract joins rooms with calls, which this
// mapping lacks (§3.3), so tests/nodego serves a contract that joins with
// emits (startRoomsServer) and passes its URL as TIO_ROOMS_WS.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test, type TestContext } from 'node:test';

import { Client, type Contract, type EventSpec } from '../../src/index.js';
import { connectWebSocket, type WebSocketConstructor } from '../../src/websocket.js';

const NodeWebSocket = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
const roomsUrl = process.env['TIO_ROOMS_WS'];

const emit = (name: string, from: 'client' | 'server'): EventSpec => ({
  name,
  id: createHash('sha256').update(name).digest().readUInt32BE(0),
  lane: 'reliable',
  from,
  shape: 'emit',
  payload: 'json',
});
// tests/nodego's roomsContract, event by event.
const contract: Contract = { name: 'rooms', events: [emit('join', 'client'), emit('leave', 'client'), emit('say', 'client'), emit('said', 'server')] };

async function member(t: TestContext): Promise<{ c: Client; said: unknown[] }> {
  if (roomsUrl === undefined || NodeWebSocket === undefined) {
    throw new Error('this test needs TIO_ROOMS_WS and a global WebSocket: run it through go test ./tests/nodego');
  }
  const c = new Client({ contract, connect: connectWebSocket(roomsUrl, { WebSocket: NodeWebSocket }) });
  t.after(() => c.close());
  const said: unknown[] = [];
  c.on('said', (v) => said.push(v));
  await c.connect();
  return { c, said };
}

async function until(what: string, cond: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('§6.5 the rooms view follows JOIN and LEAVE over the WebSocket mapping, and broadcasts reach the members only', async (t) => {
  const a = await member(t);
  const b = await member(t);
  let changes = 0;
  a.c.subscribe(() => changes++);

  a.c.emit('join', { room: 'lobby' });
  a.c.emit('join', { room: 'kitchen' });
  b.c.emit('join', { room: 'lobby' });
  await until("a's rooms", () => a.c.getSnapshot().rooms.length === 2);
  assert.deepEqual(a.c.getSnapshot().rooms, ['kitchen', 'lobby']);
  await until("b's rooms", () => b.c.getSnapshot().rooms.length === 1);
  assert.deepEqual(b.c.getSnapshot().rooms, ['lobby']);
  assert.ok(Object.isFrozen(a.c.getSnapshot().rooms));
  assert.ok(changes >= 1);

  // a says once per room it is in: lobby reaches a and b, kitchen a alone.
  a.c.emit('say', { room: '', text: 'hello' });
  await until('said at a', () => a.said.length === 2);
  await until('said at b', () => b.said.length === 1);
  assert.deepEqual(b.said, [{ room: '', text: 'hello' }]);

  a.c.emit('leave', { room: 'lobby' });
  await until("a's rooms after the leave", () => a.c.getSnapshot().rooms.length === 1);
  assert.deepEqual(a.c.getSnapshot().rooms, ['kitchen']);

  // b's say reaches the lobby, which a left; a's own say (kitchen) shows the
  // emit lane has delivered everything b's say could have sent a.
  b.c.emit('say', { room: '', text: 'just us' });
  await until('said at b again', () => b.said.length === 2);
  a.c.emit('say', { room: '', text: 'kitchen only' });
  await until('said at a again', () => a.said.length === 3);
  assert.deepEqual(a.said.at(-1), { room: '', text: 'kitchen only' });
  assert.equal(b.said.length, 2);

  a.c.emit('leave', { room: 'kitchen' });
  await until("a's rooms empty", () => a.c.getSnapshot().rooms.length === 0);
});
