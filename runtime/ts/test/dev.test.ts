// connectDev (§10.3 WT_DEV_ONLY, WT_CERT_EXPIRED): loopback only, the
// served pin handed to WebTransport, an expired certificate refused. The
// manifest is the Go runtime's devcert.Manifest.

import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';

import { connectDev, isLoopbackHost, ManifestTimeoutMs } from '../src/dev.js';
import { TransportError } from '../src/errors.js';
import { context, FakeWebTransport, FakeWebTransportError, installGlobal, ManualClock, settle } from './connector-fakes.js';

const hash = Array.from({ length: 32 }, (_, i) => i * 7);
const now = Date.parse('2026-12-01T12:00:00Z');
const manifest = { sha256: hash, url: 'https://127.0.0.1:4433/conformance', expiresAt: '2026-12-08T12:00:00Z' };

function serve(t: TestContext, answer: (url: string, init: RequestInit) => Promise<Response>): string[] {
  installGlobal(t, 'WebTransport', FakeWebTransport);
  installGlobal(t, 'WebTransportError', FakeWebTransportError);
  const asked: string[] = [];
  installGlobal(t, 'fetch', (url: string, init: RequestInit) => {
    asked.push(url);
    return answer(url, init);
  });
  return asked;
}

const json = (body: unknown, status = 200): Promise<Response> => Promise.resolve(new Response(JSON.stringify(body), { status }));

async function codeOf(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => assert.fail('resolved'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof TransportError, String(err));
  return err.code;
}

test('§10.3 loopback is 127.0.0.0/8, ::1 and localhost', () => {
  for (const h of ['127.0.0.1', '127.1.2.3', '127.255.255.255', '[::1]', 'localhost']) assert.equal(isLoopbackHost(h), true, h);
  for (const h of ['128.0.0.1', '10.0.0.1', '0.0.0.0', '[::2]', '[::]', 'example.com', 'localhost.example.com', '127.0.0.1.nip.io']) assert.equal(isLoopbackHost(h), false, h);
});

test('§10.3 WT_DEV_ONLY for a server off loopback, before any request', async (t) => {
  const asked = serve(t, () => json(manifest));
  for (const base of ['https://192.168.1.5:4433', 'https://example.com', 'https://[::2]:4433', 'https://127.0.0.1.nip.io']) {
    assert.equal(await codeOf(connectDev(base).open(context(new ManualClock()))), 'WT_DEV_ONLY', base);
  }
  assert.deepEqual(asked, []);
});

test('§10.3 the served pin and session URL go to WebTransport; no I/O until open', async (t) => {
  const asked = serve(t, () => json(manifest));
  const before = FakeWebTransport.count;
  const connector = connectDev('https://127.0.0.1:4433', { now: () => now });
  assert.deepEqual(asked, []);
  const p = connector.open(context(new ManualClock()));
  await settle();
  assert.deepEqual(asked, ['https://127.0.0.1:4433/.well-known/transport-io-dev']);
  assert.equal(FakeWebTransport.count, before + 1);
  const wt = FakeWebTransport.last!;
  assert.equal(wt.url, 'https://127.0.0.1:4433/conformance');
  assert.deepEqual(wt.options, { requireUnreliable: true, serverCertificateHashes: [{ algorithm: 'sha-256', value: new Uint8Array(hash) }] });
  wt.resolveReady();
  assert.equal((await p).conn.mapping, 'webtransport');
});

test('a query on the base URL (a token) is carried to the session URL', async (t) => {
  serve(t, () => json(manifest));
  const p = connectDev('https://[::1]:4433/?token=s3cret', { now: () => now }).open(context(new ManualClock()));
  await settle();
  assert.equal(FakeWebTransport.last!.url, 'https://127.0.0.1:4433/conformance?token=s3cret');
  FakeWebTransport.last!.resolveReady();
  await p;
});

test('§10.3 WT_CERT_EXPIRED for a certificate past its validity, with no session opened', async (t) => {
  serve(t, () => json(manifest));
  const before = FakeWebTransport.count;
  const expired = Date.parse(manifest.expiresAt);
  assert.equal(await codeOf(connectDev('https://127.0.0.1:4433', { now: () => expired }).open(context(new ManualClock()))), 'WT_CERT_EXPIRED');
  assert.equal(FakeWebTransport.count, before);
});

test('§10.3 a manifest naming a session off loopback is WT_DEV_ONLY', async (t) => {
  serve(t, () => json({ ...manifest, url: 'https://203.0.113.9:4433/conformance' }));
  assert.equal(await codeOf(connectDev('https://127.0.0.1:4433', { now: () => now }).open(context(new ManualClock()))), 'WT_DEV_ONLY');
});

test('§10.3 a manifest naming a session of another scheme is WT_DEV_ONLY, named by scheme, host and path, never its query', async (t) => {
  for (const url of ['foo://127.0.0.1:4433/conformance?token=secret', 'http://127.0.0.1:4433/conformance?token=secret']) {
    serve(t, () => json({ ...manifest, url }));
    const err = await connectDev('https://127.0.0.1:4433', { now: () => now })
      .open(context(new ManualClock()))
      .then(
        () => assert.fail('resolved'),
        (e: unknown) => e,
      );
    assert.ok(err instanceof TransportError, String(err));
    assert.equal(err.code, 'WT_DEV_ONLY');
    assert.match(err.message, new RegExp(`\\(${url.split('://')[0]}://127\\.0\\.0\\.1:4433/conformance\\)`), err.message);
    assert.doesNotMatch(err.message, /secret/);
  }
});

test('§10.3 the server refusing a peer off loopback (403) is WT_DEV_ONLY', async (t) => {
  serve(t, () => Promise.resolve(new Response('WT_DEV_ONLY', { status: 403 })));
  assert.equal(await codeOf(connectDev('https://127.0.0.1:4433').open(context(new ManualClock()))), 'WT_DEV_ONLY');
});

test('a missing or malformed manifest is WT_HANDSHAKE_FAILED', async (t) => {
  const bodies: (() => Promise<Response>)[] = [
    () => Promise.reject(new TypeError('Failed to fetch')),
    () => json({}, 404),
    () => Promise.resolve(new Response('not json')),
    () => json({ ...manifest, sha256: hash.slice(1) }),
    () => json({ ...manifest, sha256: [...hash.slice(1), 256] }),
    () => json({ ...manifest, expiresAt: 'soon' }),
    () => json({ ...manifest, url: 'not a url' }),
  ];
  let i = 0;
  serve(t, () => bodies[i++]!());
  for (let k = 0; k < bodies.length; k++) {
    assert.equal(await codeOf(connectDev('https://127.0.0.1:4433', { now: () => now }).open(context(new ManualClock()))), 'WT_HANDSHAKE_FAILED', `body ${k}`);
  }
});

test('a manifest that does not arrive within its deadline is WT_HANDSHAKE_FAILED', async (t) => {
  serve(t, (_url, init) => new Promise<Response>((_res, rej) => init.signal?.addEventListener('abort', () => rej(new DOMException('aborted', 'AbortError')))));
  const clock = new ManualClock();
  const p = codeOf(connectDev('https://127.0.0.1:4433').open(context(clock)));
  await clock.advance(ManifestTimeoutMs);
  assert.equal(await p, 'WT_HANDSHAKE_FAILED');
});
