// The socket.io-client driver of tio-bench's peer comparison. tio-bench
// starts it with one JSON job as its argument; every loop is bounded by the
// job's count and duration, the whole job by bound_ms, and it exits by
// itself (a fanout job when its stdin closes).
//
//   fanout {url, members, size}: connect the members, print {"joined"}, then
//          answer each {"more"} line on stdin, once every member received
//          that many more broadcasts, with {"got", "lat_us"}.
//   call   {url, callers, count, duration_ms}: echo calls (emitWithAck)
//          from one socket; prints {"done", "elapsed_ms", "lat_us"}.
//   emit   {url, size, count, duration_ms, sync}: "ping" emits from one
//          socket, an acknowledged "sync" every `sync` emits and at the end;
//          prints {"done", "elapsed_ms", "counted"}.
//   setup  {url, count, duration_ms}: connect, await "connect", disconnect,
//          one after another; prints {"done", "elapsed_ms"}.
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { io } from 'socket.io-client';

const job = JSON.parse(process.argv[2]);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const maxSamplesPerMember = 4096;
const maxCallSamples = 1 << 16;
const nowNs = () => (performance.timeOrigin + performance.now()) * 1e6;

function connect(url) {
  return new Promise((resolve, reject) => {
    const s = io(url, { transports: ['websocket'], forceNew: true, reconnection: false, timeout: 20_000 });
    s.once('connect', () => resolve(s));
    s.once('connect_error', (err) => { s.close(); reject(err); });
  });
}

// stampOf reads the send time back from a stamped payload (Unix ns).
function stampOf(text) {
  const m = /^\{"t":(\d+),/.exec(text);
  return m ? Number(m[1]) : NaN;
}

async function fanout() {
  const members = [];
  for (let i = 0; i < job.members; i += 16) {
    const batch = [];
    for (let j = i; j < Math.min(i + 16, job.members); j++) batch.push(connect(job.url));
    members.push(...(await Promise.all(batch)));
  }
  const got = new Array(members.length).fill(0);
  let lat = [];
  let lost = 0;
  let want = 0;
  let behind = 0; // members with fewer than want broadcasts
  let wake = null;
  members.forEach((s, i) => {
    let kept = 0;
    s.on('said', (text) => {
      const t = stampOf(text);
      if (Number.isNaN(t)) { lost = -1; wake?.(); return; }
      if (kept < maxSamplesPerMember) { lat.push(Math.round((nowNs() - t) / 1000)); kept++; }
      if (++got[i] === want && --behind === 0) wake?.();
    });
    s.on('disconnect', (reason) => { if (reason !== 'io client disconnect') { lost++; wake?.(); } });
  });
  out({ joined: members.length });
  const lines = createInterface({ input: process.stdin });
  let queue = Promise.resolve();
  lines.on('line', (line) => {
    queue = queue.then(async () => {
      want += JSON.parse(line).more;
      behind = got.filter((g) => g < want).length;
      if (behind > 0 && lost === 0) {
        await new Promise((resolve) => {
          const timer = setTimeout(resolve, 120_000);
          wake = () => { clearTimeout(timer); resolve(); };
        });
        wake = null;
      }
      if (lost !== 0) { out({ error: lost < 0 ? 'a payload without a stamp' : `${lost} members disconnected` }); return; }
      if (behind > 0) { out({ error: `the slowest member had ${Math.min(...got)} of ${want}` }); return; }
      out({ got: got.reduce((a, b) => a + b, 0), lat_us: lat });
      lat = [];
    });
  });
  lines.on('close', () => queue.then(() => { members.forEach((s) => s.close()); process.exit(0); }));
}

async function call() {
  const s = await connect(job.url);
  const req = { text: 'hello, round trip' };
  const start = performance.now();
  const deadline = start + job.duration_ms;
  let issued = 0;
  const lat = [];
  const caller = async () => {
    while (issued++ < job.count && performance.now() < deadline) {
      const t0 = performance.now();
      const res = await s.emitWithAck('echo', req);
      if (res?.text !== req.text) throw new Error('echo answered something else');
      if (lat.length < maxCallSamples) lat.push(Math.round((performance.now() - t0) * 1000));
    }
  };
  await Promise.all(Array.from({ length: job.callers }, caller));
  out({ done: lat.length, elapsed_ms: performance.now() - start, lat_us: lat });
  s.close();
}

async function emit() {
  const s = await connect(job.url);
  const head = '{"seq":1,"text":"';
  const payload = head + 'x'.repeat(Math.max(job.size - head.length - 2, 0)) + '"}';
  const base = await s.emitWithAck('sync');
  const start = performance.now();
  const deadline = start + job.duration_ms;
  let sent = 0;
  while (sent < job.count && performance.now() < deadline) {
    s.emit('ping', payload);
    sent++;
    if (sent % job.sync === 0) await s.emitWithAck('sync');
  }
  const counted = (await s.emitWithAck('sync')) - base;
  out({ done: sent, elapsed_ms: performance.now() - start, counted });
  s.close();
}

async function setup() {
  const start = performance.now();
  const deadline = start + job.duration_ms;
  let n = 0;
  while (n < job.count && performance.now() < deadline) {
    const s = await connect(job.url);
    s.close();
    n++;
  }
  out({ done: n, elapsed_ms: performance.now() - start });
}

const jobs = { fanout, call, emit, setup };
// A hard bound over the whole job, in case tio-bench is gone.
setTimeout(() => { out({ error: `the job exceeded ${job.bound_ms} ms` }); process.exit(1); }, job.bound_ms).unref();
jobs[job.mode]().catch((err) => { out({ error: String(err?.message ?? err) }); process.exit(1); });
