// In-memory sessions for tests, ours and users': a transport pair that
// implements the seam (transport.ts) with fault injection, a fake clock,
// and a scripted raw server peer that speaks the protocol frame by frame.
// Nothing here opens a socket or arms a real timer.

import { MaxCloseReason, MaxWebSocketReason } from './codes.js';
import { compileContract, type CompiledContract, type Contract } from './contract.js';
import { StreamResetError, TransportError } from './errors.js';
import type { CallStream, Clock, CloseInfo, Conn, ConnectContext, Connector, Mapping, Opened, ReceiveStream, SendStream } from './transport.js';
import { FrameHandshake, FrameEmit, FrameCallResponse, FrameCallError, FrameJoin, FrameLeave, FrameCallCredit, FrameDatagram, CodecJson, CodecBytes, FrameDecoder, encodeFrame, type Codec, type Frame } from './wire/frame.js';
import { ProtocolVersion, decodeHandshake, encodeHandshake, type EventEntry, type Handshake } from './wire/handshake.js';
import { encodeDatagram } from './wire/datagram.js';
import { encodeCallError, encodeRoom, parseCredit } from './wire/payload.js';
import { cutReason } from './wire/json.js';
import { utf8Decode, utf8Encode } from './wire/utf8.js';

// ---- the fake clock -----------------------------------------------------

interface FakeTimer {
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * A Clock that moves only when told. advance(ms) fires every timer due by
 * then, in order of due time, including timers armed by those it fires; a
 * timer armed for a time already reached fires at once (on a microtask, so
 * the code arming it is not re-entered).
 */
export class FakeClock implements Clock {
  private t: number;
  private seq = 0;
  private readonly timers = new Map<number, FakeTimer>();

  constructor(start = 0) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    if (!(ms > 0)) {
      this.timers.set(id, { at: this.t, seq: id, fn });
      queueMicrotask(() => {
        if (this.timers.delete(id)) fn();
      });
      return id;
    }
    this.timers.set(id, { at: this.t + ms, seq: id, fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Timers armed and not yet fired or cleared. */
  get pending(): number {
    return this.timers.size;
  }

  /** Moves time forward by ms, firing every timer due by then. */
  advance(ms: number): void {
    const target = this.t + ms;
    for (;;) {
      let next: [number, FakeTimer] | undefined;
      for (const e of this.timers) {
        if (e[1].at <= target && (next === undefined || e[1].at < next[1].at || (e[1].at === next[1].at && e[1].seq < next[1].seq))) next = e;
      }
      if (next === undefined) break;
      this.timers.delete(next[0]);
      this.t = Math.max(this.t, next[1].at);
      next[1].fn();
    }
    this.t = target;
  }

  /** As advance, letting promises settle before and after, so async code the timers start runs. */
  async tick(ms: number): Promise<void> {
    await settle();
    this.advance(ms);
    await settle();
  }
}

/**
 * Lets pending promise callbacks and I/O of the in-memory transport run:
 * a few turns of the host's event loop (no time passes on a FakeClock).
 */
export async function settle(turns = 3): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setTimeout(resolve, 0));
}

// ---- the in-memory transport pair -------------------------------------

function endedError(): TransportError {
  return new TransportError('WT_SESSION_CLOSED', 'the in-memory session ended');
}

interface Waiter<T> {
  resolve: (v: T) => void;
  reject: (e: unknown) => void;
}

/** One direction of a stream: bytes written on one side, read on the other, with a flow-control window. */
class Pipe {
  private readonly chunks: Uint8Array[] = [];
  private bytes = 0;
  private fin = false;
  private resetCode: number | undefined;
  private stopCode: number | undefined;
  private ended = false;
  private readonly readers: Array<Waiter<Uint8Array | null>> = [];
  private readonly writers: Array<Waiter<void>> = [];
  /** Writes so far (a coalescing writer's count). */
  writes = 0;

  constructor(private readonly window: number) {}

  // The writing side.
  write(chunk: Uint8Array): Promise<void> {
    if (this.ended) return Promise.reject(endedError());
    if (this.resetCode !== undefined) return Promise.reject(new StreamResetError(this.resetCode, false));
    if (this.stopCode !== undefined) return Promise.reject(new StreamResetError(this.stopCode, true));
    if (this.fin) return Promise.reject(new Error('write after the stream was finished'));
    this.writes++;
    if (chunk.length > 0) {
      this.chunks.push(chunk.slice()); // the writer reuses chunk once this settles
      this.bytes += chunk.length;
      this.wakeReader();
    }
    if (this.bytes <= this.window) return Promise.resolve();
    return new Promise<void>((resolve, reject) => this.writers.push({ resolve, reject }));
  }

