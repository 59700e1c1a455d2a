// The TypeScript runtime in a real browser against the conformance server
// (cmd/tio-conformance): the one scenario file both Chromium and Firefox
// ESR run. The Go tests in this folder bundle it with esbuild from
// runtime/ts/src, serve it on http://127.0.0.1 (a secure context), call each
// scenario through run.mjs as window.tio[name](url, sha256, ...args) and
// check the plain object it resolves with, along with what the server
// logged.
//
// The contract is the conformance contract's generated table
// (runtime/ts/test/node-go/conformance.tio.ts, from testdata/conformance).

import { Client } from '../../../runtime/ts/src/index.js';
import type { Contract, EventSpec } from '../../../runtime/ts/src/index.js';
import { connectWebTransport } from '../../../runtime/ts/src/webtransport.js';
import { connectWebSocket } from '../../../runtime/ts/src/websocket.js';
import { withFallback } from '../../../runtime/ts/src/fallback.js';
import { conformanceContract } from '../../../runtime/ts/test/node-go/conformance.tio.js';
import { describe, serve } from './page.js';

const contract: Contract = conformanceContract;

function hashes(sha256: number[]) {
  return [{ algorithm: 'sha-256', value: new Uint8Array(sha256) }];
}

function wt(url: string, sha256: number[]) {
  return connectWebTransport(url, { serverCertificateHashes: hashes(sha256) });
}

async function settle<T>(p: Promise<T>): Promise<{ ok: T } | { error: ReturnType<typeof describe> }> {
  try {
    return { ok: await p };
  } catch (e) {
    return { error: describe(e) };
  }
}

function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms);
    }),
  ]);
}

// nextEmit resolves with the next payload of an event the server emits.
function nextEmit(client: Client, name: string, ms: number): Promise<unknown> {
  return within(
    ms,
    `'${name}'`,
    new Promise((resolve) => {
      const off = client.on(name, (v: unknown) => {
        off();
        resolve(v);
      });
    }),
  );
}

// snapshotWhen resolves once the client's snapshot satisfies ok.
function snapshotWhen(client: Client, ok: (s: ReturnType<Client['getSnapshot']>) => boolean, ms: number) {
  return within(
    ms,
    'snapshot',
    new Promise<ReturnType<Client['getSnapshot']>>((resolve) => {
      const check = () => {
        const s = client.getSnapshot();
        if (ok(s)) {
          off();
          resolve(s);
        }
      };
      const off = client.subscribe(check);
      check();
    }),
  );
}

