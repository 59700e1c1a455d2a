// The generated TypeScript (tiogen gen --ts) as a user compiles it: every
// golden case's ts/ file and the chat example's, against the package as
// installed (package.json's exports and the built dist/*.d.ts), under
// strict flags and then some, with TypeScript 5.9, 6.0 and 7.0; and the
// chat client's type tests (test/generated/chat-types.ts), each of whose
// lines marked @ts-expect-error must fail to compile.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const repo = join(root, '..', '..');
const goldens = join(repo, 'testdata', 'golden');

const compilers = [
  ['typescript', '5.9.3'],
  ['typescript6', '6.0.3'],
  ['typescript7', '7.0.2'],
] as const;

// What a strict frontend project turns on; generated code must pass all of it.
const strictOptions = {
  target: 'ES2022',
  lib: ['ES2022', 'DOM'],
  module: 'NodeNext',
  moduleResolution: 'NodeNext',
  strict: true,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  verbatimModuleSyntax: true,
  isolatedModules: true,
  noUnusedLocals: true,
  noUnusedParameters: true,
  noImplicitReturns: true,
  noImplicitOverride: true,
  noPropertyAccessFromIndexSignature: true,
  noFallthroughCasesInSwitch: true,
  // No enums, namespaces or parameter properties: Node's type stripping runs the file as it is.
  erasableSyntaxOnly: true,
  skipLibCheck: false,
  types: [],
  noEmit: true,
};

function tsc(pkg: string, cwd: string, ...args: string[]): { ok: boolean; output: string } {
  try {
    const output = execFileSync(process.execPath, [join(root, 'node_modules', pkg, 'bin', 'tsc'), ...args], { cwd, encoding: 'utf8', stdio: 'pipe' });
    return { ok: true, output };
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string };
    return { ok: false, output: (err.stdout ?? '') + (err.stderr ?? '') };
  }
}

/** Every golden case with a generated TypeScript file: [case, file name]. */
function generatedCases(): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const c of readdirSync(goldens).sort()) {
    const dir = join(goldens, c, 'ts');
    if (!existsSync(dir)) continue;
    for (const f of readdirSync(dir)) out.push([c, f]);
  }
  return out;
}

const typeTests = join(root, 'test', 'generated', 'chat-types.ts');

// A user's project: the package installed under node_modules (built here
// from src/, never the tree's dist/, which other builds rewrite), the
// generated files under cases/, the type tests under types/.
let project = '';
before(() => {
  project = mkdtempSync(join(tmpdir(), 'tio-generated-'));
  const pkg = join(project, 'node_modules', '@tiogen', 'runtime');
  const built = tsc('typescript', root, '-p', 'tsconfig.build.json', '--outDir', join(pkg, 'dist'));
  assert.ok(built.ok, built.output);
  copyFileSync(join(root, 'package.json'), join(pkg, 'package.json'));
  for (const [c, f] of generatedCases()) {
    mkdirSync(join(project, 'cases', c), { recursive: true });
    copyFileSync(join(goldens, c, 'ts', f), join(project, 'cases', c, f));
  }
  mkdirSync(join(project, 'example'));
  copyFileSync(join(repo, 'examples', 'chat', 'web', 'chat.tio.ts'), join(project, 'example', 'chat.tio.ts'));
  mkdirSync(join(project, 'types'));
  copyFileSync(typeTests, join(project, 'types', 'chat-types.ts'));
  writeFileSync(join(project, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions: strictOptions, include: ['cases', 'example', 'types'] }));
});
after(() => {
  if (project !== '') rmSync(project, { recursive: true, force: true });
});

test('§4.3 every golden case that generates Go generates TypeScript too', () => {
  const ts = new Set(generatedCases().map(([c]) => c));
  const missing = readdirSync(goldens).filter((c) => existsSync(join(goldens, c, 'go')) && !ts.has(c));
  assert.deepEqual(missing, []);
  assert.ok(ts.has('chat') && ts.has('types') && ts.has('ts-clash-names'), [...ts].join(' '));
});

for (const [pkg, version] of compilers) {
  test(`§3.2 §4.3 TypeScript ${version} compiles every generated golden, the example and the type tests under strict flags`, () => {
    const v = tsc(pkg, project, '--version');
    assert.equal(v.output.trim(), `Version ${version}`);
    const r = tsc(pkg, project, '-p', 'tsconfig.json');
    assert.ok(r.ok, r.output);
  });
}

