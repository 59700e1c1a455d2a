// Node WebSocket emit throughput: the runtime's Client through
// connectWebSocket against a raw client moving the same frames over the
// same WebSocket, both against cmd/tio-conformance --ws-only (each shout
// comes back as heard; a run ends when every heard arrived). Both keep at
// most Window shouts unanswered: the server disconnects a peer 256 frames
// behind on its emit lane (§9), and Node reads more slowly than Go writes.
// Paired runs,
// the median of each side and of the ratios reported. Not a test: run
//
//   cd runtime/ts && node --experimental-websocket --import tsx test/node-go/bench-emit.ts [runs] [messages]

import { Client } from '../../src/index.js';
import { compileContract } from '../../src/contract.js';
import { Codec, encodeFrame, FrameDecoder, FrameType } from '../../src/wire/frame.js';
import { encodeHandshake } from '../../src/wire/handshake.js';
import { connectWebSocket, type WebSocketConstructor } from '../../src/websocket.js';
import { conformanceContract as contract } from './conformance.tio.js';
import { Server } from './server.js';

/** An event's id as the generated contract table gives it (§5.4). */
const eventId = (name: string): number => compileContract(contract).byName.get(name)!.id;

const NodeWebSocket = (globalThis as { WebSocket?: WebSocketConstructor & (new (url: string) => WebSocket) }).WebSocket;
if (NodeWebSocket === undefined) throw new Error('run node 20 with --experimental-websocket');

const runs = Number(process.argv[2] ?? 7);
const messages = Number(process.argv[3] ?? 20000);

/** A shout payload of exactly size bytes of JSON. */
function payload(size: number): { text: string } {
  return { text: 'x'.repeat(size - '{"text":""}'.length) };
}

/** Shouts sent and not yet heard, at most. */
const Window = 128;

const yieldToLoop = (): Promise<void> => new Promise((r) => setImmediate(r));

/** The runtime: one emit per shout, count heard. */
async function runtime(url: string, size: number): Promise<number> {
  const c = new Client({ contract, connect: connectWebSocket(url, { WebSocket: NodeWebSocket! }) });
  let heard = 0;
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  c.on('heard', () => {
    if (++heard === messages) done();
  });
  await c.connect();
  const p = payload(size);
  const t0 = performance.now();
  for (let i = 0; i < messages; i++) {
    if ((i & 31) === 0) while (i - heard > Window - 32) await yieldToLoop();
    try {
      c.emit('shout', p);
    } catch (err) {
      throw new Error(`emit ${i}: ${String(c.getSnapshot().lastError)}`, { cause: err });
    }
  }
  await all;
  const rate = messages / ((performance.now() - t0) / 1000);
  await c.close();
  return rate;
}

/**
 * The raw client: the handshake, then the same EMIT frames, 32 to a
 * message, each payload JSON-encoded and each heard JSON-parsed, as an
 * application on a bare WebSocket would.
 */
async function raw(url: string, size: number): Promise<number> {
  const ws = new NodeWebSocket!(url);
  ws.binaryType = 'arraybuffer';
  const heardId = eventId('heard');
  const decoder = new FrameDecoder();
  const decoder_ = new TextDecoder();
  const encoder = new TextEncoder();
  let heard = 0;
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  ws.onmessage = (ev) => {
    decoder.push(new Uint8Array(ev.data as ArrayBuffer));
    for (let f = decoder.next(); f !== undefined; f = decoder.next()) {
      if (f.type !== FrameType.EMIT || f.eventId !== heardId) continue;
      JSON.parse(decoder_.decode(f.payload)); // what an application does with each message
      if (++heard === messages) done();
    }
  };
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error('raw WebSocket failed to open'));
  });
  const table = compileContract(contract).table;
  ws.send(encodeFrame(FrameType.HANDSHAKE, Codec.JSON, 0, encodeHandshake({ v: 0, feat: [], events: table })) as Uint8Array<ArrayBuffer>);
  const p = payload(size);
  const shout = eventId('shout');
  const t0 = performance.now();
  for (let i = 0; i < messages; i += 32) {
    while (i - heard > Window - 32) await yieldToLoop();
    // Each message encoded as an application would, 32 frames packed into one WebSocket message.
    const n = Math.min(32, messages - i);
    const frames: Uint8Array[] = [];
    let len = 0;
    for (let k = 0; k < n; k++) {
      const f = encodeFrame(FrameType.EMIT, Codec.JSON, shout, encoder.encode(JSON.stringify(p)));
      frames.push(f);
      len += f.length;
    }
    const msg = new Uint8Array(new ArrayBuffer(len));
    let off = 0;
    for (const f of frames) {
      msg.set(f, off);
      off += f.length;
    }
    ws.send(msg);
  }
  await all;
  const rate = messages / ((performance.now() - t0) / 1000);
  ws.close(1000);
  return rate;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const server = await Server.start();
try {
  for (const size of [64, 1024]) {
    const ours: number[] = [];
    const theirs: number[] = [];
    const ratios: number[] = [];
    await runtime(server.ready.ws, size); // warm-up of both paths
    await raw(server.ready.ws, size);
    for (let r = 0; r < runs; r++) {
      const a = await runtime(server.ready.ws, size);
      const b = await raw(server.ready.ws, size);
      ours.push(a);
      theirs.push(b);
      ratios.push(a / b);
    }
    console.log(
      `${size} B: runtime ${Math.round(median(ours))} msg/s, raw ${Math.round(median(theirs))} msg/s, ratio ${median(ratios).toFixed(2)} (median of ${runs} paired runs of ${messages} shouts, ${Window} in flight)`,
    );
  }
} finally {
  await server.kill();
}