  finish(): Promise<void> {
    if (this.ended) return Promise.reject(endedError());
    if (this.resetCode !== undefined) return Promise.reject(new StreamResetError(this.resetCode, false));
    this.fin = true;
    this.wakeReader();
    return Promise.resolve();
  }

  reset(code: number): void {
    if (this.ended || this.fin || this.resetCode !== undefined) return;
    this.resetCode = code;
    // A reset discards what the reader has not read (no partial delivery).
    this.chunks.length = 0;
    this.bytes = 0;
    this.failWriters(new StreamResetError(code, false));
    this.wakeReader();
  }

  // The reading side.
  read(): Promise<Uint8Array | null> {
    const r = this.takeRead();
    if (r !== undefined) return r;
    return new Promise<Uint8Array | null>((resolve, reject) => this.readers.push({ resolve, reject }));
  }

  stop(code: number): void {
    if (this.ended || this.stopCode !== undefined) return;
    this.stopCode = code;
    this.chunks.length = 0;
    this.bytes = 0;
    this.failWriters(new StreamResetError(code, true));
    for (const r of this.readers.splice(0)) r.reject(new StreamResetError(code, false));
  }

  /** The session ended: every pending and later operation fails. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.chunks.length = 0;
    this.bytes = 0;
    const e = endedError();
    this.failWriters(e);
    for (const r of this.readers.splice(0)) r.reject(e);
  }

  /** Whether the writer reset its side (and with which code). */
  get resetWith(): number | undefined {
    return this.resetCode;
  }

  /** Whether the reader stopped its side (and with which code). */
  get stoppedWith(): number | undefined {
    return this.stopCode;
  }

  get finished(): boolean {
    return this.fin;
  }

  private takeRead(): Promise<Uint8Array | null> | undefined {
    if (this.ended) return Promise.reject(endedError());
    if (this.stopCode !== undefined) return Promise.reject(new StreamResetError(this.stopCode, false));
    if (this.resetCode !== undefined) return Promise.reject(new StreamResetError(this.resetCode, true));
    const c = this.chunks.shift();
    if (c !== undefined) {
      this.bytes -= c.length;
      if (this.bytes <= this.window) for (const w of this.writers.splice(0)) w.resolve();
      return Promise.resolve(c);
    }
    if (this.fin) return Promise.resolve(null);
    return undefined;
  }

  private wakeReader(): void {
    while (this.readers.length > 0) {
      const r = this.takeRead();
      if (r === undefined) return;
      const w = this.readers.shift() as Waiter<Uint8Array | null>;
      r.then(w.resolve, w.reject);
    }
  }

  private failWriters(e: unknown): void {
    for (const w of this.writers.splice(0)) w.reject(e);
  }
}

function sendHalf(p: Pipe): SendStream {
  return { write: (c) => p.write(c), close: () => p.finish(), reset: (code) => p.reset(code) };
}

function receiveHalf(p: Pipe): ReceiveStream {
  return { read: () => p.read(), stop: (code) => p.stop(code) };
}

/** A call stream as the in-memory pair carries it, with what each side did to it. */
export interface MemoryCallStream extends CallStream {
  /** The pipe this side writes (client to server for the opener). */
  readonly out: { readonly resetWith: number | undefined; readonly stoppedWith: number | undefined; readonly finished: boolean; readonly writes: number };
  /** The pipe this side reads. */
  readonly in: { readonly resetWith: number | undefined; readonly stoppedWith: number | undefined; readonly finished: boolean; readonly writes: number };
}

function callHalf(out: Pipe, inp: Pipe): MemoryCallStream {
  return {
    write: (c) => out.write(c),
    close: () => out.finish(),
    reset: (code) => out.reset(code),
    read: () => inp.read(),
    stop: (code) => inp.stop(code),
    out,
    in: inp,
  };
}

/** A queue with waiting takers, ended once. */
class Inbox<T> {
  private readonly items: T[] = [];
  private readonly takers: Array<Waiter<T | null>> = [];
  private done = false;

  constructor(private readonly limit = Infinity) {}

  put(v: T): void {
    if (this.done) return;
    const t = this.takers.shift();
    if (t !== undefined) t.resolve(v);
    else if (this.items.length < this.limit) this.items.push(v);
  }

