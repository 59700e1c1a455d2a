// The WebTransport connector against a browser WebTransport the test
// drives (Node has none): the §10.3 decisions, the §2 refusal, close codes
// from `closed` also when a stream fails first (§4), Firefox's uncoded
// resets, and the lanes. The same connector runs in Chromium and Firefox
// in tests/browser.

import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';

import { StreamResetError, TransportError } from '../src/errors.js';
import type { Conn, SendStream } from '../src/transport.js';
import { CloseWaitMs, connectWebTransport, DefaultConnectTimeoutMs, ProbeTimeoutMs } from '../src/webtransport.js';
import { context, FakeWebTransport, FakeWebTransportError, FedStream, installGlobal, ManualClock, settle, SinkStream } from './connector-fakes.js';

const url = 'https://127.0.0.1:4433/conformance?token=s3cret';

function browser(t: TestContext, fetchImpl?: (input: string, init: RequestInit) => Promise<Response>): { fetches: { input: string; init: RequestInit }[] } {
  installGlobal(t, 'WebTransport', FakeWebTransport);
  installGlobal(t, 'WebTransportError', FakeWebTransportError);
  const fetches: { input: string; init: RequestInit }[] = [];
  installGlobal(t, 'fetch', (input: string, init: RequestInit) => {
    fetches.push({ input, init });
    return fetchImpl ? fetchImpl(input, init) : Promise.reject(new TypeError('Failed to fetch'));
  });
  return { fetches };
}

async function open(t: TestContext, clock = new ManualClock()): Promise<{ conn: Conn; wt: FakeWebTransport; clock: ManualClock }> {
  browser(t);
  const opening = connectWebTransport(url).open(context(clock));
  const wt = FakeWebTransport.last!;
  wt.resolveReady();
  const { conn, fallbackReason } = await opening;
  assert.equal(fallbackReason, null);
  return { conn, wt, clock };
}

async function outcome(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (v) => ({ resolved: v }),
    (e: unknown) => e,
  );
}

function wantCode(err: unknown, code: string, message?: RegExp): TransportError {
  assert.ok(err instanceof TransportError, `want a TransportError ${code}, got ${String(err)}`);
  assert.equal(err.code, code, err.message);
  if (message !== undefined) assert.match(err.message, message);
  return err;
}

test('§10.3 WT_NO_SUPPORT when the runtime has no WebTransport', async (t) => {
  installGlobal(t, 'WebTransport', undefined);
  wantCode(await outcome(connectWebTransport(url).open(context(new ManualClock()))), 'WT_NO_SUPPORT');
});

test('§2 the connector does no I/O until open, then asks for a session with datagrams and the pinned hashes', async (t) => {
  browser(t);
  const before = FakeWebTransport.count;
  const hash = { algorithm: 'sha-256', value: new Uint8Array(32).fill(7) };
  const connector = connectWebTransport(url, { serverCertificateHashes: [hash] });
  assert.equal(FakeWebTransport.count, before);
  const p = connector.open(context(new ManualClock()));
  const wt = FakeWebTransport.last!;
  assert.equal(FakeWebTransport.count, before + 1);
  assert.equal(wt.url, url);
  assert.deepEqual(wt.options, { requireUnreliable: true, serverCertificateHashes: [hash] });
  wt.resolveReady();
  assert.equal((await p).conn.mapping, 'webtransport');
});

test('§10.3 a failed handshake with the origin answering HEAD /.well-known/transport-io is WT_UDP_UNREACHABLE', async (t) => {
  const { fetches } = browser(t, async () => new Response(null, { status: 200 }));
  const p = outcome(connectWebTransport(url).open(context(new ManualClock())));
  FakeWebTransport.last!.rejectReady(new FakeWebTransportError({ message: 'Opening handshake failed.', source: 'session' }));
  const err = wantCode(await p, 'WT_UDP_UNREACHABLE', /Opening handshake failed/);
  assert.equal(fetches.length, 1);
  assert.equal(fetches[0]!.input, 'https://127.0.0.1:4433/.well-known/transport-io');
  assert.equal(fetches[0]!.init.method, 'HEAD');
  assert.doesNotMatch(String(err), /s3cret/);
});

