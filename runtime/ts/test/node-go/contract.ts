// The conformance contract (testdata/conformance/conformance.tio) written
// by hand for the Node ↔ Go tests, as the generator will emit it.

import { createHash } from 'node:crypto';

import type { Contract, EventSpec } from '../../src/index.js';

// testdata/conformance/conformance.tio, event by event; ids as §5.4 says.
type Declared = Omit<EventSpec, 'id'>;
const declared: Declared[] = [
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
export const eventId = (name: string): number => createHash('sha256').update(name).digest().readUInt32BE(0);
export const contract: Contract = { name: 'conformance', events: declared.map((e) => ({ ...e, id: eventId(e.name) }) as EventSpec) };

