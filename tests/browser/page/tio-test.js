// Scenarios the Go tests run in headless Chromium through run.mjs. Each takes
// the session URL and the server certificate's SHA-256 (an array of bytes)
// and resolves with a plain object the Go test checks.

function open(url, sha256) {
  return new WebTransport(url, {
    serverCertificateHashes: [{ algorithm: 'sha-256', value: new Uint8Array(sha256) }],
  });
}

function describe(e) {
  return { name: e && e.name, message: String(e && e.message !== undefined ? e.message : e),
    source: e && e.source, streamErrorCode: e && e.streamErrorCode };
}

// closed: how transport.closed settles when the server closes the session.
async function closed(url, sha256) {
  const t = open(url, sha256);
  let ready = false;
  try {
    await t.ready;
    ready = true;
  } catch (e) {
    return { ready, readyError: describe(e) };
  }
  try {
    const info = await t.closed;
    return { ready, closeCode: info.closeCode, reason: info.reason };
  } catch (e) {
    return { ready, closedError: describe(e) };
  }
}

// handshakeFrame builds a §4.1 HANDSHAKE frame (§5 layout: u32 length, type
// 0x01, codec 0x01 JSON, two reserved bytes, event id 0, payload) declaring
// the given [name, lane] events, ids derived as §5.4 says.
async function handshakeFrame(events) {
  const table = [];
  for (const [name, lane] of events) {
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(name)));
    const id = new DataView(digest.buffer).getUint32(0);
    table.push([name, id, lane]);
  }
  table.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const payload = new TextEncoder().encode(JSON.stringify({ v: 0, feat: [], events: table }));
  const frame = new Uint8Array(12 + payload.length);
  const view = new DataView(frame.buffer);
  view.setUint32(0, 8 + payload.length);
  frame[4] = 0x01;
  frame[5] = 0x01;
  frame.set(payload, 12);
  return frame;
}

// mismatch: a page whose contract declares events differently from the
// server's sends its handshake; how does transport.closed settle?
async function mismatch(url, sha256, events) {
  const t = open(url, sha256);
  try {
    await t.ready;
  } catch (e) {
    return { ready: false, readyError: describe(e) };
  }
  try {
    const emit = await t.createUnidirectionalStream();
    const w = emit.getWriter();
    await w.write(await handshakeFrame(events));
  } catch (e) {
    // §4: the stream may fail before the close arrives; wait for it.
  }
  try {
    const info = await t.closed;
    return { ready: true, closeCode: info.closeCode, reason: info.reason };
  } catch (e) {
    return { ready: true, closedError: describe(e) };
  }
}

// frame builds a §5 frame: u32 length (8 + payload), type, codec, two
// reserved bytes, u32 event id, payload.
function frame(type, codec, eventId, payload) {
  const f = new Uint8Array(12 + payload.length);
  const v = new DataView(f.buffer);
  v.setUint32(0, 8 + payload.length);
  f[4] = type;
  f[5] = codec;
  v.setUint32(8, eventId);
  f.set(payload, 12);
  return f;
}

const json = (o) => new TextEncoder().encode(JSON.stringify(o));

// frameReader yields {type, codec, eventId, payload} frames from a readable
// stream, counting bytes: reads carry no boundaries (§5).
function frameReader(readable) {
  const reader = readable.getReader();
  let buf = new Uint8Array(0);
  return async function next() {
    for (;;) {
      if (buf.length >= 4) {
        const len = new DataView(buf.buffer, buf.byteOffset).getUint32(0);
        if (buf.length >= 4 + len) {
          const v = new DataView(buf.buffer, buf.byteOffset);
          const f = { type: buf[4], codec: buf[5], eventId: v.getUint32(8), payload: buf.slice(12, 4 + len) };
          buf = buf.slice(4 + len);
          return f;
        }
      }
      const { value, done } = await reader.read();
      if (done) return null;
      const joined = new Uint8Array(buf.length + value.length);
      joined.set(buf);
      joined.set(value, buf.length);
      buf = joined;
    }
  };
}

