// The errors users see (§10): every WT_* code with its number and the Go
// runtime's remedy, and no URL query in any message.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { RefusedError, StreamResetError, TransportError } from '../src/errors.js';
import { LocalCodes, MessageCodes, ResetCode, SessionCode, codeNumber, remedy, resetCodeName, sessionCodeName } from '../src/codes.js';

test('§10 every code carries its number: §10.2 close codes, §10.1 reset bytes, none for local and per-message codes', () => {
  for (const [name, n] of Object.entries(SessionCode)) {
    assert.equal(new TransportError(name as keyof typeof SessionCode, 'm').number, n);
    assert.equal(sessionCodeName(n), name);
  }
  assert.equal(new TransportError('WT_ABORTED', 'm').number, 1);
  assert.equal(new TransportError('WT_TOO_MANY_STREAMS', 'm').number, 9);
  assert.equal(resetCodeName(ResetCode.WT_TOO_MANY_STREAMS), 'WT_TOO_MANY_STREAMS');
  assert.equal(resetCodeName(5), undefined);
  assert.equal(sessionCodeName(1999), undefined);
  for (const c of [...LocalCodes, ...MessageCodes]) assert.equal(new TransportError(c, 'm').number, undefined);
  assert.equal(new TransportError('WT_APP_OWN', 'm').remedy, '');
});

test('§10 codeNumber and remedy know the codes alone, not the names every object inherits', () => {
  assert.equal(codeNumber('WT_UNAUTHORIZED'), 1007);
  assert.equal(codeNumber('WT_NO_ERROR'), 0);
  assert.equal(codeNumber('WT_ABORTED'), 1);
  for (const name of ['toString', 'constructor', '__proto__', 'hasOwnProperty', 'valueOf', 'WT_APP_OWN']) {
    assert.equal(codeNumber(name), undefined, name);
    assert.equal(remedy(name), '', name);
  }
});

test('§10 the remedies are the Go runtime’s, word for word', () => {
  // Read from runtime/wire/code.go so the two tables cannot drift apart.
  const go = readFileSync(fileURLToPath(new URL('../../wire/code.go', import.meta.url)), 'utf8');
  const consts = new Map([...go.matchAll(/^\t(\w+)\s+Code = "(WT_\w+)"/gm)].map((m) => [m[1] as string, m[2] as string]));
  const table = go.slice(go.indexOf('var remedies = map[Code]string{'));
  const rows = [...table.matchAll(/^\t(\w+):\s+"((?:[^"\\]|\\.)*)",$/gm)];
  assert.ok(rows.length >= 26, `read ${rows.length} remedies from code.go`);
  for (const [, ident, text] of rows) {
    const code = consts.get(ident as string);
    assert.ok(code, ident);
    assert.equal(remedy(code), JSON.parse(`"${text}"`), code);
  }
  assert.equal(rows.length, Object.keys(SessionCode).length + 2 + LocalCodes.length + MessageCodes.length);
});

test('§4.3 messages never carry a URL query string', () => {
  const e = new TransportError('WT_HANDSHAKE_FAILED', 'dial https://127.0.0.1:4433/tio?token=secret failed; also wss://h/p?x=1&y=2 and "https://q/?t=s"');
  assert.equal(e.message, 'dial https://127.0.0.1:4433/tio?… failed; also wss://h/p?… and "https://q/?…"');
  assert.ok(!String(e).includes('secret'));
  assert.equal(String(e), `WT_HANDSHAKE_FAILED: ${e.message} (${e.remedy})`);
});

test('§4 §8 RefusedError and StreamResetError', () => {
  const r = new RefusedError('bad-token');
  assert.ok(r instanceof TransportError);
  assert.equal(r.code, 'WT_UNAUTHORIZED');
  assert.equal(r.number, 1007);
  assert.equal(r.reason, 'bad-token');
  assert.equal(r.name, 'RefusedError');
  const s = new StreamResetError(undefined, true);
  assert.equal(s.code, undefined);
  assert.equal(s.remote, true);
  assert.equal(s.name, 'StreamResetError');
});

test('a TransportError owns a cause only when it was given one, and a remedy it was given replaces the code’s', () => {
  const cause = new Error('reset');
  const plain = new TransportError('WT_PROTOCOL_ERROR', 'm');
  assert.ok(!Object.hasOwn(plain, 'cause'));
  const advised = new TransportError('WT_NO_ERROR', 'm', { remedy: 'Reconnect.' });
  assert.ok(!Object.hasOwn(advised, 'cause'));
  assert.equal(advised.remedy, 'Reconnect.');
  const caused = new TransportError('WT_SESSION_CLOSED', 'm', { cause });
  assert.equal(caused.cause, cause);
  assert.equal(caused.remedy, remedy('WT_SESSION_CLOSED'));
});
