// The codec and the engine in Node, no network: frames decoded per second
// from a stream of 64 B EMIT frames in 64 KiB and 1500 B chunks, and 64 B
// emits per second through the engine over ./testing's in-memory pair to a
// scripted server that decodes them. Run: node --import tsx bench/codec.ts

import { FrameDecoder, encodeFrame } from '../src/wire/frame.js';
import { Client } from '../src/client.js';
import type { Contract } from '../src/contract.js';
import { memoryConnector, type ScriptedServer } from '../src/testing.js';

const runs = 5;
const payload = new Uint8Array(64).fill(0x31);
const frame = encodeFrame(2, 1, 836792189, payload);
const frames = 200_000;
const stream = new Uint8Array(frame.length * frames);
for (let i = 0; i < frames; i++) stream.set(frame, i * frame.length);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

for (const chunk of [65536, 1500]) {
  const rates: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    const d = new FrameDecoder();
    let n = 0;
    for (let i = 0; i < stream.length; i += chunk) {
      d.push(stream.subarray(i, i + chunk));
      while (d.next() !== undefined) n++;
    }
    rates.push((n / (performance.now() - t0)) * 1000);
  }
  console.log(`decode 64 B EMIT frames, ${chunk} B chunks: ${Math.round(median(rates)).toLocaleString('en')} frames/s (median of ${runs})`);
}

const contract: Contract = { events: [{ name: 'chat', id: 836792189, lane: 'reliable', shape: 'emit', payload: 'bytes' }] };
const emits = 200_000;
const rates: number[] = [];
let writes = 0;
for (let r = 0; r < runs; r++) {
  let server: ScriptedServer | undefined;
  const client = new Client({ contract, connect: memoryConnector(contract, (s) => ((server = s), s.establish())) });
  await client.connect();
  const s = server as unknown as ScriptedServer;
  const t0 = performance.now();
  let got = 0;
  const reading = (async () => {
    while (got < emits && (await s.nextFrame()) !== null) got++;
  })();
  for (let i = 0; i < emits; i++) {
    client.emit('chat', payload);
    // Yield to the writer every 200 emits, as an application's event loop would.
    if (i % 200 === 199) await new Promise((resolve) => setImmediate(resolve));
  }
  await reading;
  rates.push((emits / (performance.now() - t0)) * 1000);
  writes = s.chunksRead;
  await client.close();
}
console.log(`emit 64 B through the engine over the in-memory pair: ${Math.round(median(rates)).toLocaleString('en')} emits/s (median of ${runs}), ${writes.toLocaleString('en')} writes for ${emits.toLocaleString('en')} emits`);