  take(): Promise<T | null> {
    const v = this.items.shift();
    if (v !== undefined) return Promise.resolve(v);
    if (this.done) return Promise.resolve(null);
    return new Promise<T | null>((resolve, reject) => this.takers.push({ resolve, reject }));
  }

  end(): void {
    this.done = true;
    this.items.length = 0;
    for (const t of this.takers.splice(0)) t.resolve(null);
  }
}

/** An end of an in-memory pair: a Conn whose emit streams can also be finished, reset and stopped, as a scripted peer does. */
export interface MemoryConn extends Conn {
  openEmit(): Promise<SendStream>;
  acceptEmit(): Promise<ReceiveStream>;
}

/** The server's end of an in-memory pair: a Conn plus the calls the client opens. */
export interface ServerConn extends MemoryConn {
  /** The next call stream the client opened, or null once the session ended. */
  acceptCall(): Promise<MemoryCallStream | null>;
}

export interface MemoryPairOptions {
  /** 'webtransport' (every lane, the default) or 'websocket' (the reliable-only mapping of §3.3: no call streams, no datagrams). */
  readonly mapping?: Mapping;
  /** What maxDatagramSize() reports on both ends; 0 (the default) means none reported (§7.4: 1024 assumed). */
  readonly maxDatagramSize?: number;
  /** Bytes a stream direction holds unread before writes wait (flow control); default 256 KiB. */
  readonly window?: number;
}

/**
 * Two connected ends of one in-memory session. Faults: loseConnection(),
 * dropDatagrams, maxDatagramSize, and what each side can do to its own
 * streams (reset, stop, FIN). The client end is what a Connector hands the
 * engine; the server end is for a scripted peer.
 */
export class MemoryPair {
  readonly mapping: Mapping;
  readonly client: MemoryConn;
  readonly server: ServerConn;
  /** What both ends report as their maximum datagram size (§7.4); change it at any time. */
  maxDatagramSize: number;
  /** While true, datagrams are lost in transit (§7.5). */
  dropDatagrams = false;
  /** The client's emit stream (client to server), once opened. */
  clientEmit: Pipe | undefined;
  /** The server's emit stream (server to client), once opened. */
  serverEmit: Pipe | undefined;
  /** Every call stream, in the order the client opened them (client to server, server to client). */
  readonly calls: Array<{ readonly up: Pipe; readonly down: Pipe }> = [];
  /** Every call stream the server opened, in order (server to client, client to server). */
  readonly serverCalls: Array<{ readonly up: Pipe; readonly down: Pipe }> = [];
  /** Datagrams the client sent, whether delivered or dropped. */
  readonly clientDatagrams: Uint8Array[] = [];

  private readonly window: number;
  private info: { client: CloseInfo; server: CloseInfo } | undefined;
  private readonly closedClient: Promise<CloseInfo>;
  private readonly closedServer: Promise<CloseInfo>;
  private resolveClient!: (i: CloseInfo) => void;
  private resolveServer!: (i: CloseInfo) => void;
  private readonly emitWaiters = { client: new Inbox<Pipe>(1), server: new Inbox<Pipe>(1) };
  private readonly callInbox = new Inbox<MemoryCallStream>();
  /** The call streams the server opened, for the client to accept. */
  private readonly clientCallInbox = new Inbox<MemoryCallStream>();
  private readonly datagramInbox = { client: new Inbox<Uint8Array>(1024), server: new Inbox<Uint8Array>(1024) };
  private readonly pipes: Pipe[] = [];

  constructor(opts: MemoryPairOptions = {}) {
    this.mapping = opts.mapping ?? 'webtransport';
    this.maxDatagramSize = opts.maxDatagramSize ?? 0;
    this.window = opts.window ?? 256 << 10;
    this.closedClient = new Promise((r) => (this.resolveClient = r));
    this.closedServer = new Promise((r) => (this.resolveServer = r));
    this.client = this.end('client');
    this.server = this.end('server') as ServerConn;
  }

  /** Whether the session ended, and how each side saw it. */
  get closeInfo(): { readonly client: CloseInfo; readonly server: CloseInfo } | undefined {
    return this.info;
  }

  /** Ends the session with no close from either side (a killed process, a dead path, §11). */
  loseConnection(): void {
    const lost: CloseInfo = { code: 0, reason: '', remote: false, lost: true };
    this.finish(lost, lost);
  }

