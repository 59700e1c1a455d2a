// connectDev in a real browser against a Go development server
// (endpoint.Listener.ServeDevPage): the page is served on plain HTTP by
// the Go process, which relays the certificate's manifest and the
// WebSocket mapping on the page's own origin, since a page can neither
// fetch from nor open wss:// to the HTTPS side's development certificate.
// Scenarios run as window.tio[name](url, sha256, ...args); url is unused
// (the page's origin is the base), and sha256 is the pin the server holds.

import { Client, TransportError } from '../../../runtime/ts/src/index.js';
import type { Connector, Contract } from '../../../runtime/ts/src/index.js';
import { connectDev } from '../../../runtime/ts/src/dev.js';
import { connectWebSocket } from '../../../runtime/ts/src/websocket.js';
import { withFallback } from '../../../runtime/ts/src/fallback.js';
import { conformanceContract } from '../../../runtime/ts/test/node-go/conformance.tio.js';
import { serve } from './page.js';

const contract: Contract = conformanceContract;

function failure(e: unknown) {
  return e instanceof TransportError ? { code: e.code, message: e.message, remedy: e.remedy } : { code: '', message: String(e), remedy: '' };
}

async function manifestPin(): Promise<number[]> {
  const rsp = await fetch('/.well-known/transport-io-dev', { cache: 'no-store' });
  const m = (await rsp.json()) as { sha256: number[] };
  return m.sha256;
}

// One session through the connector: the mapping it is on, and an echo
// call (WebTransport) or a shout answered by heard (the WebSocket mapping
// has no calls, §3.3).
async function session(connect: Connector, text: string) {
  const client = new Client({ contract, connect });
  try {
    await client.connect();
  } catch (e) {
    return { error: failure(e) };
  }
  const snap = client.getSnapshot();
  let answer: unknown;
  if (snap.transport === 'webtransport') {
    answer = await client.call('echo', { text });
  } else {
    answer = await new Promise((resolve) => {
      const off = client.on('heard', (v) => {
        off();
        resolve(v);
      });
      client.emit('shout', { text });
    });
  }
  await client.close();
  return { transport: snap.transport, fallbackReason: snap.fallbackReason, answer };
}

const wsUrl = () => `ws://${location.host}/conformance`;

const scenarios = {
  // §10.3: connectDev reads the pin from the page's origin and opens
  // WebTransport at the manifest's URL with it pinned.
  async dev(_url: string, sha256: number[], text: string) {
    const pin = await manifestPin();
    return { pinMatches: pin.length === 32 && pin.every((b, i) => b === sha256[i]), ...(await session(connectDev(location.origin), text)) };
  },
  // §2, §3.3: with the WebSocket mapping on the page's origin as the
  // fallback, WebTransport still carries the session when it can.
  async devWithFallback(_url: string, _sha256: number[], text: string) {
    return session(withFallback(connectDev(location.origin), connectWebSocket(wsUrl())), text);
  },
  // §3.3: plain ws:// on the page's origin reaches the same server.
  async webSocketOnOrigin(_url: string, _sha256: number[], text: string) {
    return session(connectWebSocket(wsUrl()), text);
  },
  // §10.3: a development server that is not running (nothing serves the
  // manifest there) fails WT_HANDSHAKE_FAILED, and the fallback takes over.
  async devServerMissing(_url: string, _sha256: number[], text: string, deadBase: string) {
    const alone = await session(connectDev(deadBase), text);
    const fallback = await session(withFallback(connectDev(deadBase), connectWebSocket(wsUrl())), text);
    return { alone, fallback };
  },
};

serve(scenarios);