test('§3.2 §6.1 each refused line of the type tests (server-only emit, wrong payload, missing field, awaited emit, iterated returns call) fails alone, and nothing else does', () => {
  const src = readFileSync(typeTests, 'utf8');
  const lines = src.split('\n');
  const expected: number[] = [];
  const stripped = lines.map((l, i) => {
    if (!l.trimStart().startsWith('// @ts-expect-error')) return l;
    expected.push(i + 2); // the line after the directive, 1-based
    return '';
  });
  assert.ok(expected.length >= 11, `only ${expected.length} refused lines`);
  writeFileSync(join(project, 'types', 'chat-types.ts'), stripped.join('\n'));
  try {
    const r = tsc('typescript', project, '-p', 'tsconfig.json');
    assert.equal(r.ok, false);
    const failing = new Set<number>();
    for (const m of r.output.matchAll(/^types\/chat-types\.ts\((\d+),\d+\): error/gm)) failing.add(Number(m[1]));
    assert.deepEqual([...failing].sort((a, b) => a - b), expected, r.output);
    assert.doesNotMatch(r.output, /^(?!types\/chat-types\.ts)\S+\(\d+,\d+\): error/m, 'errors outside the refused lines');
  } finally {
    copyFileSync(typeTests, join(project, 'types', 'chat-types.ts'));
  }
});

test('§4.3 a runtime older than the generator fails at compile time: the generated file needs GeneratedClientOptionsV1', () => {
  // The installed package with the name removed from its declarations, as
  // a runtime from before this generator would be.
  const index = join(project, 'node_modules', '@tiogen', 'runtime', 'dist', 'index.d.ts');
  const current = readFileSync(index, 'utf8');
  assert.match(current, /\bGeneratedClientOptionsV1\b/);
  writeFileSync(index, current.replace(/, GeneratedClientOptionsV1\b/, ''));
  try {
    const r = tsc('typescript', project, '-p', 'tsconfig.json');
    assert.equal(r.ok, false);
    assert.match(r.output, /cases\/chat\/chat\.tio\.ts\(\d+,\d+\): error TS2694: Namespace '.*' has no exported member 'GeneratedClientOptionsV1'/);
  } finally {
    writeFileSync(index, current);
  }
});

// What generated code adds to a page: the chat client's bundle (with the
// connectors, as bundle-size.test.ts measures the Client's) against the
// Client's; and the typed helpers only generated code calls are not in a
// bundle without it.
test('generated code size: the typed helpers tree-shake out of a Client-only bundle; the chat client over it, minified + gzip', async (t) => {
  const src = join(root, 'src');
  const connectors = `export { connectWebTransport } from './webtransport.js'; export { connectWebSocket } from './websocket.js';`;
  const bundle = async (contents: string, external: string[] = []): Promise<{ text: string; min: number; gzip: number }> => {
    const r = await build({
      external,
      stdin: { contents, resolveDir: src, sourcefile: 'entry.ts', loader: 'ts' },
      bundle: true,
      minify: true,
      format: 'esm',
      target: 'es2022',
      platform: 'browser',
      write: false,
      logLevel: 'silent',
      alias: external.length === 0 ? { '@tiogen/runtime': join(src, 'index.ts') } : {},
    });
    const out = r.outputFiles[0];
    assert.ok(out !== undefined);
    return { text: out.text, min: out.contents.length, gzip: gzipSync(out.contents, { level: 9 }).length };
  };
  const client = await bundle(`export { Client } from './index.js'; ${connectors}`);
  for (const helper of ['nests deeper than', 'must not contain a lone surrogate', 'standard padded base64']) {
    assert.ok(!client.text.includes(helper), `the Client-only bundle holds the typed helpers ("${helper}")`);
  }
  const example = join(project, 'example', 'chat.tio.ts');
  const chat = await bundle(`export { createChatClient } from ${JSON.stringify(example)}; ${connectors}`);
  assert.ok(chat.text.includes('nests deeper than'), 'the chat bundle holds the typed helpers');
  const figures = [`generated chat client: ${chat.min} B minified, ${chat.gzip} B gzipped; the Client alone ${client.min} B, ${client.gzip} B: the contract's code and the typed helpers add ${chat.gzip - client.gzip} B gzipped`];
  // Each generated file on its own, the runtime left out.
  for (const [name, file] of [['chat', example], ['conformance', join(root, 'test', 'node-go', 'conformance.tio.ts')]] as const) {
    const own = await bundle(`export * from ${JSON.stringify(file)};`, ['@tiogen/runtime']);
    figures.push(`generated ${name}.tio.ts alone (every export kept, the runtime external): ${own.min} B minified, ${own.gzip} B gzipped`);
  }
  for (const f of figures) {
    t.diagnostic(f);
    console.log(f);
  }
});
