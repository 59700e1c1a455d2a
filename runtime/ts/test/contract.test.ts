// compileContract indexes a contract for the engine and checks nothing:
// the compiler checks an EventSpec's fields (test/contract-types.ts), and
// the peer's handshake reader refuses a table it cannot take
// (test/node-go/conformance.test.ts, against the Go server).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { compileContract, type EventSpec } from '../src/contract.js';

const ok: EventSpec = { name: 'chat', id: 1, lane: 'reliable', shape: 'emit', payload: 'json' };

test('§4.3 compileContract hands the handshake every event as declared, a name or id twice included, for the peer to refuse', () => {
  const twice = [ok, { ...ok, id: 2 }, { ...ok, name: 'talk' }];
  assert.deepEqual(
    compileContract({ events: twice }).table.map(({ name, id }) => [name, id]),
    [
      ['chat', 1],
      ['chat', 2],
      ['talk', 1],
    ],
  );
});

test('§5.4 compileContract indexes a valid contract by id and name, with its handshake table', () => {
  const contract = {
    events: [ok, { name: 'cursor', id: 2, lane: 'unreliable', shape: 'emit', payload: 'bytes', from: 'client' }, { name: 'echo', id: 3, lane: 'reliable', shape: 'returns', payload: 'json', result: 'bytes' }] as EventSpec[],
  };
  const c = compileContract(contract);
  assert.equal(c.name, 'contract');
  assert.deepEqual(c.table.map(({ name, id, lane }) => ({ name, id, lane })), [
    { name: 'chat', id: 1, lane: 'reliable' },
    { name: 'cursor', id: 2, lane: 'unreliable' },
    { name: 'echo', id: 3, lane: 'reliable' },
  ]);
  assert.equal(c.firstUndeclared, 'cursor');
  const cursor = c.byId.get(2);
  assert.ok(cursor);
  assert.deepEqual([cursor.payloadCodec, cursor.resultCodec, cursor.sentByServer], [2, 0, false]);
  const echo = c.byName.get('echo');
  assert.ok(echo);
  assert.deepEqual([echo.payloadCodec, echo.resultCodec, echo.sentByServer], [1, 2, false]);
});
