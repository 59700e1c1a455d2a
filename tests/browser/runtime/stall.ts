// The TypeScript runtime's emit queue (§9) in a real browser against a
// server that never reads the client's emit stream (stall_test.go): the
// page emits until the Client closes the session WT_PEER_TOO_SLOW, and
// reports how far it got. Run as window.tio.stall(url, sha256, ...args)
// through run.mjs, bundled with esbuild from runtime/ts/src.

import { Client } from '../../../runtime/ts/src/index.js';
import type { Contract } from '../../../runtime/ts/src/index.js';
import { connectWebTransport } from '../../../runtime/ts/src/webtransport.js';
import { describe, serve } from './page.js';

const turn = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

const scenarios = {
  // §9: emits of a payload of payloadBytes bytes of JSON, perTurn per
  // macrotask turn (so the runtime's writer and the browser's stream get
  // theirs), until the session is closed, maxEmits were accepted or maxMs
  // passed. The contract is one client-to-server reliable emit, 'shout',
  // with the id the test's server puts in its handshake table.
  async stall(url: string, sha256: number[], eventId: number, payloadBytes: number, perTurn: number, maxEmits: number, maxMs: number) {
    const contract: Contract = {
      name: 'stall',
      events: [{ name: 'shout', id: eventId, lane: 'reliable', from: 'client', shape: 'emit', payload: 'json' }],
    };
    const client = new Client({
      contract,
      connect: connectWebTransport(url, { serverCertificateHashes: [{ algorithm: 'sha-256', value: new Uint8Array(sha256) }] }),
    });
    try {
      await client.connect();
    } catch (e) {
      return { connectError: describe(e) };
    }
    // A JSON string of payloadBytes bytes: its quotes and payloadBytes-2 x's.
    const payload = 'x'.repeat(payloadBytes - 2);
    let accepted = 0;
    let maxDepth = 0;
    let thrown: ReturnType<typeof describe> | null = null;
    let stop = 'maxEmits';
    const started = performance.now();
    let throwMs: number | null = null;
    emitting: while (accepted < maxEmits) {
      for (let i = 0; i < perTurn; i++) {
        try {
          client.emit('shout', payload);
        } catch (e) {
          throwMs = performance.now() - started;
          thrown = describe(e);
          stop = 'threw';
          break emitting;
        }
        accepted++;
        maxDepth = Math.max(maxDepth, client.stats().emitQueueDepth);
      }
      await turn();
      if (client.getSnapshot().status === 'closed') {
        stop = 'closed';
        break;
      }
      if (performance.now() - started > maxMs) {
        stop = 'maxMs';
        break;
      }
    }
    // The session's end reaches the snapshot once the client's loop ran.
    const closeBy = performance.now() + 5000;
    while (client.getSnapshot().status !== 'closed' && performance.now() < closeBy) await turn();
    const snap = client.getSnapshot();
    const closedMs = performance.now() - started;
    if (snap.status !== 'closed') await client.close();
    return {
      accepted,
      maxDepth,
      stop,
      thrown,
      throwMs,
      closedMs,
      status: snap.status,
      lastError: snap.lastError ? describe(snap.lastError) : null,
    };
  },
};

serve(scenarios);
