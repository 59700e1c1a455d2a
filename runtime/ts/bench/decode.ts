// Decode cost of the generated chat decoder: JSON.parse of a chat Message
// alone against JSON.parse followed by decodeMessage (the checks and the
// bigint), and encodeMessage against JSON.stringify, per message, in
// headless Chromium (Debian's, driven by tests/browser's pinned
// playwright-core) and in Node. Not a test; run after `make deps`:
//
//   cd runtime/ts && node --import tsx bench/decode.ts

import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const repo = join(root, '..', '..');

// What runs on both sides: n messages, the median of 7 runs of each loop, in ns per message.
const measure = `
import { decodeMessage, encodeMessage } from ${JSON.stringify(join(repo, 'examples', 'chat', 'web', 'chat.tio.ts'))};
export function run(n) {
  const reply = { room: 'lobby', body: 'earlier', tags: ['a'], meta: {}, mood: 'sad' };
  const text = JSON.stringify({ room: 'lobby', body: 'hello there, how is everyone doing today?', sentAt: '1733050000000', tags: ['greeting', 'lobby'], meta: { client: 'web', lang: 'en' }, mood: 'happy', replyTo: reply });
  const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const time = (f) => {
    const out = [];
    for (let r = 0; r < 7; r++) {
      const t0 = performance.now();
      for (let i = 0; i < n; i++) f();
      out.push(((performance.now() - t0) * 1e6) / n);
    }
    return median(out);
  };
  let sink = 0;
  const parse = time(() => { sink += JSON.parse(text).body.length; });
  const decode = time(() => { sink += decodeMessage(JSON.parse(text)).body.length; });
  const value = decodeMessage(JSON.parse(text));
  const plain = JSON.parse(text);
  const stringify = time(() => { sink += JSON.stringify(plain).length; });
  const encode = time(() => { sink += encodeMessage(value).length; });
  if (encodeMessage(value) !== text) throw new Error('not canonical: ' + encodeMessage(value));
  return { bytes: text.length, parse, decode, stringify, encode, sink };
}
`;

const bundled = await build({
  stdin: { contents: measure, resolveDir: root, sourcefile: 'measure.ts', loader: 'ts' },
  bundle: true,
  format: 'iife',
  globalName: 'tioBench',
  target: 'es2022',
  platform: 'browser',
  minify: true,
  write: false,
  logLevel: 'silent',
  alias: { '@tiogen/runtime': join(root, 'src', 'index.ts') },
});
const script = bundled.outputFiles[0]!.text;

interface Figures {
  bytes: number;
  parse: number;
  decode: number;
  stringify: number;
  encode: number;
}

function report(where: string, f: Figures): void {
  const ns = (x: number) => `${Math.round(x)} ns`;
  console.log(
    `${where}: a ${f.bytes} B chat Message: JSON.parse ${ns(f.parse)}, JSON.parse + decodeMessage ${ns(f.decode)} (decoding adds ${ns(f.decode - f.parse)}, ×${(f.decode / f.parse).toFixed(2)}); ` +
      `JSON.stringify ${ns(f.stringify)}, encodeMessage ${ns(f.encode)} (×${(f.encode / f.stringify).toFixed(2)})`,
  );
}

const n = 20_000;

// Node: the same bundle, evaluated here.
const node = new Function(script + '; return tioBench;')() as { run(n: number): Figures };
report(`Node ${process.version}`, node.run(n));

// Chromium, headless, as tests/browser launches it.
// playwright-core is tests/browser's dependency, not the runtime's: the
// little of it used here, typed by hand.
interface Page {
  addScriptTag(o: { content: string }): Promise<unknown>;
  evaluate<R, A>(f: (a: A) => R, a: A): Promise<R>;
}
interface Context {
  pages(): Page[];
  newPage(): Promise<Page>;
  browser(): { version(): string } | null;
  close(): Promise<void>;
}
const require = createRequire(join(repo, 'tests', 'browser', 'package.json'));
const { chromium } = require('playwright-core') as {
  chromium: { launchPersistentContext(dir: string, o: { executablePath: string; headless: boolean; args: string[] }): Promise<Context> };
};
const profile = mkdtempSync(join(tmpdir(), 'tio-bench-decode-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env['CHROMIUM'] ?? '/usr/bin/chromium',
  headless: true,
  args: ['--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = context.pages()[0] ?? (await context.newPage());
  await page.addScriptTag({ content: script });
  const f = await page.evaluate((count: number) => (globalThis as unknown as { tioBench: { run(n: number): Figures } }).tioBench.run(count), n);
  report(`Chromium ${context.browser()?.version() ?? ''}`.trim(), f);
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