// conformance speaks the protocol by hand against the conformance server
// (issue 4): handshake, an echo call, a yields call of 100 elements under
// the §6.6 credit window, and a move datagram round trip. table is the
// contract's [[name, id, lane], ...].
async function conformance(url, sha256, table) {
  const ids = Object.fromEntries(table.map(([name, id]) => [name, id]));
  const t = open(url, sha256);
  await t.ready;
  const out = {};

  // §4.1: frame 0 of this side's emit stream, without waiting for the peer's.
  const emit = (await t.createUnidirectionalStream()).getWriter();
  const hs = json({ v: 0, feat: [], events: [...table].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)) });
  await emit.write(frame(0x01, 0x01, 0, hs));
  const incoming = t.incomingUnidirectionalStreams.getReader();
  const serverEmit = frameReader((await incoming.read()).value);
  const first = await serverEmit();
  out.serverHandshake = { type: first.type, events: JSON.parse(new TextDecoder().decode(first.payload)).events.length };

  // echo: CALL_REQUEST then FIN; one CALL_RESPONSE then the stream's end.
  const echo = await t.createBidirectionalStream();
  const ew = echo.writable.getWriter();
  await ew.write(frame(0x03, 0x01, ids.echo, json({ text: 'hello from chromium' })));
  await ew.close();
  const echoFrames = frameReader(echo.readable);
  const resp = await echoFrames();
  out.echo = { type: resp.type, payload: new TextDecoder().decode(resp.payload), end: (await echoFrames()) === null };

  // count: no FIN; CALL_CREDIT {credit: 16} per 16 elements consumed.
  const count = await t.createBidirectionalStream();
  const cw = count.writable.getWriter();
  await cw.write(frame(0x03, 0x01, ids.count, json({ n: 100 })));
  const countFrames = frameReader(count.readable);
  const items = [];
  for (;;) {
    const f = await countFrames();
    if (f === null) break;
    if (f.type !== 0x04) {
      items.push({ unexpectedType: f.type });
      break;
    }
    items.push(JSON.parse(new TextDecoder().decode(f.payload)).i);
    if (items.length % 16 === 0) await cw.write(frame(0x08, 0x01, 0, json({ credit: 16 })));
  }
  await cw.close();
  out.count = items;

  // move: a §7.1 datagram (codec, event id, origin, sequence, payload),
  // echoed back by the server; retried, since datagrams may be lost.
  const dgw = t.datagrams.writable.getWriter();
  const dgr = t.datagrams.readable.getReader();
  const point = json({ x: 1.5, y: -2 });
  let echoed = null;
  const waitMove = (async () => {
    for (;;) {
      const { value, done } = await dgr.read();
      if (done) return null;
      if (value.length > 13 && new DataView(value.buffer, value.byteOffset).getUint32(1) === ids.move) {
        return new TextDecoder().decode(value.slice(13));
      }
    }
  })();
  for (let seq = 1; seq <= 50 && echoed === null; seq++) {
    const d = new Uint8Array(13 + point.length);
    const v = new DataView(d.buffer);
    d[0] = 0x01;
    v.setUint32(1, ids.move);
    v.setUint32(5, 1);
    v.setUint32(9, seq);
    d.set(point, 13);
    await dgw.write(d);
    echoed = await Promise.race([waitMove, new Promise((r) => setTimeout(() => r(null), 100))]);
  }
  out.move = echoed;

  t.close({ closeCode: 0, reason: 'done' });
  return out;
}

async function readAll(readable) {
  const reader = readable.getReader();
  const chunks = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    chunks.push(...value);
  }
  return new TextDecoder().decode(new Uint8Array(chunks));
}

// lanes: a bidirectional stream echoed by the server, a datagram echoed
// back, a stream the page aborts with code 9 and the server resets with 9,
// then a close from the page.
async function lanes(url, sha256) {
  const t = open(url, sha256);
  await t.ready;
  const out = { maxDatagramSize: t.datagrams.maxDatagramSize };

  const call = await t.createBidirectionalStream();
  const w = call.writable.getWriter();
  await w.write(new TextEncoder().encode('hello from chromium'));
  await w.close();
  out.echo = await readAll(call.readable);

  const dgReader = t.datagrams.readable.getReader();
  const dgWriter = t.datagrams.writable.getWriter();
  const got = dgReader.read();
  let answer = null;
  for (let i = 0; i < 50 && answer === null; i++) {
    await dgWriter.write(new TextEncoder().encode('ping'));
    answer = await Promise.race([got, new Promise((r) => setTimeout(() => r(null), 100))]);
  }
  out.datagram = answer ? new TextDecoder().decode(answer.value) : null;

  // The server acknowledges the first byte, so the stream is known to it
  // before the abort (a reset may otherwise overtake the stream's header).
  const aborted = await t.createBidirectionalStream();
  const aw = aborted.writable.getWriter();
  const ar = aborted.readable.getReader();
  await aw.write(new TextEncoder().encode('x'));
  await ar.read();
  await aw.abort(new WebTransportError({ streamErrorCode: 9 }));
  try {
    for (;;) {
      const { done } = await ar.read();
      if (done) break;
    }
    out.resetByServer = null;
  } catch (e) {
    out.resetByServer = describe(e);
  }

  t.close({ closeCode: 1004, reason: 'page closes: zero-length frame' });
  try {
    const info = await t.closed;
    out.closed = { closeCode: info.closeCode, reason: info.reason };
  } catch (e) {
    out.closed = describe(e);
  }
  return out;
}

// refused: opens n bidirectional streams at once, each writing a few bytes
// and FIN as a call would, and counts how they ended, waitMs after every
// writer settled (up to 15 s: a loaded host acknowledges FINs late): the readable ('code <n>' for a reset with its code, 'no
// code' for an error without one, 'fin', 'data', or 'silent' when it had
// not settled), then the writer ('closed', 'w code <n>' for a STOP_SENDING
// with its code, 'w <error name>' for an error without one, or 'open').
async function refused(url, sha256, n, waitMs) {
  const t = open(url, sha256);
  await t.ready;
  const one = async () => {
    const s = await t.createBidirectionalStream();
    const w = s.writable.getWriter();
    w.write(new Uint8Array([1, 2, 3])).catch(() => {});
    w.close().catch(() => {});
    let outcome = 'silent';
    let writer = 'open';
    w.closed.then(() => (writer = 'closed'), (e) => (writer = typeof e.streamErrorCode === 'number' ? 'w code ' + e.streamErrorCode : 'w ' + e.name));
    s.readable.getReader().read().then(
      (r) => (outcome = r.done ? 'fin' : 'data'),
      (e) => (outcome = typeof e.streamErrorCode === 'number' ? 'code ' + e.streamErrorCode : 'no code'),
    );
    return () => outcome + ', ' + writer;
  };
  const outcomes = await Promise.all(Array.from({ length: n }, one));
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  for (const end = Date.now() + 15000; Date.now() < end && outcomes.some((o) => o().endsWith(', open')); ) await sleep(50);
  await sleep(waitMs);
  const counts = {};
  for (const o of outcomes) counts[o()] = (counts[o()] || 0) + 1;
  t.close();
  return counts;
}

window.tio = { closed, lanes, mismatch, conformance, refused };
window.tioReady = true;