// serverLogged asks the page's server whether the conformance server has
// logged a line with msg and fragment, until it has or ms passed.
async function serverLogged(msg: string, fragment: string, ms: number): Promise<boolean> {
  const started = performance.now();
  const query = new URLSearchParams({ msg, has: fragment });
  while (performance.now() - started < ms) {
    if ((await fetch('/logged?' + query.toString())).ok) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

async function connected(url: string, sha256: number[]): Promise<Client> {
  const client = new Client({ contract, connect: wt(url, sha256) });
  await client.connect();
  return client;
}

const scenarios = {
  // §3.2, §6.2, §6.3: a returns call answered by CALL_RESPONSE.
  async echo(url: string, sha256: number[], text: string) {
    const client = new Client({ contract, connect: wt(url, sha256) });
    const before = client.getSnapshot().status;
    await client.connect();
    const snap = client.getSnapshot();
    const result = await settle(client.call('echo', { text }));
    client.close();
    return { before, status: snap.status, transport: snap.transport, fallbackReason: snap.fallbackReason, result };
  },

  // §6.4: CALL_ERROR rejects with the server's code and message.
  async fail(url: string, sha256: number[], text: string) {
    const client = await connected(url, sha256);
    const result = await settle(client.call('fail', { text }));
    const after = await settle(client.call('echo', { text: 'still up' }));
    client.close();
    return { result, after };
  },

  // §6.6: n elements, which the server can only send if the loop's
  // consumption grants credit (32 initial, 16 per 16 consumed).
  async count(url: string, sha256: number[], n: number) {
    const client = await connected(url, sha256);
    const items: number[] = [];
    let error = null;
    try {
      for await (const item of client.stream('count', { n }) as AsyncIterable<{ i: number }>) items.push(item.i);
    } catch (e) {
      error = describe(e);
    }
    client.close();
    let inOrder = true;
    items.forEach((v, i) => {
      if (v !== i) inOrder = false;
    });
    return { received: items.length, inOrder, error };
  },

  // §6.4 after §6.3: the elements, then the stream's CALL_ERROR.
  async countThenFail(url: string, sha256: number[], n: number) {
    const client = await connected(url, sha256);
    const items: number[] = [];
    let error = null;
    try {
      for await (const item of client.stream('countThenFail', { n }) as AsyncIterable<{ i: number }>) items.push(item.i);
    } catch (e) {
      error = describe(e);
    }
    client.close();
    return { items, error };
  },

  // §8: an AbortSignal cancels a pending call (the stream is reset and
  // stopped WT_ABORTED); the server logs the cancellation of this text.
  async hang(url: string, sha256: number[], text: string, waitMs: number) {
    const client = await connected(url, sha256);
    const controller = new AbortController();
    const pending = settle(client.call('hang', { text }, { signal: controller.signal }));
    // Give the request time to reach the server's handler first.
    await new Promise((r) => setTimeout(r, 300));
    const abortedAt = performance.now();
    controller.abort();
    const result = await within(5000, 'the aborted call', pending);
    const settledMs = performance.now() - abortedAt;
    const after = await settle(client.call('echo', { text: 'after the abort' }));
    // Keep the session until the server logged the cancellation (the
    // test's page server says when) or waitMs passed, so that its end
    // cannot be what cancelled.
    const logged = await serverLogged('hang cancelled', `text=${JSON.stringify(text)}`, waitMs);
    client.close();
    return { result, settledMs, after, logged };
  },

  // §10.1: n concurrent hangs where the server serves 256 (§10.1
  // WT_TOO_MANY_STREAMS): whichever streams come after the 256 it holds are
  // reset with code 9 unread. Then one abort cancels the 256.
  async tooManyStreams(url: string, sha256: number[], n: number) {
    const client = await connected(url, sha256);
    const controller = new AbortController();
    const outcomes: (ReturnType<typeof describe> | 'resolved' | null)[] = new Array(n).fill(null);
    let settledCount = 0;
    const calls = Array.from({ length: n }, (_, i) =>
      client.call('hang', { text: `crowd ${i}` }, { signal: controller.signal }).then(
        () => {
          outcomes[i] = 'resolved';
          settledCount++;
        },
        (e: unknown) => {
          outcomes[i] = describe(e);
          settledCount++;
        },
      ),
    );
    const refusedWanted = n - 256;
    const waited = await settle(
      within(15000, 'the refused calls', (async () => {
        while (settledCount < refusedWanted) await new Promise((r) => setTimeout(r, 20));
      })()),
    );
    // Nothing more settles while the server holds the 256.
    await new Promise((r) => setTimeout(r, 300));
    const refused = outcomes.filter((o) => o !== null);
    const pendingBeforeAbort = n - refused.length;
    controller.abort();
    await within(10000, 'the aborted calls', Promise.all(calls));
    const aborted = outcomes.filter((o) => o !== null && o !== 'resolved' && o.code === 'WT_ABORTED').length;
    // The server frees the 256 as the aborts reach it; until then a new
    // call may still be refused (in Firefox, as a reset without its code),
    // and the remedy is to retry.
    let after = await settle(client.call('echo', { text: 'after the crowd' }));
    let attempts = 1;
    const retryStarted = performance.now();
    for (; performance.now() - retryStarted < 3000 && 'error' in after && after.error.code !== 'WT_SESSION_CLOSED'; attempts++) {
      await new Promise((r) => setTimeout(r, 100));
      after = await settle(client.call('echo', { text: 'after the crowd' }));
    }
    const retryMs = performance.now() - retryStarted;
    client.close();
    const refusals: Record<string, number> = {};
    for (const o of refused) {
      const key = o === 'resolved' ? 'resolved' : `${o!.code}: ${o!.message}`;
      refusals[key] = (refusals[key] ?? 0) + 1;
    }
    return { waited: 'ok' in waited, refusals, pendingBeforeAbort, aborted, after, attempts, retryMs };
  },

  // §5 call cap (16 MiB): 1 MiB of bytes() there and back.
  async blob(url: string, sha256: number[], size: number) {
    const client = await connected(url, sha256);
    const sent = new Uint8Array(size);
    for (let i = 0; i < size; i++) sent[i] = (i * 31 + (i >> 8)) & 0xff;
    const result = await settle(client.call('blob', sent) as Promise<Uint8Array>);
    client.close();
    if (!('ok' in result)) return { result };
    const got = result.ok;
    let firstDifference = -1;
    if (got instanceof Uint8Array) {
      for (let i = 0; i < Math.min(got.length, sent.length); i++) {
        if (got[i] !== sent[i]) {
          firstDifference = i;
          break;
        }
      }
    }
    return { isBytes: got instanceof Uint8Array, length: got?.length ?? null, firstDifference };
  },

  // §6.1 both ways on the emit lane: shout out, heard back.
  async shoutHeard(url: string, sha256: number[], text: string) {
    const client = await connected(url, sha256);
    const heard = nextEmit(client, 'heard', 5000);
    client.emit('shout', { text });
    const result = await settle(heard);
    client.close();
    return { result };
  },

  // §5, §9: bursts of shouts of distinct texts, which the engine writes
  // from the one buffer it reuses, lending it to each write until the write
  // settles. A burst of 250 of `size` bytes takes two writes, so the buffer
  // is rewritten as soon as a write settles: a browser that read the lent
  // bytes after that would send one shout's text in another's frame. Each
  // burst waits for its heard frames; every text heard must be the one
  // shouted, in order.
  async shoutBursts(url: string, sha256: number[], n: number, size: number) {
    const client = await connected(url, sha256);
    const text = (i: number) => String(i).padStart(size, 'abcdefghij'[i % 10]);
    const got: string[] = [];
    let wake = () => {};
    client.on('heard', (v: unknown) => {
      got.push((v as { text: string }).text);
      wake();
    });
    for (let i = 0; i < n; ) {
      for (let k = 0; k < 250 && i < n; k++, i++) client.emit('shout', { text: text(i) });
      const want = i;
      await within(10000, `heard ${want}`, new Promise<void>((resolve) => (wake = () => got.length >= want && resolve())));
    }
    client.close();
    return { count: got.length, firstDifference: got.findIndex((t, i) => t !== text(i)) };
  },

  // §7: move as datagrams, echoed by the server; datagrams may be lost, so
  // a few are sent, each with a new value, until one comes back.
  async move(url: string, sha256: number[]) {
    const client = await connected(url, sha256);
    const got: unknown[] = [];
    const off = client.on('move', (v: unknown) => got.push(v));
    let sent = 0;
    for (; sent < 20 && got.length === 0; sent++) {
      client.emit('move', { x: 1.5, y: -2 - sent });
      await new Promise((r) => setTimeout(r, 100));
    }
    off();
    client.close();
    return { sent, got };
  },

  // §6.5: enter joins (JOIN follows on the emit lane), say reaches the room
  // as said, exit leaves (LEAVE): the snapshot's rooms follow.
  async rooms(url: string, sha256: number[], room: string, text: string) {
    const client = await connected(url, sha256);
    const initial = client.getSnapshot();
    const entered = await settle(client.call('enter', { room }));
    const inRoom = await settle(snapshotWhen(client, (s) => s.rooms.includes(room), 5000));
    const stable = client.getSnapshot() === client.getSnapshot();
    const frozen = Object.isFrozen(client.getSnapshot());
    const said = nextEmit(client, 'said', 5000);
    client.emit('say', { text });
    const saidResult = await settle(said);
    const exited = await settle(client.call('exit', { room }));
    const left = await settle(snapshotWhen(client, (s) => !s.rooms.includes(room), 5000));
    client.close();
    const rooms = (r: { ok: { rooms: readonly string[] } } | { error: unknown }) => ('ok' in r ? [...r.ok.rooms] : r);
    return {
      initialRooms: [...initial.rooms],
      entered,
      roomsAfterJoin: rooms(inRoom),
      stable,
      frozen,
      said: saidResult,
      exited,
      roomsAfterLeave: rooms(left),
      identityChanged: 'ok' in inRoom && 'ok' in left && inRoom.ok !== left.ok,
    };
  },

  // §4, §10.2 1007: refused at the door, with the application's reason.
  async refused(url: string, sha256: number[]) {
    const client = new Client({ contract, connect: wt(url, sha256) });
    const result = await settle(client.connect());
    const snap = client.getSnapshot();
    return { result, status: snap.status, refused: snap.refused, lastError: snap.lastError ? describe(snap.lastError) : null };
  },

  // §4.3, §10.2 1001: a page whose contract declares one event on another
  // lane than the server's; the reason names the event.
  async mismatch(url: string, sha256: number[], event: string) {
    const changed = contract.events.map((e): EventSpec => {
      if (e.name !== event) return e;
      const { fallback: _unused, ...rest } = e;
      return { ...rest, lane: 'reliable' };
    });
    const client = new Client({ contract: { events: changed }, connect: wt(url, sha256) });
    const result = await settle(client.connect());
    const snap = client.getSnapshot();
    return { result, status: snap.status, lastError: snap.lastError ? describe(snap.lastError) : null };
  },

  // §2, §3.3: the WebTransport port does not answer, so withFallback opens
  // the session over the WebSocket mapping and says why; calls there fail
  // WT_LANE_UNAVAILABLE at once and the session stays up for emits.
  async fallback(deadUrl: string, sha256: number[], wsUrl: string, connectTimeoutMs: number, text: string) {
    const client = new Client({
      contract,
      connect: withFallback(
        connectWebTransport(deadUrl, { serverCertificateHashes: hashes(sha256), connectTimeoutMs }),
        connectWebSocket(wsUrl),
      ),
    });
    const started = performance.now();
    const connectResult = await settle(client.connect());
    const connectMs = performance.now() - started;
    const snap = client.getSnapshot();
    const call = await settle(client.call('echo', { text }));
    const heard = nextEmit(client, 'heard', 5000);
    client.emit('shout', { text });
    const heardResult = await settle(heard);
    client.close();
    return { connectResult, connectMs, status: snap.status, transport: snap.transport, fallbackReason: snap.fallbackReason, call, heard: heardResult };
  },

  // §10.2: the page closes with a code and a reason; the server logs them.
  async close(url: string, sha256: number[], code: number, reason: string) {
    const client = await connected(url, sha256);
    await settle(client.call('echo', { text: 'before the close' }));
    client.close(code, reason);
    const after = await settle(client.call('echo', { text: 'after the close' }));
    // Leave the browser time to send the close before the next scenario.
    await new Promise((r) => setTimeout(r, 200));
    return { status: client.getSnapshot().status, after };
  },
};

serve(scenarios);
