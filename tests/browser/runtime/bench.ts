// Throughput of the TypeScript runtime in a browser against the Go
// conformance server, each figure beside a raw page that moves the same
// frames with the browser's WebTransport API alone (no runtime): emits,
// calls, a streaming call through the §6.6 credit window and datagrams.
// Run by `make bench-browser` (TestBenchBrowser in this folder), never by
// make test.

import { Client } from '../../../runtime/ts/src/index.js';
import type { Contract } from '../../../runtime/ts/src/index.js';
import { connectWebTransport } from '../../../runtime/ts/src/webtransport.js';
import { conformanceContract } from '../../../runtime/ts/test/node-go/conformance.tio.js';
import { serve } from './page.js';

const contract: Contract = conformanceContract;
const ids: Record<string, number> = {};

const enc = new TextEncoder();
const dec = new TextDecoder();
const json = (v: unknown) => enc.encode(JSON.stringify(v));

function hashes(sha256: number[]) {
  return [{ algorithm: 'sha-256', value: new Uint8Array(sha256) }];
}

/** A result: how many operations in how many milliseconds, and latencies when they were timed one by one. */
interface Figure {
  ops: number;
  ms: number;
  perSecond: number;
  p50Ms?: number;
  p99Ms?: number;
}

/** A datagram run's figure: how many were sent, how long sending took, and on the runtime's page what its §9 ring dropped. */
interface DatagramFigure extends Figure {
  sent: number;
  sendMs: number;
  overflow?: number;
  stale?: number;
}

function figure(ops: number, ms: number, latencies?: number[]): Figure {
  const f: Figure = { ops, ms, perSecond: (ops * 1000) / ms };
  if (latencies && latencies.length > 0) {
    latencies.sort((a, b) => a - b);
    f.p50Ms = latencies[Math.floor(latencies.length * 0.5)]!;
    f.p99Ms = latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))]!;
  }
  return f;
}

// ---- the raw page: §5 frames by hand -------------------------------------

// frame builds a §5 frame: u32 length (8 + payload), type, codec, two
// reserved bytes, u32 event id, payload.
function frame(type: number, codec: number, eventId: number, payload: Uint8Array): Uint8Array {
  const f = new Uint8Array(12 + payload.length);
  const v = new DataView(f.buffer);
  v.setUint32(0, 8 + payload.length);
  f[4] = type;
  f[5] = codec;
  v.setUint32(8, eventId);
  f.set(payload, 12);
  return f;
}

const HANDSHAKE = 0x01, EMIT = 0x02, CALL_REQUEST = 0x03, CALL_RESPONSE = 0x04, CALL_CREDIT = 0x08, JSON_CODEC = 0x01;

interface RawFrame {
  type: number;
  eventId: number;
  payload: Uint8Array;
}

// frames reads §5 frames from a stream whose reads carry no boundaries.
function frames(readable: ReadableStream<Uint8Array>): () => Promise<RawFrame | null> {
  const reader = readable.getReader();
  let buf = new Uint8Array(0);
  let off = 0;
  return async function next() {
    for (;;) {
      if (buf.length - off >= 4) {
        const v = new DataView(buf.buffer, buf.byteOffset + off);
        const len = v.getUint32(0);
        if (buf.length - off >= 4 + len) {
          const f = { type: buf[off + 4]!, eventId: v.getUint32(8), payload: buf.subarray(off + 12, off + 4 + len) };
          off += 4 + len;
          return f;
        }
      }
      const { value, done } = await reader.read();
      if (done) return null;
      const rest = buf.length - off;
      const joined = new Uint8Array(rest + value.length);
      joined.set(buf.subarray(off));
      joined.set(value, rest);
      buf = joined;
      off = 0;
    }
  };
}

interface RawSession {
  t: WebTransport;
  emit: WritableStreamDefaultWriter<Uint8Array>;
  serverEmit: () => Promise<RawFrame | null>;
}

// openRaw opens a session and exchanges handshakes (§4.1) as the runtime
// does, before the clock starts.
async function openRaw(url: string, sha256: number[]): Promise<RawSession> {
  const t = new WebTransport(url, { serverCertificateHashes: hashes(sha256) });
  await t.ready;
  const emit = (await t.createUnidirectionalStream()).getWriter();
  const table = contract.events.map((e) => [e.name, e.id, e.lane]).sort((a, b) => (a[0]! < b[0]! ? -1 : 1));
  await emit.write(frame(HANDSHAKE, JSON_CODEC, 0, json({ v: 0, feat: [], events: table })));
  const incoming = t.incomingUnidirectionalStreams.getReader();
  const serverEmit = frames((await incoming.read()).value!);
  const hs = await serverEmit();
  if (!hs || hs.type !== HANDSHAKE) throw new Error('no server handshake');
  return { t, emit, serverEmit };
}

function shoutText(size: number): string {
  // An EMIT payload of exactly `size` bytes: {"text":"…"} is 11 + the text.
  return 'x'.repeat(size - 11);
}

// quiet: a write the page does not wait for; once the session is closed
// it rejects, which is expected.
function quiet(p: Promise<unknown>): void {
  p.catch(() => {});
}

