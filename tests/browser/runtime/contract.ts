// The conformance contract (testdata/conformance/conformance.tio) written
// by hand, as the generator will emit it, for the runtime's pages. The
// event ids are computed as §5.4 says: the first four bytes of SHA-256 of
// the name, big-endian.

import type { Contract, EventSpec } from '../../../runtime/ts/src/index.js';

/** An event of the contract before its id is computed. */
export type Declared = EventSpec extends infer T ? (T extends unknown ? Omit<T, 'id'> : never) : never;

// conformance.tio, event by event.
export const declared: Declared[] = [
  { name: 'echo', lane: 'reliable', shape: 'returns', payload: 'json', result: 'json' },
  { name: 'fail', lane: 'reliable', shape: 'returns', payload: 'json', result: 'json' },
  { name: 'count', lane: 'reliable', shape: 'yields', payload: 'json', result: 'json' },
  { name: 'countThenFail', lane: 'reliable', shape: 'yields', payload: 'json', result: 'json' },
  { name: 'hang', lane: 'reliable', shape: 'returns', payload: 'json', result: 'json' },
  { name: 'blob', lane: 'reliable', shape: 'returns', payload: 'bytes', result: 'bytes' },
  { name: 'shout', lane: 'reliable', from: 'client', shape: 'emit', payload: 'json' },
  { name: 'heard', lane: 'reliable', from: 'server', shape: 'emit', payload: 'json' },
  { name: 'move', lane: 'unreliable', shape: 'emit', payload: 'json', fallback: 'newest' },
  { name: 'enter', lane: 'reliable', shape: 'returns', payload: 'json', result: 'json' },
  { name: 'exit', lane: 'reliable', shape: 'returns', payload: 'json', result: 'json' },
  { name: 'say', lane: 'reliable', from: 'client', shape: 'emit', payload: 'json' },
  { name: 'said', lane: 'reliable', from: 'server', shape: 'emit', payload: 'json' },
  { name: 'counters', lane: 'reliable', shape: 'returns', payload: 'json', result: 'json' },
];

export async function eventId(name: string): Promise<number> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(name));
  return new DataView(digest).getUint32(0);
}

export async function contractOf(events: Declared[]): Promise<Contract> {
  const out: EventSpec[] = [];
  for (const e of events) out.push({ ...e, id: await eventId(e.name) } as EventSpec);
  return { events: out };
}
