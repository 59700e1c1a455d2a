// What the engine tests share: a contract covering every shape, lane and
// codec, and a client on the in-memory pair with a scripted server.

import { Client, type ClientOptions } from '../src/client.js';
import type { Contract } from '../src/contract.js';
import { FakeClock, memoryConnector, settle, type MemoryPair, type MemoryPairOptions, type ScriptedServer } from '../src/testing.js';

export const contract: Contract = {
  name: 'test',
  events: [
    { name: 'chat', id: 836792189, lane: 'reliable', shape: 'emit', payload: 'json' },
    { name: 'note', id: 11, lane: 'reliable', shape: 'emit', payload: 'json', from: 'server' },
    { name: 'up', id: 12, lane: 'reliable', shape: 'emit', payload: 'json', from: 'client' },
    { name: 'blob', id: 13, lane: 'reliable', shape: 'emit', payload: 'bytes' },
    { name: 'typed', id: 14, lane: 'reliable', shape: 'emit', payload: 'json', validate: (v) => typeof v === 'number' },
    { name: 'cursor', id: 1185214141, lane: 'unreliable', shape: 'emit', payload: 'json', fallback: 'newest' },
    { name: 'echo', id: 21, lane: 'reliable', shape: 'returns', payload: 'json', result: 'json' },
    { name: 'count', id: 22, lane: 'reliable', shape: 'yields', payload: 'json', result: 'json' },
    { name: 'bin', id: 23, lane: 'reliable', shape: 'returns', payload: 'bytes', result: 'bytes' },
    {
      name: 'checked',
      id: 24,
      lane: 'reliable',
      shape: 'returns',
      payload: 'json',
      result: 'json',
      validateResult: (v) => {
        if (typeof v !== 'string') throw new Error('must be a string');
      },
    },
  ],
};

/** The same contract with an unreliable event that declares no fallback (§7.6). */
export const undeclared: Contract = {
  name: 'undeclared',
  events: [...contract.events, { name: 'pos', id: 31, lane: 'unreliable', shape: 'emit', payload: 'json' }],
};

export interface Harness {
  readonly clock: FakeClock;
  readonly client: Client;
  readonly pairs: readonly MemoryPair[];
  /** The scripted server of each session, in order. */
  readonly servers: ScriptedServer[];
  /** Resolves with the server of session n (from 1). */
  server(n?: number): Promise<ScriptedServer>;
}

/**
 * A client over memoryConnector. serve runs for every session; by default
 * the server establishes the session (sends its handshake, reads the
 * client's).
 */
export function harness(
  opts: {
    serve?: (s: ScriptedServer, pair: MemoryPair, attempt: number) => unknown;
    pair?: MemoryPairOptions;
    contract?: Contract;
    client?: Partial<ClientOptions>;
    fail?: (attempt: number) => unknown;
  } = {},
): Harness {
  const clock = new FakeClock();
  const servers: ScriptedServer[] = [];
  const waiting = new Map<number, (s: ScriptedServer) => void>();
  const serve = opts.serve ?? ((s: ScriptedServer) => s.establish());
  const connect = memoryConnector(
    opts.contract ?? contract,
    (s, pair, attempt) => {
      servers.push(s);
      waiting.get(servers.length)?.(s);
      return serve(s, pair, attempt);
    },
    { ...opts.pair, ...(opts.fail ? { fail: opts.fail } : {}) },
  );
  const client = new Client({ contract: opts.contract ?? contract, connect, clock, ...opts.client });
  return {
    clock,
    client,
    pairs: connect.pairs,
    servers,
    server: (n = 1) => {
      const s = servers[n - 1];
      if (s !== undefined) return Promise.resolve(s);
      return new Promise((r) => waiting.set(n, r));
    },
  };
}

/** Runs connect() to an established session. */
export async function connected(opts: Parameters<typeof harness>[0] = {}): Promise<Harness & { server1: ScriptedServer; pair: MemoryPair }> {
  const h = harness(opts);
  await h.client.connect();
  const server1 = await h.server(1);
  await settle();
  return { ...h, server1, pair: h.pairs[0] as MemoryPair };
}

/** The error a promise rejects with (fails the test if it resolves). */
export async function rejection(p: Promise<unknown>): Promise<Error & { code?: string; reason?: string; number?: number }> {
  try {
    await p;
  } catch (e) {
    return e as Error & { code?: string };
  }
  throw new Error('expected a rejection');
}

/** The error a function throws (fails the test if it returns). */
export function thrown(f: () => unknown): Error & { code?: string } {
  try {
    f();
  } catch (e) {
    return e as Error & { code?: string };
  }
  throw new Error('expected a throw');
}