  private pipe(): Pipe {
    const p = new Pipe(this.window);
    if (this.info !== undefined) p.end();
    this.pipes.push(p);
    return p;
  }

  private finish(client: CloseInfo, server: CloseInfo): void {
    if (this.info !== undefined) return;
    this.info = { client, server };
    for (const p of this.pipes) p.end();
    this.emitWaiters.client.end();
    this.emitWaiters.server.end();
    this.callInbox.end();
    this.clientCallInbox.end();
    this.datagramInbox.client.end();
    this.datagramInbox.server.end();
    this.resolveClient(client);
    this.resolveServer(server);
  }

  private end(side: 'client' | 'server'): MemoryConn | ServerConn {
    const peer = side === 'client' ? 'server' : 'client';
    const conn: {
      -readonly [K in keyof ServerConn]?: ServerConn[K];
    } = {
      mapping: this.mapping,
      openEmit: async () => {
        if (this.info !== undefined) throw endedError();
        const p = this.pipe();
        if (side === 'client') this.clientEmit = p;
        else this.serverEmit = p;
        this.emitWaiters[peer].put(p);
        return sendHalf(p);
      },
      acceptEmit: async () => {
        const p = await this.emitWaiters[side].take();
        if (p === null) throw endedError();
        return receiveHalf(p);
      },
      maxDatagramSize: () => this.maxDatagramSize,
      close: (code: number, reason: string) => {
        const cut = cutReason(reason, this.mapping === 'websocket' ? MaxWebSocketReason : MaxCloseReason);
        const mine: CloseInfo = { code, reason: cut, remote: false, lost: false };
        const theirs: CloseInfo = { code, reason: cut, remote: true, lost: false };
        if (side === 'client') this.finish(mine, theirs);
        else this.finish(theirs, mine);
      },
      closed: side === 'client' ? this.closedClient : this.closedServer,
    };
    if (this.mapping === 'webtransport') {
      // Room for every datagram: the ring drains at once.
      conn.sendDatagram = (queue) => {
        for (let d; this.info === undefined && (d = queue.pop()) !== undefined; ) {
          if (side === 'client') this.clientDatagrams.push(d);
          if (!this.dropDatagrams) this.datagramInbox[peer].put(d);
        }
      };
      conn.receiveDatagram = () => this.datagramInbox[side].take();
      // Either side may open a call stream (§3.2); the other accepts it.
      const [outbox, inbox] = side === 'client' ? [this.callInbox, this.clientCallInbox] : [this.clientCallInbox, this.callInbox];
      conn.openCall = async () => {
        if (this.info !== undefined) throw endedError();
        const up = this.pipe();
        const down = this.pipe();
        (side === 'client' ? this.calls : this.serverCalls).push({ up, down });
        outbox.put(callHalf(down, up));
        return callHalf(up, down);
      };
      conn.acceptCall = () => inbox.take();
    } else if (side === 'server') {
      conn.acceptCall = () => Promise.resolve(null);
    }
    return conn as ServerConn;
  }
}

// ---- the scripted server peer --------------------------------------------

/** Reads frames from a stream, one at a time; null at a clean end. Throws a TransportError on a malformed frame. */
class FrameReader {
  private readonly dec = new FrameDecoder();
  /** Chunks read so far: one per write of the peer on the in-memory pair. */
  chunks = 0;

  constructor(private readonly rs: ReceiveStream) {}

  async next(): Promise<Frame | null> {
    for (;;) {
      const f = this.dec.next();
      if (f !== undefined) return f;
      const c = await this.rs.read();
      if (c === null) {
        if (!this.dec.empty) throw new TransportError('WT_PROTOCOL_ERROR', 'the stream ended inside a frame (§5)');
        return null;
      }
      this.chunks++;
      this.dec.push(c);
    }
  }
}

function valueBytes(codec: number, value: unknown): Uint8Array {
  if (codec === CodecBytes) {
    if (!(value instanceof Uint8Array)) throw new TypeError('a bytes slot takes a Uint8Array');
    return value;
  }
  return utf8Encode(JSON.stringify(value));
}

/** Decodes a frame's payload as JSON (codec 0x01) or returns the bytes. */
export function payloadValue(f: { readonly codec: number; readonly payload: Uint8Array }): unknown {
  return f.codec === CodecJson ? JSON.parse(utf8Decode(f.payload)) : f.payload;
}

/**
 * A raw server peer for tests: it speaks the protocol frame by frame on the
 * server end of a MemoryPair (or any Conn with acceptCall), so a test can
 * send exactly the bytes it means, valid or not, and see exactly what the
 * client sent.
 */
export class ScriptedServer {
  readonly conn: ServerConn;
  readonly contract: CompiledContract;
  private reader: FrameReader | undefined;
  private emit: SendStream | undefined;