test('§10.3 an opaque answer (a page of another origin, no-cors) counts as answering', async (t) => {
  browser(t, async () => ({ type: 'opaque', ok: false, status: 0 }) as Response);
  const p = outcome(connectWebTransport(url).open(context(new ManualClock())));
  FakeWebTransport.last!.rejectReady(new Error('Opening handshake failed.'));
  wantCode(await p, 'WT_UDP_UNREACHABLE');
});

test('§10.3 a failed handshake with the origin not answering is WT_HANDSHAKE_FAILED', async (t) => {
  const { fetches } = browser(t);
  const p = outcome(connectWebTransport(url).open(context(new ManualClock())));
  FakeWebTransport.last!.rejectReady(new Error('Opening handshake failed.'));
  wantCode(await p, 'WT_HANDSHAKE_FAILED', /^https:\/\/127\.0\.0\.1:4433: Opening handshake failed\.; HTTPS does not answer$/);
  assert.equal(fetches.length, 1);
});

test('§10.3 an answer that is no 2xx is no answer: WT_HANDSHAKE_FAILED', async (t) => {
  browser(t, async () => new Response(null, { status: 404 }));
  const p = outcome(connectWebTransport(url).open(context(new ManualClock())));
  FakeWebTransport.last!.rejectReady(new Error('Opening handshake failed.'));
  wantCode(await p, 'WT_HANDSHAKE_FAILED');
});

test('§10.3 the probe waits at most 2000 ms: a later answer is WT_HANDSHAKE_FAILED', async (t) => {
  let answer!: (r: Response) => void;
  let probeSignal: AbortSignal | undefined;
  browser(t, (_input, init) => {
    probeSignal = init.signal ?? undefined;
    return new Promise((resolve) => (answer = resolve));
  });
  const clock = new ManualClock();
  const p = outcome(connectWebTransport(url).open(context(clock)));
  FakeWebTransport.last!.rejectReady(new Error('Opening handshake failed.'));
  await settle();
  await clock.advance(ProbeTimeoutMs - 1);
  let settled = false;
  void p.then(() => (settled = true));
  await settle();
  assert.equal(settled, false);
  await clock.advance(1);
  wantCode(await p, 'WT_HANDSHAKE_FAILED');
  assert.equal(probeSignal?.aborted, true, 'the late probe is aborted');
  answer(new Response(null, { status: 200 }));
});

test('§10.3 ready raced against the deadline (Firefox waits 30 s on a dead UDP path): the session is closed and probed', async (t) => {
  const { fetches } = browser(t, async () => new Response(null, { status: 204 }));
  const clock = new ManualClock();
  const p = outcome(connectWebTransport(url).open(context(clock)));
  const wt = FakeWebTransport.last!;
  await clock.advance(DefaultConnectTimeoutMs - 1);
  assert.equal(fetches.length, 0);
  await clock.advance(1);
  wantCode(await p, 'WT_UDP_UNREACHABLE', new RegExp(`not ready in ${DefaultConnectTimeoutMs} ms; HTTPS answers$`));
  assert.equal(wt.closes.length, 1);
});

test('the deadline is the connectTimeoutMs option', async (t) => {
  browser(t);
  const clock = new ManualClock();
  const p = outcome(connectWebTransport(url, { connectTimeoutMs: 300 }).open(context(clock)));
  await clock.advance(300);
  wantCode(await p, 'WT_HANDSHAKE_FAILED', /not ready in 300 ms; HTTPS does not answer$/);
});

test('an aborted connect closes the session, probes nothing and rejects', async (t) => {
  const { fetches } = browser(t);
  const ac = new AbortController();
  const p = outcome(connectWebTransport(url).open(context(new ManualClock(), ac.signal)));
  const wt = FakeWebTransport.last!;
  ac.abort();
  wantCode(await p, 'WT_SESSION_CLOSED');
  assert.equal(wt.closes.length, 1);
  assert.equal(fetches.length, 0);
});

