// The handshake (§4), the reliability refusal (§2) and every session close
// (§5.5, §10.2, §11) over the ./testing pair, deadlines on the fake clock.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { RefusedError, TransportError } from '../src/errors.js';
import { Codec, FrameType, encodeFrame, putHeader } from '../src/wire/frame.js';
import { settle } from '../src/testing.js';
import { utf8Encode } from '../src/wire/utf8.js';
import { connected, contract, harness, rejection, undeclared } from './engine-helpers.js';

test('§4.1 the handshake is frame 0, sent without waiting for the server, table sorted by name', async () => {
  const h = harness({ serve: () => {} });
  void h.client.connect();
  const s = await h.server();
  const hs = await s.readHandshake(); // the server has sent nothing
  assert.equal(hs.v, 0);
  assert.deepEqual(hs.feat, []);
  assert.deepEqual(
    hs.events.map((e) => e.name),
    [...contract.events.map((e) => e.name)].sort(),
  );
  assert.equal(h.client.getSnapshot().status, 'connecting');
  await s.sendHandshake();
  await settle();
  assert.equal(h.client.getSnapshot().status, 'connected');
});

test('§4.1 no handshake within 5000 ms closes WT_HANDSHAKE_TIMEOUT (1002), on the injected clock', async () => {
  const h = harness({ serve: () => {} });
  const p = h.client.connect();
  await settle();
  h.clock.advance(4999);
  await settle();
  const before = h.pairs[0]?.closeInfo;
  assert.ok(before === undefined, 'still open at 4999 ms');
  h.clock.advance(1);
  const e = await rejection(p);
  assert.equal(e.code, 'WT_HANDSHAKE_TIMEOUT');
  assert.equal((e as TransportError).number, 1002);
  const info = h.pairs[0]?.closeInfo?.server;
  assert.equal(info?.code, 1002);
  assert.equal(info?.reason, 'no handshake in 5000 ms');
  assert.equal(h.client.getSnapshot().status, 'closed');
  assert.equal(h.client.getSnapshot().lastError, e);
});

test('§4.2 a version mismatch closes WT_PROTOCOL_VERSION_MISMATCH (1000)', async () => {
  const h = harness({ serve: (s) => s.sendHandshake({ v: 1 }) });
  const e = await rejection(h.client.connect());
  assert.equal(e.code, 'WT_PROTOCOL_VERSION_MISMATCH');
  assert.equal(h.pairs[0]?.closeInfo?.server.code, 1000);
  assert.equal(h.pairs[0]?.closeInfo?.server.reason, 'version 0 here, 1 at the peer');
});

test('§4.2 a handshake of another version is answered WT_PROTOCOL_VERSION_MISMATCH (1000), whatever fields it adds or reshapes', async () => {
  const v1 = utf8Encode('{"v":1,"feat":[],"events":{"chat":1},"resume":true}');
  const h = harness({ serve: (s) => s.sendFrame(FrameType.HANDSHAKE, Codec.JSON, 0, v1) });
  const e = await rejection(h.client.connect());
  assert.equal(e.code, 'WT_PROTOCOL_VERSION_MISMATCH');
  assert.equal(h.pairs[0]?.closeInfo?.server.code, 1000);
  assert.equal(h.pairs[0]?.closeInfo?.server.reason, 'version 0 here, 1 at the peer');
});

test('§4.3 a lane disagreement closes WT_CONTRACT_MISMATCH (1001), the reason naming the event', async () => {
  const events = contract.events.map((e) => ({ name: e.name, id: e.id, lane: e.name === 'cursor' ? ('reliable' as const) : e.lane }));
  const h = harness({ serve: (s) => s.sendHandshake({ events }) });
  const e = await rejection(h.client.connect());
  assert.equal(e.code, 'WT_CONTRACT_MISMATCH');
  const reason = "event 'cursor' is 'unreliable' here and 'reliable' at the peer";
  assert.equal(h.pairs[0]?.closeInfo?.server.code, 1001);
  assert.equal(h.pairs[0]?.closeInfo?.server.reason, reason);
  assert.ok(e.message.includes(reason));
});

test('§4.3 events known to one side only proceed', async () => {
  const events = [...contract.events.filter((e) => e.name !== 'chat').map((e) => ({ name: e.name, id: e.id, lane: e.lane })), { name: 'extra', id: 99, lane: 'reliable' as const }];
  const h = harness({ serve: (s) => s.sendHandshake({ events }) });
  await h.client.connect();
  assert.equal(h.client.getSnapshot().status, 'connected');
});