  constructor(conn: ServerConn, contract: Contract) {
    this.conn = conn;
    this.contract = compileContract(contract);
  }

  /** The client's emit stream as frames; accepts it on first use. */
  async nextFrame(): Promise<Frame | null> {
    this.reader ??= new FrameReader(await this.conn.acceptEmit());
    return this.reader.next();
  }

  /** Writes the client's emit stream arrived in: one per client write on the in-memory pair. */
  get chunksRead(): number {
    return this.reader?.chunks ?? 0;
  }

  /** Reads the client's frame 0 and decodes it (§4.1). */
  async readHandshake(): Promise<Handshake> {
    const f = await this.nextFrame();
    if (f === null || f.type !== FrameHandshake) throw new Error(`expected the client's HANDSHAKE, got ${f === null ? 'the end' : f.type}`);
    return decodeHandshake(f.payload);
  }

  /** Writes bytes on the server's emit stream, opening it on first use. */
  async sendRaw(b: Uint8Array): Promise<void> {
    this.emit ??= await this.conn.openEmit();
    await this.emit.write(b);
  }

  /** Writes one frame as given (the encoder still refuses what no peer may send; use sendRaw for that). */
  sendFrame(type: number, codec: number, eventId: number, payload: Uint8Array): Promise<void> {
    return this.sendRaw(encodeFrame(type, codec, eventId, payload));
  }

  /** Sends the server's handshake (§4.1): by default this contract's table, version 0, no features. */
  sendHandshake(h: { v?: number; feat?: string[]; events?: readonly EventEntry[] } = {}): Promise<void> {
    const payload = encodeHandshake({ v: h.v ?? ProtocolVersion, feat: h.feat ?? [], events: h.events ?? this.contract.table });
    return this.sendFrame(FrameHandshake, CodecJson, 0, payload);
  }

  /** Reads the client's handshake and answers with this contract's: an established session. */
  async establish(): Promise<Handshake> {
    await this.sendHandshake();
    return this.readHandshake();
  }

  /** Sends an EMIT of a contract event with its slot's codec (§6.1). */
  sendEmit(name: string, value: unknown): Promise<void> {
    const ev = this.event(name);
    return this.sendFrame(FrameEmit, ev.payloadCodec, ev.id, valueBytes(ev.payloadCodec, value));
  }

  join(room: string): Promise<void> {
    return this.sendFrame(FrameJoin, CodecJson, 0, encodeRoom(room));
  }

  leave(room: string): Promise<void> {
    return this.sendFrame(FrameLeave, CodecJson, 0, encodeRoom(room));
  }

  /** Encodes a §7.1 datagram of a contract event. */
  datagram(name: string, origin: number, seq: number, value: unknown): Uint8Array {
    const ev = this.event(name);
    return encodeDatagram({ codec: ev.payloadCodec, eventId: ev.id, origin, seq, payload: valueBytes(ev.payloadCodec, value) });
  }

  /** Sends a datagram as given: over WebTransport as a datagram, on the WebSocket mapping as a DATAGRAM frame (§3.3). */
  async sendDatagram(b: Uint8Array): Promise<void> {
    if (this.conn.sendDatagram !== undefined) this.conn.sendDatagram([b]);
    else await this.sendFrame(FrameDatagram, CodecJson, 0, b);
  }

  /** Closes the session with a §10.2 code and reason. */
  close(code: number, reason = ''): void {
    this.conn.close(code, reason);
  }

  /** The next call the client opens, with its CALL_REQUEST read; null once the session ended. */
  async acceptCall(): Promise<ScriptedCall | null> {
    const st = await this.conn.acceptCall();
    if (st === null) return null;
    const reader = new FrameReader(st);
    const request = await reader.next();
    if (request === null) throw new Error('the call stream ended before its CALL_REQUEST');
    return new ScriptedCall(st, reader, request, this.contract);
  }

