// The TypeScript half of tests/xlang's
// TestSpec5_3_PayloadCodecsAgreeAcrossLanguages: reads the payloads the Go
// test wrote (argv[2]) as a received message is read (UTF-8, JSON.parse,
// the generated decoder of the case's type), re-encodes what was read with
// the generated encoder, and writes one verdict per payload (argv[3]): the
// bytes written, or the refusal's path and rule. Anything thrown that is
// no ValidationError, or any failure to re-encode a value the decoder
// gave, is a verdict of its own ("crash"), so it can never pass for a
// refusal.

import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { ValidationError } from '../../src/index.js';
import { utf8Decode } from '../../src/wire/utf8.js';

interface PayloadCase {
  case: string;
  type: string;
  hex: string;
}

type Verdict =
  | { v: 'ok'; out: string }
  | { v: 'refused'; path: string; rule: string }
  | { v: 'not UTF-8' | 'not JSON' }
  | { v: 'crash'; message: string };

interface Codec {
  decode: (v: unknown) => unknown;
  encode: (v: unknown) => string;
}

const root = fileURLToPath(new URL('../..', import.meta.url));
const goldens = join(root, '..', '..', 'testdata', 'golden');

// The generated files import '@tiogen/runtime'; as in fixtures.test.ts it
// resolves to this runtime's src/, so instanceof ValidationError holds.
const dir = mkdtempSync(join(tmpdir(), 'tio-payloads-'));
const modules = new Map<string, Record<string, unknown>>();

async function codecOf(c: string, type: string): Promise<Codec> {
  let mod = modules.get(c);
  if (mod === undefined) {
    const src =
      c === 'conformance'
        ? join(root, 'test', 'node-go', 'conformance.tio.ts')
        : join(goldens, c, 'ts', readdirSync(join(goldens, c, 'ts')).find((f) => f.endsWith('.tio.ts')) ?? '');
    mkdirSync(join(dir, c), { recursive: true });
    const file = join(dir, c, 'generated.tio.ts');
    copyFileSync(src, file);
    mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    modules.set(c, mod);
  }
  const decode = mod['decode' + type] as Codec['decode'] | undefined;
  const encode = mod['encode' + type] as Codec['encode'] | undefined;
  if (decode === undefined || encode === undefined) throw new Error(`${c}: no decode${type}/encode${type}`);
  return { decode, encode };
}

function verdict(codec: Codec, payload: Uint8Array): Verdict {
  let text: string;
  try {
    text = utf8Decode(payload);
  } catch {
    return { v: 'not UTF-8' };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { v: 'not JSON' };
  }
  let decoded: unknown;
  try {
    decoded = codec.decode(value);
  } catch (e) {
    if (e instanceof ValidationError) return { v: 'refused', path: e.path, rule: e.rule };
    return { v: 'crash', message: `decode: ${String(e)}` };
  }
  try {
    return { v: 'ok', out: codec.encode(decoded) };
  } catch (e) {
    return { v: 'crash', message: `encode: ${String(e)}` };
  }
}

const [input, output] = process.argv.slice(2);
if (!input || !output) throw new Error('usage: payload-verdicts.ts <cases.json> <verdicts.json>');
try {
  const pkg = join(dir, 'node_modules', '@tiogen', 'runtime');
  mkdirSync(pkg, { recursive: true });
  symlinkSync(join(root, 'src'), join(pkg, 'src'));
  writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: '@tiogen/runtime', type: 'module', exports: { '.': './src/index.ts' } }));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  const cases = JSON.parse(readFileSync(input, 'utf8')) as PayloadCase[];
  const verdicts: Verdict[] = [];
  for (const c of cases) verdicts.push(verdict(await codecOf(c.case, c.type), new Uint8Array(Buffer.from(c.hex, 'hex'))));
  writeFileSync(output, JSON.stringify(verdicts));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