test('§4 §10.2 a refusal (1007) before frame 0 is a RefusedError with the reason, final even with reconnect on', async () => {
  const h = harness({ serve: (s) => s.close(1007, 'bad-token'), client: { reconnect: { minMs: 100, maxMs: 1000 } } });
  const e = await rejection(h.client.connect());
  assert.ok(e instanceof RefusedError);
  assert.equal(e.reason, 'bad-token');
  assert.equal(e.code, 'WT_UNAUTHORIZED');
  assert.equal((e as RefusedError).number, 1007);
  assert.deepEqual(h.client.getSnapshot().refused, { reason: 'bad-token' });
  await h.clock.tick(60_000);
  assert.equal(h.pairs.length, 1, 'never reconnects after WT_UNAUTHORIZED');
  assert.equal(h.client.getSnapshot().status, 'closed');
});

test('§2 §7.6 the WebSocket mapping with an undeclared unreliable event is refused WT_RELIABILITY_REFUSED (1006) before the handshake', async () => {
  const h = harness({ contract: undeclared, pair: { mapping: 'websocket' } });
  const e = await rejection(h.client.connect());
  assert.equal(e.code, 'WT_RELIABILITY_REFUSED');
  const info = h.pairs[0]?.closeInfo?.server;
  assert.equal(info?.code, 1006);
  assert.equal(info?.reason, "'pos' is unreliable with no fallback");
  assert.equal(h.pairs[0]?.clientEmit, undefined, 'no handshake was written');
});

test('§2 the same contract has a session over WebTransport; every unreliable event declared is one over WebSocket', async () => {
  await harness({ contract: undeclared }).client.connect();
  await harness({ pair: { mapping: 'websocket' } }).client.connect();
});

/** Runs an established session, then has the server write bytes on its emit stream, and returns the close the server sees. */
async function closeAfter(bytes: Uint8Array | ((s: Awaited<ReturnType<typeof connected>>) => Promise<void>), mapping?: 'websocket') {
  const h = await connected(mapping ? { pair: { mapping } } : {});
  if (typeof bytes === 'function') await bytes(h);
  else await h.server1.sendRaw(bytes);
  await settle();
  const info = h.pair.closeInfo?.server;
  assert.ok(info, 'the session closed');
  const snap = h.client.getSnapshot();
  assert.equal(snap.status, 'closed');
  return { info, lastError: snap.lastError };
}

test('§3.1 a first frame other than HANDSHAKE closes WT_PROTOCOL_ERROR (1004)', async () => {
  const h = harness({ serve: (s) => s.sendEmit('chat', 'hi') });
  const e = await rejection(h.client.connect());
  assert.equal(e.code, 'WT_PROTOCOL_ERROR');
  assert.equal(h.pairs[0]?.closeInfo?.server.reason, 'frame 0 is EMIT, not HANDSHAKE');
});