  /**
   * Opens a call stream toward the client (§3.2), writes bytes on it and,
   * unless fin is false, finishes its send side; the client's answer is
   * read frame by frame with next() (null at its FIN).
   */
  async openCall(bytes: Uint8Array, fin = true): Promise<{ readonly stream: MemoryCallStream; next(): Promise<Frame | null> }> {
    const open = this.conn.openCall;
    if (open === undefined) throw new Error('this mapping has no call streams (§3.3)');
    const stream = (await open()) as MemoryCallStream;
    if (bytes.length > 0) await stream.write(bytes);
    if (fin) await stream.close();
    const reader = new FrameReader(stream);
    return { stream, next: () => reader.next() };
  }

  private event(name: string) {
    const ev = this.contract.byName.get(name);
    if (ev === undefined) throw new Error(`event '${name}' is not in the scripted server's contract`);
    return ev;
  }
}

/** One call as the scripted server answers it. */
export class ScriptedCall {
  /** Credit the client granted so far in CALL_CREDIT frames (§6.6), beyond the initial 32. */
  granted = 0;
  /** CALL_CREDIT frames read so far. */
  creditFrames = 0;

  constructor(
    readonly stream: MemoryCallStream,
    private readonly reader: FrameReader,
    readonly request: Frame,
    private readonly contract: CompiledContract,
  ) {}

  /** The event the request names. */
  get name(): string {
    return this.contract.byId.get(this.request.eventId)?.name ?? '';
  }

  /** The request's payload, decoded by its codec. */
  get value(): unknown {
    return payloadValue(this.request);
  }

  /** The next frame the client sent after the request (CALL_CREDIT counted as read), or null at its FIN. */
  async nextFrame(): Promise<Frame | null> {
    const f = await this.reader.next();
    if (f !== null && f.type === FrameCallCredit) {
      this.creditFrames++;
      this.granted += parseCredit(f.payload) ?? 0;
    }
    return f;
  }

  /** Reads CALL_CREDIT frames until the credit granted reaches total; false if the stream ended first. */
  async waitGranted(total: number): Promise<boolean> {
    while (this.granted < total) {
      try {
        if ((await this.nextFrame()) === null) return false;
      } catch {
        return false;
      }
    }
    return true;
  }

  /** Writes a CALL_RESPONSE with the result slot's codec (§6.3). */
  respond(value: unknown): Promise<void> {
    const ev = this.contract.byId.get(this.request.eventId);
    const codec = ev?.resultCodec || CodecJson;
    return this.stream.write(encodeFrame(FrameCallResponse, codec, 0, valueBytes(codec, value)));
  }

  /** Writes a CALL_ERROR (§6.4). */
  error(code: string, message: string): Promise<void> {
    return this.stream.write(encodeFrame(FrameCallError, CodecJson, 0, encodeCallError({ code, message })));
  }

  /** Writes bytes as given. */
  raw(b: Uint8Array): Promise<void> {
    return this.stream.write(b);
  }

  /** Finishes the response (FIN). */
  end(): Promise<void> {
    return this.stream.close();
  }

  /** The code the client reset its side with (§8), or undefined. */
  get clientReset(): number | undefined {
    return this.stream.in.resetWith;
  }

  /** The code the client stopped reading with, or undefined. */
  get clientStopped(): number | undefined {
    return this.stream.out.stoppedWith;
  }
}

/**
 * A Connector over in-memory pairs: each open() makes a new pair, hands its
 * server end to serve (a ScriptedServer speaking the given contract) and the
 * client end to the engine. fail(attempt) may reject an attempt instead.
 */
export function memoryConnector(
  contract: Contract,
  serve: (server: ScriptedServer, pair: MemoryPair, attempt: number) => unknown,
  opts: MemoryPairOptions & { readonly fail?: (attempt: number) => unknown; readonly fallbackReason?: string } = {},
): Connector & { readonly pairs: readonly MemoryPair[] } {
  const pairs: MemoryPair[] = [];
  return {
    pairs,
    async open(ctx: ConnectContext): Promise<Opened> {
      const attempt = pairs.length + 1;
      const failure = opts.fail?.(attempt);
      if (failure !== undefined) {
        pairs.push(new MemoryPair(opts));
        throw failure;
      }
      if (ctx.signal.aborted) throw new TransportError('WT_SESSION_CLOSED', 'the connect attempt was abandoned');
      const pair = new MemoryPair(opts);
      pairs.push(pair);
      Promise.resolve()
        .then(() => serve(new ScriptedServer(pair.server, contract), pair, attempt))
        .catch(() => {});
      return { conn: pair.client, fallbackReason: opts.fallbackReason ?? null };
    },
  };
}