test('§2 a session the browser reports reliable-only is closed WT_RELIABILITY_REFUSED before the handshake', async (t) => {
  browser(t);
  const p = outcome(connectWebTransport(url).open(context(new ManualClock())));
  const wt = FakeWebTransport.last!;
  wt.reliability = 'reliable-only';
  wt.resolveReady();
  wantCode(await p, 'WT_RELIABILITY_REFUSED', /reliable-only/);
  assert.equal((wt.closes[0] as { closeCode: number }).closeCode, 1006);
  assert.equal(wt.uni.length, 0, 'no emit stream, so no handshake');
});

test('§2 supports-unreliable (Firefox) and undefined (Chromium) are accepted', async (t) => {
  browser(t);
  for (const reliability of ['supports-unreliable', undefined]) {
    const p = connectWebTransport(url).open(context(new ManualClock()));
    const wt = FakeWebTransport.last!;
    wt.reliability = reliability;
    wt.resolveReady();
    assert.equal((await p).conn.mapping, 'webtransport');
  }
});

test('§10.2 the close code and reason come from closed; a rejected closed is a lost session (§11)', async (t) => {
  {
    const { conn, wt } = await open(t);
    wt.resolveClosed({ closeCode: 1001, reason: "event 'move' is 'unreliable' here and 'reliable' at the peer" });
    assert.deepEqual(await conn.closed, { code: 1001, reason: "event 'move' is 'unreliable' here and 'reliable' at the peer", remote: true, lost: false });
  }
  {
    const { conn, wt } = await open(t);
    wt.rejectClosed(new FakeWebTransportError({ message: 'Connection lost.', source: 'session' }));
    assert.deepEqual(await conn.closed, { code: 0, reason: '', remote: false, lost: true });
    wantCode(await outcome(conn.openEmit()), 'WT_SESSION_CLOSED', /lost/);
  }
});

test('§10.2 this side’s close sends the code and the reason cut to 1024 bytes; the first close wins', async (t) => {
  const { conn, wt } = await open(t);
  conn.close(1004, 'é'.repeat(600));
  conn.close(0, 'again');
  assert.equal(wt.closes.length, 1);
  const sent = wt.closes[0] as { closeCode: number; reason: string };
  assert.equal(sent.closeCode, 1004);
  assert.equal(sent.reason, 'é'.repeat(512));
  wt.resolveClosed({ closeCode: 1004, reason: sent.reason });
  assert.deepEqual(await conn.closed, { code: 1004, reason: 'é'.repeat(512), remote: false, lost: false });
});

test('§4 the emit stream failing before the refusal arrives: the refusal is reported, not a lost session', async (t) => {
  const { conn, wt, clock } = await open(t);
  wt.openFails = new FakeWebTransportError({ message: '', source: 'session' });
  const p = outcome(conn.openEmit());
  await settle();
  await clock.advance(CloseWaitMs / 2);
  wt.resolveClosed({ closeCode: 1007, reason: 'bad-token' });
  wantCode(await p, 'WT_SESSION_CLOSED', /refused: bad-token/);
  assert.deepEqual(await conn.closed, { code: 1007, reason: 'bad-token', remote: true, lost: false });
});

test('§4 a write on the emit stream failing first waits for the close too', async (t) => {
  const { conn, wt } = await open(t);
  const send = await conn.openEmit();
  wt.uni[0]!.fail(new TypeError('stream closed'));
  const p = outcome(send.write(new Uint8Array([1])));
  await settle();
  wt.resolveClosed({ closeCode: 1007, reason: 'bad-token' });
  wantCode(await p, 'WT_SESSION_CLOSED', /bad-token/);
});