test('§5.5 protocol errors on the emit stream close the session with their code, never a reset', async (t) => {
  const frame = (type: number, codec: number, id: number, payload: Uint8Array) => {
    const b = new Uint8Array(12 + payload.length);
    putHeader(b, 0, type, codec, id, payload.length);
    b.set(payload, 12);
    return b;
  };
  const x = new Uint8Array([0x78]);
  const cases: Array<[string, Uint8Array, number, RegExp]> = [
    ['reserved type', frame(0x0a, 1, 0, x), 1004, /reserved frame type 0x0a/],
    ['reserved bits', (() => { const b = frame(2, 1, 836792189, x); b[7] = 1; return b; })(), 1004, /reserved bits/],
    ['reserved codec', frame(2, 3, 836792189, x), 1004, /reserved codec 0x03/],
    ['EMIT over the 1 MiB cap, judged from the header', (() => { const b = new Uint8Array(12); putHeader(b, 0, 2, 1, 836792189, (1 << 20) + 1); return b; })(), 1004, /^EMIT payload 1048577 bytes, over 1048576$/],
    ['length below 9', new Uint8Array([0, 0, 0, 8]), 1004, /^frame length 8, under 9$/],
    ['codec differing from the slot', frame(2, Codec.BYTES, 836792189, x), 1004, /^'chat' payload is json, not bytes$/],
    ['CALL_RESPONSE on the emit stream', frame(FrameType.CALL_RESPONSE, 1, 0, x), 1004, /^CALL_RESPONSE on the emit stream$/],
    // §5.1: a call frame is invalid on the emit stream (§5.2), so its 16 MiB cap does not apply there.
    ['CALL_RESPONSE over 1 MiB on the emit stream, refused on its header', (() => { const b = new Uint8Array(12); putHeader(b, 0, FrameType.CALL_RESPONSE, 1, 0, 4 << 20); return b; })(), 1004, /^CALL_RESPONSE payload 4194304 bytes, over 1048576$/],
    ['a second HANDSHAKE', encodeFrame(FrameType.HANDSHAKE, 1, 0, new TextEncoder().encode('{}')), 1004, /^HANDSHAKE on the emit stream$/],
    ['DATAGRAM frame on WebTransport', frame(FrameType.DATAGRAM, 1, 0, x), 1004, /^DATAGRAM on the emit stream$/],
    ['malformed JOIN', frame(FrameType.JOIN, 1, 0, new TextEncoder().encode('{"room":""}')), 1004, /^room: no 'room'$/],
    ['EMIT for a call event', frame(FrameType.EMIT, 1, 21, x), 1004, /^EMIT of reliable returns 'echo'$/],
  ];
  for (const [name, bytes, code, reason] of cases) {
    await t.test(name, async () => {
      const { info, lastError } = await closeAfter(bytes);
      assert.equal(info.code, code);
      assert.match(info.reason, reason);
      assert.equal(lastError?.code, 'WT_PROTOCOL_ERROR');
      assert.equal(info.remote, true, 'the client closed it');
    });
  }
  await t.test('the server resets its emit stream', async () => {
    const { info } = await closeAfter(async (h) => {
      h.pair.serverEmit?.reset(1);
    });
    assert.equal(info.code, 1004);
    assert.match(info.reason, /^peer's emit stream reset, code 1$/);
  });
  await t.test('the emit stream ends inside a frame', async () => {
    const { info } = await closeAfter(async (h) => {
      await h.server1.sendRaw(new Uint8Array([0, 0, 0, 10, 2, 1]));
      await h.pair.serverEmit?.finish();
    });
    assert.equal(info.reason, "peer's emit stream ended mid-frame");
  });
  await t.test('the server stops the client emit stream', async () => {
    const { info } = await closeAfter(async (h) => {
      h.pair.clientEmit?.stop(1);
      h.client.emit('chat', 'after');
      await settle();
    });
    assert.match(info.reason, /^emit stream stopped, code 1$/);
  });
});

test('§10.2 every close code the server sends reaches the client with its reason', async (t) => {
  for (const [code, name] of [
    [0, 'WT_NO_ERROR'],
    [1000, 'WT_PROTOCOL_VERSION_MISMATCH'],
    [1001, 'WT_CONTRACT_MISMATCH'],
    [1002, 'WT_HANDSHAKE_TIMEOUT'],
    [1003, 'WT_PEER_TOO_SLOW'],
    [1004, 'WT_PROTOCOL_ERROR'],
    [1005, 'WT_IDLE_TIMEOUT'],
    [1006, 'WT_RELIABILITY_REFUSED'],
    [1007, 'WT_UNAUTHORIZED'],
    [1999, 'WT_CLOSE_1999'],
  ] as const) {
    await t.test(name, async () => {
      const { lastError } = await closeAfter(async (h) => h.server1.close(code, 'why ' + code));
      assert.equal(lastError?.code, name);
      assert.match(lastError?.message ?? '', new RegExp(`why ${code}`));
      if (code === 1007) assert.equal((lastError as RefusedError).reason, 'why 1007');
    });
  }
});

test('§10.2 the client closes with any code and reason; the server sees them', async (t) => {
  for (const [code, n] of [
    ['WT_NO_ERROR', 0],
    ['WT_PROTOCOL_ERROR', 1004],
    ['WT_IDLE_TIMEOUT', 1005],
  ] as const) {
    await t.test(code, async () => {
      const h = await connected();
      const statuses: string[] = [];
      h.client.subscribe(() => {
        const st = h.client.getSnapshot().status;
        if (statuses.at(-1) !== st) statuses.push(st);
      });
      await h.client.close(code, 'bye');
      assert.deepEqual(h.pair.closeInfo?.server, { code: n, reason: 'bye', remote: true, lost: false });
      assert.deepEqual(statuses, ['closing', 'closed']);
      assert.equal(h.client.getSnapshot().lastError, null);
    });
  }
  await t.test('a number, and a reason cut to 1024 bytes on a character boundary', async () => {
    const h = await connected();
    await h.client.close(1003, 'é'.repeat(600));
    assert.equal(h.pair.closeInfo?.server.code, 1003);
    assert.equal(h.pair.closeInfo?.server.reason, 'é'.repeat(512));
  });
  await t.test('not a session code', async () => {
    const h = await connected();
    const e = await rejection(h.client.close('WT_ABORTED' as never));
    assert.equal(e.code, 'WT_PROTOCOL_ERROR');
    assert.equal(e.message, 'WT_ABORTED is no close code');
    // Nor is a name every object inherits: refused, nothing closed.
    for (const name of ['toString', 'constructor', '__proto__']) {
      const inherited = await rejection(h.client.close(name as never));
      assert.equal(inherited.message, `${name} is no close code`);
    }
    assert.equal(h.client.getSnapshot().status, 'connected');
    assert.equal(h.pair.closeInfo, undefined);
  });
});

test('§11 a lost connection ends the session as WT_NO_ERROR, never a transport code', async () => {
  const h = await connected();
  const pending = h.client.call('echo', 1);
  await settle();
  h.pair.loseConnection();
  const e = await rejection(pending);
  assert.equal(e.code, 'WT_SESSION_CLOSED');
  await settle();
  const last = h.client.getSnapshot().lastError;
  assert.equal(last?.code, 'WT_NO_ERROR');
  assert.equal(last?.message, 'the connection was lost');
});
