// The package type-checks with every supported TypeScript version: its own
// sources and tests, and a user's file against the built dist/*.d.ts through
// package.json's exports, so a user on a newer compiler is not broken.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

// The pinned compilers (package.json: typescript, typescript6, typescript7).
const compilers = [
  ['typescript', '5.9.3'],
  ['typescript6', '6.0.3'],
  ['typescript7', '7.0.2'],
] as const;

function tsc(pkg: string, ...args: string[]): { ok: boolean; output: string } {
  try {
    const output = execFileSync(process.execPath, [`node_modules/${pkg}/bin/tsc`, ...args], { cwd: root, encoding: 'utf8', stdio: 'pipe' });
    return { ok: true, output };
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string };
    return { ok: false, output: (err.stdout ?? '') + (err.stderr ?? '') };
  }
}

for (const [pkg, version] of compilers) {
  test(`TypeScript ${version} type-checks the package, its tests and a user's file against dist`, () => {
    const v = tsc(pkg, '--version');
    assert.ok(v.ok, v.output);
    assert.equal(v.output.trim(), `Version ${version}`);
    const own = tsc(pkg, '-p', 'tsconfig.json', '--noEmit');
    assert.ok(own.ok, own.output);
    assert.ok(existsSync(`${root}/dist/index.d.ts`), 'dist/ is missing: run npm run build first (make test-ts does)');
    const user = tsc(pkg, '-p', 'tsconfig.consumer.json');
    assert.ok(user.ok, user.output);
  });
}