const raw = {
  // n shouts of `size` bytes, at most `window` unanswered, each answered by
  // a heard frame (the server's emit lane back to the page).
  async emit(url: string, sha256: number[], size: number, n: number, window: number): Promise<Figure> {
    const s = await openRaw(url, sha256);
    const f = frame(EMIT, JSON_CODEC, ids.shout!, json({ text: shoutText(size) }));
    let heard = 0;
    const waiter: { wake: (() => void) | null } = { wake: null };
    const reading = (async () => {
      for (;;) {
        const got = await s.serverEmit();
        if (got === null) return;
        if (got.type === EMIT && got.eventId === ids.heard) {
          heard++;
          waiter.wake?.();
          waiter.wake = null;
          if (heard === n) return;
        }
      }
    })();
    // Whatever the window allows goes out in one write, as a careful hand
    // would (and as the runtime coalesces its queue).
    const batch = new Uint8Array(f.length * window);
    for (let i = 0; i < window; i++) batch.set(f, i * f.length);
    const started = performance.now();
    for (let sent = 0; sent < n; ) {
      // Write once half the window is free (or the rest fits), not per
      // answer, so each write carries many frames.
      while (window - (sent - heard) < Math.min(window / 2, n - sent)) await new Promise<void>((r) => (waiter.wake = r));
      const k = Math.min(window - (sent - heard), n - sent);
      await s.emit.ready;
      quiet(s.emit.write(batch.slice(0, k * f.length)));
      sent += k;
    }
    await reading;
    const ms = performance.now() - started;
    s.t.close({ closeCode: 0, reason: 'bench done' });
    return figure(n, ms);
  },

  // Sequential echo calls for `durationMs`: one bidirectional stream each,
  // CALL_REQUEST then FIN, one CALL_RESPONSE (§6.2), read to the stream's
  // end as both runtimes do: a returns call is complete only when the
  // responder closes, since a CALL_ERROR may still follow (§3.2, §6.3).
  async calls(url: string, sha256: number[], durationMs: number): Promise<Figure> {
    const s = await openRaw(url, sha256);
    const req = frame(CALL_REQUEST, JSON_CODEC, ids.echo!, json({ text: 'ping' }));
    const latencies: number[] = [];
    const started = performance.now();
    while (performance.now() - started < durationMs) {
      const t0 = performance.now();
      const st = await s.t.createBidirectionalStream();
      const w = st.writable.getWriter();
      quiet(w.write(req));
      quiet(w.close());
      const next = frames(st.readable);
      const resp = await next();
      if (!resp || resp.type !== CALL_RESPONSE) throw new Error('no CALL_RESPONSE');
      JSON.parse(dec.decode(resp.payload));
      if ((await next()) !== null) throw new Error('a frame after the CALL_RESPONSE');
      latencies.push(performance.now() - t0);
    }
    const ms = performance.now() - started;
    s.t.close({ closeCode: 0, reason: 'bench done' });
    return figure(latencies.length, ms, latencies);
  },

  // count n: elements under the §6.6 window, granting 16 per 16 consumed,
  // as the runtime does.
  async stream(url: string, sha256: number[], n: number): Promise<Figure> {
    const s = await openRaw(url, sha256);
    const started = performance.now();
    const st = await s.t.createBidirectionalStream();
    const w = st.writable.getWriter();
    quiet(w.write(frame(CALL_REQUEST, JSON_CODEC, ids.count!, json({ n }))));
    const next = frames(st.readable);
    const grant = frame(CALL_CREDIT, JSON_CODEC, 0, json({ credit: 16 }));
    let got = 0;
    for (;;) {
      const f = await next();
      if (f === null) break;
      if (f.type !== CALL_RESPONSE) throw new Error(`frame type ${f.type} in the stream`);
      JSON.parse(dec.decode(f.payload));
      got++;
      if (got % 16 === 0) quiet(w.write(grant));
    }
    const ms = performance.now() - started;
    quiet(w.close());
    s.t.close({ closeCode: 0, reason: 'bench done' });
    if (got !== n) throw new Error(`raw stream: ${got} of ${n} elements`);
    return figure(got, ms);
  },

  // move datagrams (§7.1 header: codec, event id, origin, sequence) sent
  // for durationMs as fast as the writer takes them; the figure is how many
  // the server echoed back per second (ops: how many came back; sent: how
  // many were written).
  async datagrams(url: string, sha256: number[], durationMs: number): Promise<DatagramFigure> {
    const s = await openRaw(url, sha256);
    const w = s.t.datagrams.writable.getWriter();
    const r = s.t.datagrams.readable.getReader();
    const point = json({ x: 1.5, y: -2 });
    let received = 0;
    let last = 0;
    const reading = (async () => {
      for (;;) {
        const { value, done } = await r.read();
        if (done) return;
        if (value.length > 13 && new DataView(value.buffer, value.byteOffset).getUint32(1) === ids.move) {
          JSON.parse(dec.decode(value.subarray(13)));
          received++;
          last = performance.now();
        }
      }
    })();
    const started = performance.now();
    let seq = 0;
    while (performance.now() - started < durationMs) {
      seq++;
      const d = new Uint8Array(13 + point.length);
      const v = new DataView(d.buffer);
      d[0] = JSON_CODEC;
      v.setUint32(1, ids.move!);
      v.setUint32(5, 1);
      v.setUint32(9, seq);
      d.set(point, 13);
      await w.ready;
      quiet(w.write(d));
    }
    const sendMs = performance.now() - started;
    await new Promise((res) => setTimeout(res, 500));
    s.t.close({ closeCode: 0, reason: 'bench done' });
    void reading;
    return { ...figure(received, Math.max(1, last - started)), sent: seq, sendMs };
  },
};

