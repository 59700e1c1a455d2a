// Summarises the CPU profiles run.mjs writes with TIO_CPU_PROFILE=<dir>:
// for each measurement (the bench's kind and arguments), the page's busy
// time (every sample but idle) of the raw page and of the runtime's, where
// it goes (the runtime's sources, the bench page, the browser's built-ins,
// garbage collection, the engine itself) and the functions with the most
// self time, each with its source file. Usage:
//   node profile-summary.mjs <dir> [top functions, default 12]
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const [dir, topArg] = process.argv.slice(2);
if (!dir) {
  console.error('usage: node profile-summary.mjs <dir> [top]');
  process.exit(2);
}
const top = Number(topArg || 12);

// The bundle's module comments ("// ../../runtime/ts/src/client.ts") say
// which source file each line of it came from.
const sources = new Map();
for (const f of readdirSync(dir).filter((f) => f.endsWith('.src'))) {
  const starts = [];
  readFileSync(join(dir, f), 'utf8').split('\n').forEach((line, i) => {
    const m = /^\/\/ (\S+\.[jt]s)$/.exec(line);
    if (m) starts.push([i, m[1].replace(/^(\.\.\/)+/, '')]);
  });
  sources.set(f.replace(/\.src$/, ''), starts);
}
function sourceOf(url, line) {
  if (!url) return '';
  const starts = sources.get(new URL(url).pathname.replace(/[^A-Za-z0-9.]+/g, '_')) || [];
  let file = url;
  for (const [start, path] of starts) if (start <= line) file = path;
  return file;
}

const special = new Set(['(idle)', '(program)', '(native, unattributed)', '(garbage collector)', '(root)']);
function category(name, file) {
  if (special.has(name)) return name;
  if (file.includes('runtime/ts/src/')) return 'runtime/ts/src'; // a base copy (TIO_BENCH_BASE) lies in a temporary directory
  if (file === '') return 'built-ins (WebTransport, streams, JSON, promises)';
  return 'bench page and contract';
}

// A nameless frame with no script is the engine's own work the profiler
// could not attribute, like (program).
const nameOf = ({ functionName, url, lineNumber }) => {
  const name = functionName || (url ? '(anonymous)' : '(native, unattributed)');
  const file = sourceOf(url, lineNumber);
  return [name, file, file ? `${name} ${file}:${lineNumber + 1}` : name];
};

// One profile's self time (µs) per function and per category; a built-in
// (no source) is named with its caller, which says what it is doing.
function selfTimes(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children || []) parent.set(c, n);
  const fns = new Map();
  const cats = new Map();
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i + 1] ?? 0; // the time until the next sample
    const node = byId.get(profile.samples[i]);
    let [name, file, key] = nameOf(node.callFrame);
    const caller = parent.get(node.id);
    if (!file && !special.has(name) && caller) key += ` ← ${nameOf(caller.callFrame)[2]}`;
    fns.set(key, (fns.get(key) || 0) + dt);
    const c = category(name, file);
    cats.set(c, (cats.get(c) || 0) + dt);
  }
  return { fns, cats };
}

const groups = new Map(); // "kind args" -> impl -> {busy, ops, fns, cats}
for (const f of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).sort()) {
  const [impl, ...rest] = f.replace(/^\d+-/, '').replace(/\.cpuprofile$/, '').split('-');
  const key = rest.join(' ');
  const result = JSON.parse(readFileSync(join(dir, f.replace(/\.cpuprofile$/, '.result.json')), 'utf8'));
  const { fns, cats } = selfTimes(JSON.parse(readFileSync(join(dir, f), 'utf8')));
  if (!groups.has(key)) groups.set(key, new Map());
  const g = groups.get(key);
  if (!g.has(impl)) g.set(impl, { busy: 0, ops: 0, runs: 0, perOp: [], fns: new Map(), cats: new Map() });
  const acc = g.get(impl);
  acc.runs++;
  acc.ops += result.ops || 0;
  let runBusy = 0;
  for (const [k, v] of cats) if (k !== '(idle)') runBusy += v;
  acc.perOp.push(runBusy / (result.ops || 1));
  for (const [k, v] of fns) if (k !== '(idle)') acc.fns.set(k, (acc.fns.get(k) || 0) + v);
  for (const [k, v] of cats) {
    if (k === '(idle)') continue;
    acc.cats.set(k, (acc.cats.get(k) || 0) + v);
    acc.busy += v;
  }
}

const pct = (v, total) => `${((100 * v) / total).toFixed(1)} %`;
for (const [key, g] of groups) {
  console.log(`\n## ${key}`);
  for (const impl of ['raw', 'runtime', 'base']) {
    const a = g.get(impl);
    if (!a) continue;
    // The median of the runs' own figures, which one stalled run (the host
    // descheduling the page) does not move as it moves the sum.
    const med = [...a.perOp].sort((x, y) => x - y)[Math.floor(a.perOp.length / 2)];
    console.log(`\n${impl}: ${a.runs} runs, ${a.ops} ops, busy ${(a.busy / 1000).toFixed(0)} ms, ${(a.busy / a.ops).toFixed(2)} µs busy per op (median of the runs ${med.toFixed(2)})`);
    for (const [c, v] of [...a.cats].sort((x, y) => y[1] - x[1])) console.log(`  ${pct(v, a.busy).padStart(7)}  ${(v / a.ops).toFixed(2).padStart(7)} µs/op  ${c}`);
    console.log('  top self time:');
    for (const [k, v] of [...a.fns].sort((x, y) => y[1] - x[1]).slice(0, top)) console.log(`  ${pct(v, a.busy).padStart(7)}  ${(v / a.ops).toFixed(2).padStart(7)} µs/op  ${k}`);
  }
}
