// withFallback's decisions (§2, §3.3, §10.3), over connectors the test
// scripts. Which code falls back is the Go runtime's fallback.ShouldFallBack.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { CodeName } from '../src/codes.js';
import { TransportError } from '../src/errors.js';
import { shouldFallBack, withFallback } from '../src/fallback.js';
import type { Conn, ConnectContext, Connector, Opened } from '../src/transport.js';
import { context, ManualClock } from './connector-fakes.js';

function fakeConn(mapping: Conn['mapping']): Conn {
  return {
    mapping,
    openEmit: () => Promise.reject(new Error('unused')),
    acceptEmit: () => Promise.reject(new Error('unused')),
    maxDatagramSize: () => 0,
    close: () => {},
    closed: new Promise(() => {}),
  };
}

/** A connector that answers each open with the next outcome and counts its opens. */
function scripted(...outcomes: (Conn | TransportError)[]): Connector & { opens: number } {
  const c = {
    opens: 0,
    async open(_ctx: ConnectContext): Promise<Opened> {
      const o = outcomes[c.opens++];
      if (o === undefined) throw new Error('opened more often than scripted');
      if (o instanceof TransportError) throw o;
      return { conn: o, fallbackReason: null };
    },
  };
  return c;
}

const ctx = (): ConnectContext => context(new ManualClock());

for (const code of ['WT_NO_SUPPORT', 'WT_HANDSHAKE_FAILED', 'WT_UDP_UNREACHABLE', 'WT_HANDSHAKE_TIMEOUT'] as const) {
  test(`§10.3 ${code} on the first mapping falls back, and the reason names it`, async () => {
    const ws = fakeConn('websocket');
    const primary = scripted(new TransportError(code, 'the first mapping said so'));
    const secondary = scripted(ws);
    const opened = await withFallback(primary, secondary).open(ctx());
    assert.equal(opened.conn, ws);
    assert.equal(opened.conn.mapping, 'websocket');
    assert.equal(opened.fallbackReason, `${code}: the first mapping said so`);
    assert.equal(secondary.opens, 1);
  });
}

for (const code of ['WT_UNAUTHORIZED', 'WT_CONTRACT_MISMATCH', 'WT_RELIABILITY_REFUSED', 'WT_SESSION_CLOSED', 'WT_CERT_EXPIRED', 'WT_DEV_ONLY'] as CodeName[]) {
  test(`§4 ${code} on the first mapping is final: no fallback`, async () => {
    const secondary = scripted(fakeConn('websocket'));
    const err = await withFallback(scripted(new TransportError(code, 'no')), secondary)
      .open(ctx())
      .catch((e: unknown) => e);
    assert.ok(err instanceof TransportError && err.code === code, String(err));
    assert.equal(secondary.opens, 0);
  });
}

test('an error that is no TransportError is final', async () => {
  assert.equal(shouldFallBack(new Error('x')), false);
  const secondary = scripted(fakeConn('websocket'));
  await assert.rejects(withFallback({ open: () => Promise.reject(new TypeError('boom')) }, secondary).open(ctx()), TypeError);
  assert.equal(secondary.opens, 0);
});

test('the first mapping carries the session when it can: no reason, no secondary opened', async () => {
  const wt = fakeConn('webtransport');
  const secondary = scripted(fakeConn('websocket'));
  const opened = await withFallback(scripted(wt), secondary).open(ctx());
  assert.equal(opened.conn, wt);
  assert.equal(opened.fallbackReason, null);
  assert.equal(secondary.opens, 0);
});

test('§10.3 both failing: the secondary’s code, and what each mapping said', async () => {
  const err = await withFallback(
    scripted(new TransportError('WT_UDP_UNREACHABLE', 'quic blocked')),
    scripted(new TransportError('WT_HANDSHAKE_FAILED', 'upgrade failed')),
  )
    .open(ctx())
    .catch((e: unknown) => e);
  assert.ok(err instanceof TransportError, String(err));
  assert.equal(err.code, 'WT_HANDSHAKE_FAILED');
  assert.match(err.message, /WT_UDP_UNREACHABLE: quic blocked/);
  assert.match(err.message, /WT_HANDSHAKE_FAILED: upgrade failed/);
});

test('an attempt the client gave up on does not fall back', async () => {
  const ac = new AbortController();
  const secondary = scripted(fakeConn('websocket'));
  const primary: Connector = {
    open: async () => {
      ac.abort();
      throw new TransportError('WT_HANDSHAKE_FAILED', 'gave up');
    },
  };
  await assert.rejects(withFallback(primary, secondary).open(context(new ManualClock(), ac.signal)));
  assert.equal(secondary.opens, 0);
});

test('§4.1 a session on the first mapping offers fallBack, which opens the secondary after a handshake timeout', async () => {
  const ws = fakeConn('websocket');
  const secondary = scripted(ws);
  const opened = await withFallback(scripted(fakeConn('webtransport')), secondary).open(ctx());
  assert.equal(secondary.opens, 0);
  assert.ok(opened.fallBack !== undefined);
  const next = await opened.fallBack(new TransportError('WT_HANDSHAKE_TIMEOUT', 'no handshake within 5000 ms'), ctx());
  assert.equal(next.conn, ws);
  assert.equal(next.fallbackReason, 'WT_HANDSHAKE_TIMEOUT: no handshake within 5000 ms');
  assert.equal('fallBack' in next, false, 'the secondary has nothing further to fall back to');
});
