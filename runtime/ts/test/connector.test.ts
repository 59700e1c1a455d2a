// The waits the connectors and the engine share (connector.ts).

import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { test } from 'node:test';

import { outcomeWithin } from '../src/connector.js';
import { FakeClock } from '../src/testing.js';

test('outcomeWithin leaves no timer and no abort listener once its outcome settles, resolved or rejected', async () => {
  const clock = new FakeClock();
  const signal = new AbortController().signal;
  assert.equal(await outcomeWithin(clock, 120_000, Promise.resolve('done'), signal), 'done');
  assert.equal(clock.pending, 0);
  assert.equal(getEventListeners(signal, 'abort').length, 0);
  // A rejected outcome (a stream's read that failed) must not leave a
  // 120 s timer behind: with the host clock it would keep Node running.
  await assert.rejects(outcomeWithin(clock, 120_000, Promise.reject(new Error('reset')), signal), /reset/);
  assert.equal(clock.pending, 0);
  assert.equal(getEventListeners(signal, 'abort').length, 0);
});

test('outcomeWithin gives timeout once ms passed on the clock, and aborted once the signal aborts', async () => {
  const clock = new FakeClock();
  const late = outcomeWithin(clock, 5000, new Promise(() => {}));
  clock.advance(4999);
  clock.advance(1);
  assert.equal(await late, 'timeout');
  const ac = new AbortController();
  const stopped = outcomeWithin(clock, 5000, new Promise(() => {}), ac.signal);
  ac.abort();
  assert.equal(await stopped, 'aborted');
  assert.equal(clock.pending, 0);
  const before = new AbortController();
  before.abort();
  assert.equal(await outcomeWithin(clock, 5000, new Promise(() => {}), before.signal), 'aborted');
});
