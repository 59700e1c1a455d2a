// The cross-language fixtures (testdata/golden/<case>/fixtures.json) run
// through each golden case's generated TypeScript (<case>/ts/): every valid
// payload decodes after JSON.parse and re-encodes to exactly its canonical
// bytes (a fixed point), every invalid one throws a ValidationError with
// the fixture's path and rule, worded "field '<path>' <rule>" (or "the
// payload <rule>") and nothing after it but ", not …". tests/xlang runs the
// same files through the generated Go, so both languages accept, refuse and
// write the same JSON (docs/contract-language.md, "JSON on the wire").

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { ValidationError } from '../src/index.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const goldens = join(root, '..', '..', 'testdata', 'golden');

interface Fixtures {
  readonly contract: string;
  readonly types: Record<
    string,
    {
      readonly valid: ReadonlyArray<{ readonly name: string; readonly input: string; readonly canonical: string }>;
      readonly invalid: ReadonlyArray<{ readonly name: string; readonly input: string; readonly path: string; readonly rule: string }>;
    }
  >;
}

const cases = readdirSync(goldens).filter((c) => existsSync(join(goldens, c, 'fixtures.json')));
// The conformance server's contract (testdata/conformance) has fixtures too;
// its TypeScript is generated into test/node-go for the Node and browser
// tests.
const conformance = join(root, '..', '..', 'testdata', 'conformance');
const fixturesOf = (c: string): string => (c === 'conformance' ? join(conformance, 'fixtures.json') : join(goldens, c, 'fixtures.json'));

// The TypeScript name of a contract type where the generated file escapes
// it (docs/typescript.md, "Names and escaping"); every other type keeps its
// contract name. Fixtures name types as the contract does.
const escaped: Record<string, Record<string, string>> = {
  'ts-clash-names': { Record: 'Record_', ClashClient: 'ClashClient_' },
};
const tsName = (c: string, type: string): string => escaped[c]?.[type] ?? type;

// The generated files import '@tiogen/runtime'; it resolves to this
// runtime's src/, the modules this test imports, so instanceof holds.
let dir = '';
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'tio-fixtures-'));
  const pkg = join(dir, 'node_modules', '@tiogen', 'runtime');
  mkdirSync(pkg, { recursive: true });
  symlinkSync(join(root, 'src'), join(pkg, 'src'));
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: '@tiogen/runtime', type: 'module', exports: { '.': './src/index.ts' } }));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
});
after(() => {
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

async function generated(c: string): Promise<Record<string, unknown>> {
  if (c === 'conformance') {
    mkdirSync(join(dir, c), { recursive: true });
    copyFileSync(join(root, 'test', 'node-go', 'conformance.tio.ts'), join(dir, c, 'conformance.tio.ts'));
    return (await import(pathToFileURL(join(dir, c, 'conformance.tio.ts')).href)) as Record<string, unknown>;
  }
  const tsDir = join(goldens, c, 'ts');
  assert.ok(existsSync(tsDir), `${c} has fixtures.json but no generated TypeScript in ${tsDir}`);
  const files = readdirSync(tsDir).filter((f) => f.endsWith('.tio.ts'));
  assert.equal(files.length, 1, `${tsDir}: one generated file`);
  mkdirSync(join(dir, c), { recursive: true });
  copyFileSync(join(tsDir, files[0] as string), join(dir, c, files[0] as string));
  return (await import(pathToFileURL(join(dir, c, files[0] as string)).href)) as Record<string, unknown>;
}

test('§5.3 cross-language fixtures exist for the golden cases with JSON types', () => {
  for (const c of readdirSync(goldens)) {
    // Every case with generated Go and TypeScript and records has fixtures
    // (a case Go refuses, go-clash-*, has nothing to compare with).
    if (!existsSync(join(goldens, c, 'ts')) || !existsSync(join(goldens, c, 'go'))) continue;
    const ir = JSON.parse(readFileSync(join(goldens, c, 'ir.json'), 'utf8')) as { types: unknown[] };
    if (ir.types.length > 0) assert.ok(cases.includes(c), `${c} has records but no fixtures.json`);
  }
  for (const c of cases) {
    // Every record the contract declares has fixtures, and only those.
    const ir = JSON.parse(readFileSync(join(goldens, c, 'ir.json'), 'utf8')) as { types: Array<{ name: string }> };
    const fx = JSON.parse(readFileSync(join(goldens, c, 'fixtures.json'), 'utf8')) as Fixtures;
    assert.deepEqual(Object.keys(fx.types).sort(), ir.types.map((t) => t.name).sort(), `${c}: fixture types`);
  }
});

for (const c of [...cases, 'conformance']) {
  const fx = JSON.parse(readFileSync(fixturesOf(c), 'utf8')) as Fixtures;
  for (const [type, entries] of Object.entries(fx.types)) {
    test(`§5.3 cross-language fixtures ${c} ${type}: accepted and re-encoded to the same bytes as Go`, async (t) => {
      const mod = await generated(c);
      const name = tsName(c, type);
      const decode = mod['decode' + name] as ((v: unknown) => unknown) | undefined;
      const encode = mod['encode' + name] as ((v: unknown) => string) | undefined;
      assert.ok(decode !== undefined && encode !== undefined, `${c}: no decode${name}/encode${name}`);
      assert.ok(entries.valid.length > 0);
      for (const v of entries.valid) {
        await t.test(v.name, () => {
          for (const input of [v.input, v.canonical]) {
            let out: string;
            try {
              out = encode(decode(JSON.parse(input)));
            } catch (e) {
              assert.fail(`refused ${input.slice(0, 200)}: ${(e as Error).message.slice(0, 400)}`);
            }
            assert.equal(out, v.canonical, `re-encoded ${input.slice(0, 200)}`);
          }
        });
      }
    });
    test(`§5.3 §6.4 cross-language fixtures ${c} ${type}: refused at the same path with the same rule as Go`, async (t) => {
      const mod = await generated(c);
      const decode = mod['decode' + tsName(c, type)] as ((v: unknown) => unknown) | undefined;
      assert.ok(decode !== undefined, `${c}: no decode${tsName(c, type)}`);
      assert.ok(entries.invalid.length > 0);
      for (const v of entries.invalid) {
        await t.test(v.name, () => {
          let err: unknown;
          try {
            decode(JSON.parse(v.input));
          } catch (e) {
            err = e;
          }
          assert.ok(err instanceof ValidationError, `accepted, or failed with ${String(err)}`);
          assert.equal(err.path, v.path);
          const head = v.path === '' ? `the payload ${v.rule}` : `field '${v.path}' ${v.rule}`;
          const rest = err.message.startsWith(head) ? err.message.slice(head.length) : undefined;
          assert.ok(rest !== undefined && (rest === '' || rest.startsWith(', not ')), `${err.message.slice(0, 400)} is not ${head}[, not …]`);
        });
      }
    });
  }
}