test('§10.1 a peer’s reset with its code is a StreamResetError at once', async (t) => {
  const { conn, wt } = await open(t);
  const call = await conn.openCall!();
  wt.bidi[0]!.source.fail(new FakeWebTransportError({ message: 'reset', source: 'stream', streamErrorCode: 9 }));
  const err = await outcome(call.read());
  assert.ok(err instanceof StreamResetError, String(err));
  assert.equal(err.code, 9);
  assert.equal(err.remote, true);
});

test('§10.1 a reset reported with no code (Firefox: TypeError) is a reset with an unknown code, never a crash', async (t) => {
  const { conn, wt, clock } = await open(t);
  const call = await conn.openCall!();
  wt.bidi[0]!.source.fail(new TypeError('Error in input stream'));
  const p = outcome(call.read());
  await settle();
  await clock.advance(CloseWaitMs);
  const err = await p;
  assert.ok(err instanceof StreamResetError, String(err));
  assert.equal(err.code, undefined);
  assert.equal(err.remote, true);
  assert.equal(await Promise.race([conn.closed.then(() => 'closed'), Promise.resolve('open')]), 'open');
});

test('§11 a stream failing because the session ended reports the session’s end', async (t) => {
  const { conn, wt } = await open(t);
  const recvP = conn.acceptEmit();
  const peer = new FedStream<Uint8Array>();
  wt.incoming.push(peer.stream);
  const recv = await recvP;
  peer.push(new Uint8Array([1, 2]));
  assert.deepEqual(await recv.read(), new Uint8Array([1, 2]));
  const reading = outcome(recv.read());
  peer.fail(new TypeError('Error in input stream'));
  wt.resolveClosed({ closeCode: 0, reason: 'server shutting down' });
  wantCode(await reading, 'WT_SESSION_CLOSED', /session closed by the peer: server shutting down/);
});

test('§3.1 the emit lane: this side’s unidirectional stream with one writer, the peer’s read to its FIN', async (t) => {
  const { conn, wt } = await open(t);
  // The engine only writes its emit stream; this connector's can also finish it.
  const send = (await conn.openEmit()) as SendStream;
  await Promise.all([send.write(new Uint8Array([1])), send.write(new Uint8Array([2, 3]))]);
  await send.close();
  assert.deepEqual(wt.uni[0]!.chunks, [new Uint8Array([1]), new Uint8Array([2, 3])]);
  assert.equal(wt.uni[0]!.closedCleanly, true);
  const recvP = conn.acceptEmit();
  const peer = new FedStream<Uint8Array>();
  wt.incoming.push(peer.stream);
  const recv = await recvP;
  peer.push(new Uint8Array([4]));
  peer.fin();
  assert.deepEqual(await recv.read(), new Uint8Array([4]));
  assert.equal(await recv.read(), null);
});

test('§8 reset and stop carry the §10.1 code to the browser', async (t) => {
  const { conn, wt } = await open(t);
  const call = await conn.openCall!();
  call.reset(1);
  call.stop(1);
  await settle();
  const aborted = wt.bidi[0]!.sink.aborted as FakeWebTransportError;
  const cancelled = wt.bidi[0]!.source.cancelled as FakeWebTransportError;
  assert.equal(aborted.streamErrorCode, 1);
  assert.equal(cancelled.streamErrorCode, 1);
  const w = await outcome(call.write(new Uint8Array([1])));
  assert.ok(w instanceof StreamResetError && w.code === 1 && !w.remote, String(w));
  const c = await outcome(call.close());
  assert.ok(c instanceof StreamResetError && c.code === 1 && !c.remote, String(c));
  const r = await outcome(call.read());
  assert.ok(r instanceof StreamResetError && r.code === 1 && !r.remote, String(r));
});

