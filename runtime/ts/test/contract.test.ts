// compileContract checks a contract as the Go runtime's tio.NewContract
// does (§3.2, §5.3, §5.4, §7.6), naming the contract and the event.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { compileContract, type EventSpec } from '../src/contract.js';

const ok: EventSpec = { name: 'chat', id: 1, lane: 'reliable', shape: 'emit', payload: 'json' };

test('§3.2 §5.3 §5.4 §7.6 compileContract refuses a malformed contract, naming the contract, the event and what is wrong', () => {
  const refused = (events: unknown[], want: string) =>
    assert.throws(() => compileContract({ name: 'c', events: events as EventSpec[] }), (e: unknown) => e instanceof TypeError && e.message === want);
  refused([{ ...ok, name: '' }], 'contract c: an event has no name');
  refused([{ ...ok, id: 0 }], "contract c: 'chat' has id 0");
  refused([{ ...ok, id: 2 ** 32 }], "contract c: 'chat' has id 4294967296");
  refused([{ ...ok, id: 1.5 }], "contract c: 'chat' has id 1.5");
  refused([{ ...ok, lane: 'ordered' }], 'contract c: \'chat\' has lane "ordered"');
  refused([{ ...ok, payload: 'xml' }], 'contract c: \'chat\' has payload "xml"');
  refused([{ ...ok, result: 'json' }], "contract c: 'chat' is emit with a result");
  refused([{ ...ok, shape: 'returns', lane: 'unreliable', result: 'json' }], "contract c: 'chat' is an unreliable call");
  refused([{ ...ok, shape: 'yields', from: 'client', result: 'json' }], "contract c: 'chat' is a call with from");
  refused([{ ...ok, shape: 'returns' }], "contract c: 'chat' has returns undefined");
  refused([{ ...ok, shape: 'ask' }], 'contract c: \'chat\' has shape "ask"');
  refused([{ ...ok, from: 'both' }], 'contract c: \'chat\' has from "both"');
  refused([{ ...ok, lane: 'unreliable', fallback: 'oldest' }], 'contract c: \'chat\' has fallback "oldest"');
  refused([{ ...ok, fallback: 'newest' }], "contract c: 'chat' is reliable with a fallback");
  refused([ok, { ...ok, id: 2 }], "contract c: 'chat' declared twice");
  refused([ok, { ...ok, name: 'talk' }], "contract c: 'talk' shares id 1 with 'chat'");
});

test('§5.4 compileContract indexes a valid contract by id and name, with its handshake table, once per contract', () => {
  const contract = {
    events: [ok, { name: 'cursor', id: 2, lane: 'unreliable', shape: 'emit', payload: 'bytes', from: 'client' }, { name: 'echo', id: 3, lane: 'reliable', shape: 'returns', payload: 'json', result: 'bytes' }] as EventSpec[],
  };
  const c = compileContract(contract);
  assert.equal(compileContract(contract), c);
  assert.equal(c.name, 'contract');
  assert.deepEqual(c.table.map(({ name, id, lane }) => ({ name, id, lane })), [
    { name: 'chat', id: 1, lane: 'reliable' },
    { name: 'cursor', id: 2, lane: 'unreliable' },
    { name: 'echo', id: 3, lane: 'reliable' },
  ]);
  assert.equal(c.firstUndeclared, 'cursor');
  const cursor = c.byId.get(2);
  assert.ok(cursor);
  assert.deepEqual([cursor.payloadCodec, cursor.resultCodec, cursor.sentByClient, cursor.sentByServer], [2, 0, true, false]);
  const echo = c.byName.get('echo');
  assert.ok(echo);
  assert.deepEqual([echo.payloadCodec, echo.resultCodec, echo.sentByClient, echo.sentByServer], [1, 2, true, false]);
});
