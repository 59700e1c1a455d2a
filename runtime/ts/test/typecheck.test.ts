// The package type-checks with every supported TypeScript version: its own
// sources and tests, and a user's file against the built dist/*.d.ts through
// package.json's exports, so a user on a newer compiler is not broken.
//
// The user's file is checked against a build of its own, in a temporary
// directory, made here from the same src/ the own check reads: never against
// the package's dist/, which every `npm run build` in this tree rewrites file
// by file (another run's build while this test reads it), and which is stale
// whenever src/ changed after the last build.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

// The pinned compilers (package.json: typescript, typescript6, typescript7).
const compilers = [
  ['typescript', '5.9.3'],
  ['typescript6', '6.0.3'],
  ['typescript7', '7.0.2'],
] as const;

function tsc(pkg: string, cwd: string, ...args: string[]): { ok: boolean; output: string } {
  try {
    const output = execFileSync(process.execPath, [join(root, 'node_modules', pkg, 'bin', 'tsc'), ...args], { cwd, encoding: 'utf8', stdio: 'pipe' });
    return { ok: true, output };
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string };
    return { ok: false, output: (err.stdout ?? '') + (err.stderr ?? '') };
  }
}

// The package as a user installs it: package.json (its exports) and dist/,
// built as `npm run build` does; the user's file inside it resolves
// '@tiogen/runtime' through the exports.
let userPackage = '';
before(() => {
  userPackage = mkdtempSync(join(tmpdir(), 'tio-typecheck-'));
  const built = tsc('typescript', root, '-p', 'tsconfig.build.json', '--outDir', join(userPackage, 'dist'));
  assert.ok(built.ok, built.output);
  assert.ok(existsSync(join(userPackage, 'dist', 'index.d.ts')), 'the build wrote no dist/index.d.ts');
  mkdirSync(join(userPackage, 'test', 'consumer'), { recursive: true });
  for (const f of ['package.json', 'tsconfig.consumer.json', join('test', 'consumer', 'use.ts')]) copyFileSync(join(root, f), join(userPackage, f));
});
after(() => {
  if (userPackage !== '') rmSync(userPackage, { recursive: true, force: true });
});

for (const [pkg, version] of compilers) {
  test(`TypeScript ${version} type-checks the package, its tests and a user's file against dist`, () => {
    const v = tsc(pkg, root, '--version');
    assert.ok(v.ok, v.output);
    assert.equal(v.output.trim(), `Version ${version}`);
    const own = tsc(pkg, root, '-p', 'tsconfig.json', '--noEmit');
    assert.ok(own.ok, own.output);
    const user = tsc(pkg, userPackage, '-p', 'tsconfig.consumer.json');
    assert.ok(user.ok, user.output);
  });
}