// ---- the runtime ---------------------------------------------------------

/**
 * The runtime's page for one copy of the runtime: its Client, its
 * WebTransport connector and the conformance contract generated for it. The bench builds it from runtime/ts/src, and with
 * TIO_BENCH_BASE a second time from a base commit's sources, so both run in
 * the same page and run (bench_test.go).
 */
export function runtimePage(C: typeof Client, connect: typeof connectWebTransport, ct: Contract): typeof raw {
  async function client(url: string, sha256: number[]): Promise<Client> {
    const c = new C({ contract: ct, connect: connect(url, { serverCertificateHashes: hashes(sha256) }) });
    await c.connect();
    return c;
  }
  return {
    async emit(url: string, sha256: number[], size: number, n: number, window: number): Promise<Figure> {
      const c = await client(url, sha256);
      const payload = { text: shoutText(size) };
      let heard = 0;
      const waiter: { wake: (() => void) | null } = { wake: null };
      let done: () => void;
      const all = new Promise<void>((r) => (done = r));
      c.on('heard', () => {
        heard++;
        waiter.wake?.();
        waiter.wake = null;
        if (heard === n) done();
      });
      const started = performance.now();
      for (let sent = 0; sent < n; ) {
        // The raw page's pacing: once half the window is free (or the rest
        // fits), emit what the window allows, which the runtime coalesces.
        while (window - (sent - heard) < Math.min(window / 2, n - sent)) await new Promise<void>((r) => (waiter.wake = r));
        for (let k = Math.min(window - (sent - heard), n - sent); k > 0; k--, sent++) c.emit('shout', payload);
      }
      await all;
      const ms = performance.now() - started;
      c.close();
      return figure(n, ms);
    },

    async calls(url: string, sha256: number[], durationMs: number): Promise<Figure> {
      const c = await client(url, sha256);
      const latencies: number[] = [];
      const started = performance.now();
      while (performance.now() - started < durationMs) {
        const t0 = performance.now();
        await c.call('echo', { text: 'ping' });
        latencies.push(performance.now() - t0);
      }
      const ms = performance.now() - started;
      c.close();
      return figure(latencies.length, ms, latencies);
    },

    async stream(url: string, sha256: number[], n: number): Promise<Figure> {
      const c = await client(url, sha256);
      const started = performance.now();
      let got = 0;
      for await (const _ of c.stream('count', { n }) as AsyncIterable<unknown>) got++;
      const ms = performance.now() - started;
      c.close();
      if (got !== n) throw new Error(`runtime stream: ${got} of ${n} elements`);
      return figure(got, ms);
    },

    async datagrams(url: string, sha256: number[], durationMs: number): Promise<DatagramFigure> {
      const c = await client(url, sha256);
      let received = 0;
      let last = 0;
      c.on('move', () => {
        received++;
        last = performance.now();
      });
      const started = performance.now();
      // The runtime's emit never waits for the transport; yield to the event
      // loop after every 64, as the raw page's awaited writer does. What the
      // browser cannot take yet waits in the §9 ring, which drops the oldest
      // and the stale and counts them (overflow, stale in the result). Both
      // pages send for the same time, so both rates cover the same window.
      let sent = 0;
      while (performance.now() - started < durationMs) {
        for (let i = 0; i < 64; i++, sent++) c.emit('move', { x: 1.5, y: -2 });
        await new Promise((r) => setTimeout(r, 0));
      }
      const sendMs = performance.now() - started;
      await new Promise((res) => setTimeout(res, 500));
      const st = c.stats();
      c.close();
      return { ...figure(received, Math.max(1, last - started)), sent, overflow: st.overflowDropped, stale: st.staleDropped, sendMs };
    },
  };
}

/** The pages a scenario names: raw, runtime, and base when TIO_BENCH_BASE adds it. */
export const pages: Record<string, typeof raw> = { raw, runtime: runtimePage(Client, connectWebTransport, contract) };

for (const e of contract.events) ids[e.name] = e.id;

// bench(impl, kind, ...args): one measurement.
async function bench(url: string, sha256: number[], impl: string, kind: keyof typeof raw, ...args: number[]) {
  const table = pages[impl];
  if (table === undefined) throw new Error(`no page ${impl}`);
  const fn = table[kind] as (url: string, sha256: number[], ...a: number[]) => Promise<Figure>;
  return fn(url, sha256, ...args);
}

serve({ bench });
