// A user's file, type-checked against the built package (dist/*.d.ts through
// package.json's exports) by every supported TypeScript version.

import { Client, RefusedError, TransportError, SessionCode, type Contract, type Snapshot, type Stats } from '@tiogen/runtime';
import { connectWebTransport } from '@tiogen/runtime/webtransport';
import { connectWebSocket } from '@tiogen/runtime/websocket';
import { connectDev } from '@tiogen/runtime/dev';
import { withFallback } from '@tiogen/runtime/fallback';
import { FakeClock, MemoryPair, ScriptedServer, memoryConnector } from '@tiogen/runtime/testing';

const contract: Contract = {
  events: [
    { name: 'chat', id: 836792189, lane: 'reliable', shape: 'emit', payload: 'json' },
    { name: 'echo', id: 21, lane: 'reliable', shape: 'returns', payload: 'json', result: 'json', validateResult: (v) => typeof v === 'string' },
  ],
};

export async function browserPage(): Promise<void> {
  const client = new Client({
    contract,
    connect: withFallback(connectWebTransport('https://127.0.0.1:4433/tio'), connectWebSocket('wss://127.0.0.1:4433/tio', { WebSocket })),
    reconnect: { minMs: 250, maxMs: 5000 },
  });
  const off = client.on('chat', (payload) => console.log(payload));
  const unsubscribe = client.subscribe(() => {
    const s: Snapshot = client.getSnapshot();
    console.log(s.status, s.rooms.join(), s.refused?.reason, s.transport, s.fallbackReason);
  });
  try {
    await client.connect();
    client.emit('chat', { text: 'hi' });
    const ac = new AbortController();
    console.log(await client.call('echo', 'x', { signal: ac.signal }));
    for await (const v of client.stream('echo', 1, { signal: ac.signal })) console.log(v);
  } catch (e) {
    if (e instanceof RefusedError) console.log(e.reason);
    else if (e instanceof TransportError) console.log(e.code, e.number, e.remedy);
  }
  const st: Stats = client.stats();
  console.log(st.overflowDropped, st.staleDropped, SessionCode.WT_UNAUTHORIZED);
  off();
  unsubscribe();
  await client.close('WT_NO_ERROR', 'bye');
  void connectDev('http://127.0.0.1:8080');
}

export async function userTest(): Promise<void> {
  const clock = new FakeClock();
  const client = new Client({ contract, clock, connect: memoryConnector(contract, (s: ScriptedServer) => s.establish()) });
  await client.connect();
  clock.advance(5000);
  const pair = new MemoryPair({ mapping: 'websocket', maxDatagramSize: 1200 });
  pair.loseConnection();
}
