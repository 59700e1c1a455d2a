// ./testing itself: the fake clock and the in-memory pair's faults, which
// users' tests rely on as much as ours.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { StreamResetError, TransportError } from '../src/errors.js';
import { FakeClock, MemoryPair, settle } from '../src/testing.js';

test('FakeClock: advance fires due timers in order, including ones they arm; cleared ones never', () => {
  const c = new FakeClock(1000);
  const fired: string[] = [];
  c.setTimeout(() => fired.push('b@30'), 30);
  c.setTimeout(() => {
    fired.push('a@10');
    c.setTimeout(() => fired.push('c@15, armed at 10'), 5);
  }, 10);
  const gone = c.setTimeout(() => fired.push('never'), 20);
  c.clearTimeout(gone);
  c.advance(29);
  assert.deepEqual(fired, ['a@10', 'c@15, armed at 10']);
  assert.equal(c.now(), 1029);
  c.advance(1);
  assert.deepEqual(fired.at(-1), 'b@30');
  assert.equal(c.pending, 0);
});

test('FakeClock: a timer armed for a time already reached fires at once, on a microtask', async () => {
  const c = new FakeClock();
  let fired = 0;
  c.setTimeout(() => fired++, 0);
  c.setTimeout(() => fired++, -5);
  assert.equal(fired, 0, 'not re-entering the caller');
  await Promise.resolve();
  assert.equal(fired, 2);
});

test('MemoryPair: reset, stop, FIN and close reach the other side with their codes', async () => {
  const p = new MemoryPair();
  const emit = await p.client.openEmit();
  const rs = await p.server.acceptEmit();
  await emit.write(new Uint8Array([1]));
  assert.deepEqual([...((await rs.read()) as Uint8Array)], [1]);
  emit.reset(1);
  const e = await rs.read().then(
    () => undefined,
    (err: unknown) => err,
  );
  assert.ok(e instanceof StreamResetError);
  assert.equal(e.code, 1);
  assert.equal(e.remote, true);
  const call = await p.client.openCall!();
  const served = (await p.server.acceptCall())!;
  served.stop(9);
  const w = await call.write(new Uint8Array([2])).then(
    () => undefined,
    (err: unknown) => err,
  );
  assert.ok(w instanceof StreamResetError && w.code === 9 && w.remote);
  p.client.close(1004, 'x'.repeat(2000));
  const info = await p.server.closed;
  assert.deepEqual({ ...info, reason: info.reason.length }, { code: 1004, reason: 1024, remote: true, lost: false });
  assert.equal((await p.client.closed).remote, false);
  const after = await p.client.openEmit().then(
    () => undefined,
    (err: unknown) => err,
  );
  assert.ok(after instanceof TransportError && after.code === 'WT_SESSION_CLOSED');
  assert.equal(await p.server.receiveDatagram!(), null);
});

test('MemoryPair: the reliable-only mapping has no call streams and no datagrams; reasons cut to 123 bytes', async () => {
  const p = new MemoryPair({ mapping: 'websocket' });
  assert.equal(p.client.openCall, undefined);
  assert.equal(p.client.sendDatagram, undefined);
  assert.equal(p.client.receiveDatagram, undefined);
  p.server.close(1007, 'é'.repeat(100));
  assert.equal((await p.client.closed).reason, 'é'.repeat(61));
});

test('MemoryPair: a lost connection ends both sides with no code; dropped datagrams never arrive', async () => {
  const p = new MemoryPair({ maxDatagramSize: 1200 });
  assert.equal(p.client.maxDatagramSize(), 1200);
  p.dropDatagrams = true;
  const queued = [new Uint8Array([1])];
  p.client.sendDatagram!(queued);
  p.dropDatagrams = false;
  queued.push(new Uint8Array([2]));
  p.client.sendDatagram!(queued);
  assert.deepEqual([...((await p.server.receiveDatagram!()) as Uint8Array)], [2]);
  p.loseConnection();
  await settle();
  assert.deepEqual(await p.client.closed, { code: 0, reason: '', remote: false, lost: true });
  assert.deepEqual(await p.server.closed, { code: 0, reason: '', remote: false, lost: true });
});