test('§7 datagrams: sent as given without waiting, received until the session ends, the path’s size reported', async (t) => {
  const { conn, wt } = await open(t);
  assert.equal(conn.maxDatagramSize(), 1215);
  const queued = [new Uint8Array([1, 2, 3]), new Uint8Array([4])];
  conn.sendDatagram!({ pop: () => queued.shift() });
  await settle();
  assert.deepEqual(wt.datagramsOut.chunks, [new Uint8Array([1, 2, 3]), new Uint8Array([4])]);
  wt.datagramsIn.push(new Uint8Array([9]));
  assert.deepEqual(await conn.receiveDatagram!(), new Uint8Array([9]));
  const next = conn.receiveDatagram!();
  wt.datagramsIn.fail(new TypeError('session closed'));
  assert.equal(await next, null);
});

test('§9 datagrams the browser has no room for stay in the ring: 16 in flight, the next taken as each write completes', async (t) => {
  const { conn, wt } = await open(t);
  wt.datagramsOut.holding = true;
  const ring = Array.from({ length: 20 }, (_, i) => new Uint8Array([i]));
  const next = { pop: () => ring.shift() };
  conn.sendDatagram!(next);
  await settle();
  assert.equal(wt.datagramsOut.chunks.length, 1, 'the sink has the first; 15 wait in the writable');
  assert.equal(ring.length, 4, '16 handed over, 4 left in the ring');
  conn.sendDatagram!(next); // another send while the browser is busy takes nothing more
  assert.equal(ring.length, 4);
  wt.datagramsOut.holding = false;
  for (const release of wt.datagramsOut.held.splice(0)) release();
  await settle();
  assert.equal(ring.length, 0, 'every completed write took the next from the ring');
  assert.deepEqual(
    wt.datagramsOut.chunks.map((c) => c[0]),
    Array.from({ length: 20 }, (_, i) => i),
  );
});

test('§10.1 a write failing with no code (Chromium) takes the code the call stream’s readable reports', async (t) => {
  const { conn, wt, clock } = await open(t);
  const call = await conn.openCall!();
  wt.bidi[0]!.sink.fail(new DOMException('The stream was aborted by the remote server', 'NetworkError'));
  const writing = outcome(call.write(new Uint8Array([1])));
  await settle();
  wt.bidi[0]!.source.fail(new FakeWebTransportError({ message: 'Received RESET_STREAM.', source: 'stream', streamErrorCode: 9 }));
  // Reported without waiting out the close wait (the clock does not move).
  const err = await Promise.race([writing, settle().then(() => 'still waiting')]);
  assert.ok(err instanceof StreamResetError, String(err));
  assert.equal(err.code, 9);
  assert.equal(err.remote, true);
  assert.equal(clock.pending(), 0);
});

test('§10.1 this side’s own reset code is never reported as the peer’s', async (t) => {
  const { conn, wt, clock } = await open(t);
  const call = await conn.openCall!();
  call.reset(1); // the writable now fails with this side's code 1
  await settle();
  const reading = outcome(call.read());
  wt.bidi[0]!.source.fail(new TypeError('Error in input stream'));
  await settle();
  await clock.advance(CloseWaitMs);
  const err = await reading;
  assert.ok(err instanceof StreamResetError, String(err));
  assert.equal(err.code, undefined);
  assert.equal(err.remote, true);
});

test('§3.2 a call stream the server opens is accepted with both halves; acceptCall is null once the session ended', async (t) => {
  const { conn, wt } = await open(t);
  const accept = conn.acceptCall;
  assert.ok(accept);
  const source = new FedStream<Uint8Array>();
  const sink = new SinkStream();
  wt.incomingBidi.push({ readable: source.stream, writable: sink.stream });
  const st = await accept();
  assert.ok(st);
  source.push(new Uint8Array([1, 2]));
  assert.deepEqual([...((await st.read()) as Uint8Array)], [1, 2]);
  await st.write(new Uint8Array([3]));
  await st.close();
  assert.deepEqual(sink.chunks.map((c) => [...c]), [[3]]);
  assert.equal(sink.closedCleanly, true);
  wt.incomingBidi.fin();
  assert.equal(await accept(), null);
  wt.resolveClosed({ closeCode: 0, reason: '' });
  await conn.closed;
  assert.equal(await accept(), null);
});
