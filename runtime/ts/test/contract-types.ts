// Type tests of EventSpec (§3.2, §5.3, §7.6): the compiler, not the
// runtime, refuses an event that breaks a rule of its fields. Checked by
// test/typecheck.test.ts with every pinned compiler: each @ts-expect-error
// line must fail to compile, or the check fails on the unused directive.

import type { Contract, EventSpec } from '../src/contract.js';

/** Every shape, lane, codec, direction and fallback an event may declare. */
export const allowed: Contract = {
  events: [
    { name: 'chat', id: 1, lane: 'reliable', shape: 'emit', payload: 'json', from: 'client' },
    { name: 'note', id: 2, lane: 'reliable', shape: 'emit', payload: 'bytes', from: 'server', validate: () => true },
    { name: 'cursor', id: 3, lane: 'unreliable', shape: 'emit', payload: 'json', fallback: 'newest' },
    { name: 'pos', id: 4, lane: 'unreliable', shape: 'emit', payload: 'bytes' },
    { name: 'echo', id: 5, lane: 'reliable', shape: 'returns', payload: 'json', result: 'bytes', validateResult: () => true },
    { name: 'count', id: 6, lane: 'reliable', shape: 'yields', payload: 'bytes', result: 'json', decodeResult: (v) => v },
  ],
};

const emit = { name: 'e', id: 1, lane: 'reliable', shape: 'emit', payload: 'json' } as const;
const call = { name: 'c', id: 2, lane: 'reliable', shape: 'returns', payload: 'json', result: 'json' } as const;

export const refused: EventSpec[] = [
  // @ts-expect-error a lane is reliable or unreliable
  { ...emit, lane: 'ordered' },
  // @ts-expect-error a slot's codec is json or bytes
  { ...emit, payload: 'xml' },
  // @ts-expect-error a shape is emit, returns or yields
  { ...emit, shape: 'ask' },
  // @ts-expect-error an emit is the client's, the server's or either's
  { ...emit, from: 'both' },
  // @ts-expect-error an emit has no result slot
  { ...emit, result: 'json' },
  // @ts-expect-error an emit has no result hooks
  { ...emit, validateResult: () => true },
  // @ts-expect-error a reliable emit needs no fallback (§7.6)
  { ...emit, fallback: 'newest' },
  // @ts-expect-error the one fallback is newest (§7.6)
  { ...emit, lane: 'unreliable', fallback: 'oldest' },
  // @ts-expect-error a call is reliable (§3.2)
  { ...call, lane: 'unreliable' },
  // @ts-expect-error a call is the client's: it declares no direction
  { ...call, from: 'client' },
  // @ts-expect-error a call has no fallback
  { ...call, fallback: 'newest' },
  // @ts-expect-error a call has a result slot
  { name: 'c', id: 2, lane: 'reliable', shape: 'yields', payload: 'json' },
  // @ts-expect-error an id is a number
  { ...emit, id: '1' },
];
