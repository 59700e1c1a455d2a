// Fakes the connector tests drive: a clock whose time moves only when the
// test says so, and a WebSocket class whose far end is the test.

import type { Clock, ConnectContext } from '../src/transport.js';
import type { WebSocketLike } from '../src/websocket.js';

/** A clock that moves only on advance(); timers fire in deadline order. */
export class ManualClock implements Clock {
  private t = 0;
  private seq = 0;
  private timers = new Map<number, { at: number; fn: () => void }>();

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.timers.set(id, { at: this.t + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Moves time forward by ms, firing every timer due on the way (and those they arm). */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.timers) if (e[1].at <= end && (next === undefined || e[1].at < next[1].at)) next = e;
      if (next === undefined) break;
      this.timers.delete(next[0]);
      this.t = next[1].at;
      next[1].fn();
      await settle();
    }
    this.t = end;
    await settle();
  }

  /** Timers still armed. */
  pending(): number {
    return this.timers.size;
  }
}

/** Lets every queued promise job run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
}

export function context(clock: Clock, signal: AbortSignal = new AbortController().signal): ConnectContext {
  return { clock, signal };
}

/** A WebSocket whose server is the test: it records what the client does and delivers what the test says. */
export class FakeWebSocket implements WebSocketLike {
  static last: FakeWebSocket | undefined;
  static count = 0;

  readonly url: string;
  binaryType = 'blob';
  readyState = 0;
  bufferedAmount = 0;
  /** Every message the client sent. */
  readonly sent: Uint8Array[] = [];
  /** The client's close() calls. */
  readonly closes: { code: number | undefined; reason: string | undefined }[] = [];
  terminated = false;
  /** A browser refuses close codes other than 1000 and 3000–4999. */
  browserCodes = true;
  /** Keep each message by reference, as `ws` does while it compresses another, instead of copying it as a browser does. */
  byReference = false;

  constructor(url: string) {
    this.url = url;
    FakeWebSocket.last = this;
    FakeWebSocket.count++;
  }

  onopen: ((event: unknown) => void) | null = null;
  onmessage: ((event: { readonly data: unknown }) => void) | null = null;
  onclose: ((event: { readonly code: number; readonly reason: string }) => void) | null = null;
  onerror: ((event: unknown) => void) | null = null;

  /** As a browser's: throws while connecting, drops what a closing or closed socket is sent. */
  send(data: Uint8Array<ArrayBuffer>): void {
    if (this.readyState === 0) throw new Error('InvalidStateError');
    if (this.readyState === 1) this.sent.push(this.byReference ? data : data.slice());
  }

  close(code?: number, reason?: string): void {
    if (this.browserCodes && code !== undefined && code !== 1000 && (code < 3000 || code > 4999)) {
      throw new Error('InvalidAccessError');
    }
    this.closes.push({ code, reason });
    this.readyState = 2;
  }

  terminate(): void {
    this.terminated = true;
    this.readyState = 3;
  }

  // The server's side.
  /** As a browser's, Node's and `ws`'s: a socket closed while connecting never opens. */
  serverOpen(): void {
    if (this.readyState !== 0) return;
    this.readyState = 1;
    this.onopen?.({});
  }
  serverSend(data: unknown): void {
    this.onmessage?.({ data });
  }
  /** A socket error, as Node 20's WebSocket reports a failed upgrade: no close event follows. */
  serverError(): void {
    this.onerror?.({});
  }
  serverClose(code: number, reason = ''): void {
    this.readyState = 3;
    this.onclose?.({ code, reason });
  }
}

/** The bytes of b as an ArrayBuffer of their own, as a browser delivers a binary message. */
export function message(...bytes: number[]): ArrayBuffer {
  return new Uint8Array(bytes).buffer;
}

/** A readable stream the test feeds: chunks, a FIN, or an error. */
export class FedStream<T> {
  readonly stream: ReadableStream<T>;
  cancelled: unknown = 'not cancelled';
  private ctrl!: ReadableStreamDefaultController<T>;

  constructor() {
    this.stream = new ReadableStream<T>({
      start: (c) => {
        this.ctrl = c;
      },
      cancel: (reason) => {
        this.cancelled = reason;
      },
    });
  }
  push(chunk: T): void {
    this.ctrl.enqueue(chunk);
  }
  fin(): void {
    this.ctrl.close();
  }
  fail(err: unknown): void {
    this.ctrl.error(err);
  }
}

/** A writable stream that records what is written, and can be failed by the test. */
export class SinkStream {
  readonly stream: WritableStream<Uint8Array>;
  readonly chunks: Uint8Array[] = [];
  aborted: unknown = 'not aborted';
  closedCleanly = false;
  /** While true, a write is taken only once release() is called for it, as a busy browser's. */
  holding = false;
  readonly held: Array<() => void> = [];
  private ctrl!: WritableStreamDefaultController;

  constructor() {
    this.stream = new WritableStream<Uint8Array>({
      start: (c) => {
        this.ctrl = c;
      },
      write: (chunk) => {
        this.chunks.push(chunk);
        if (this.holding) return new Promise<void>((release) => this.held.push(release));
      },
      close: () => {
        this.closedCleanly = true;
      },
      abort: (reason) => {
        this.aborted = reason;
      },
    });
  }
  fail(err: unknown): void {
    this.ctrl.error(err);
  }
}

/**
 * The browser's WebTransportError as Chromium 156 and Firefox ESR 153
 * construct it: from one dictionary; the (message, options) form throws.
 */
export class FakeWebTransportError extends Error {
  readonly source: string;
  readonly streamErrorCode: number | null;
  constructor(init: { message?: string; source?: string; streamErrorCode?: number | null } = {}, ...rest: unknown[]) {
    if (typeof init !== 'object' || rest.length > 0) throw new TypeError("Failed to construct 'WebTransportError'");
    super(init.message ?? '');
    this.source = init.source ?? 'stream';
    this.streamErrorCode = init.streamErrorCode ?? null;
  }
}

/** A browser's WebTransport whose server is the test. */
export class FakeWebTransport {
  static last: FakeWebTransport | undefined;
  static count = 0;

  readonly url: string;
  readonly options: unknown;
  readonly ready: Promise<void>;
  readonly closed: Promise<{ closeCode?: number; reason?: string }>;
  reliability: string | undefined = undefined;
  readonly closes: unknown[] = [];
  readonly incoming = new FedStream<ReadableStream<Uint8Array>>();
  readonly incomingUnidirectionalStreams = this.incoming.stream;
  /** The bidirectional streams the server opens, which the test feeds. */
  readonly incomingBidi = new FedStream<{ readable: ReadableStream<Uint8Array>; writable: WritableStream<Uint8Array> }>();
  readonly incomingBidirectionalStreams = this.incomingBidi.stream;
  readonly datagramsIn = new FedStream<Uint8Array>();
  readonly datagramsOut = new SinkStream();
  readonly datagrams = { readable: this.datagramsIn.stream, writable: this.datagramsOut.stream, maxDatagramSize: 1215 };
  /** What the next createUnidirectionalStream/createBidirectionalStream does; default: a new sink. */
  openFails: unknown = undefined;
  readonly uni: SinkStream[] = [];
  readonly bidi: { sink: SinkStream; source: FedStream<Uint8Array> }[] = [];
  /** Closed or failed: as a browser's, it opens no more streams. */
  ended = false;

  resolveReady!: () => void;
  rejectReady!: (err: unknown) => void;
  resolveClosed!: (info: { closeCode?: number; reason?: string }) => void;
  rejectClosed!: (err: unknown) => void;

  constructor(url: string, options?: unknown) {
    this.url = url;
    this.options = options;
    this.ready = new Promise((res, rej) => {
      this.resolveReady = res;
      this.rejectReady = rej;
    });
    this.closed = new Promise((res, rej) => {
      this.resolveClosed = (info) => {
        this.ended = true;
        res(info);
      };
      this.rejectClosed = (err) => {
        this.ended = true;
        rej(err);
      };
    });
    this.ready.catch(() => {});
    FakeWebTransport.last = this;
    FakeWebTransport.count++;
  }

  close(info?: unknown): void {
    this.closes.push(info);
    this.ended = true;
  }

  async createUnidirectionalStream(): Promise<WritableStream<Uint8Array>> {
    if (this.ended) throw new DOMException('session closed', 'InvalidStateError');
    if (this.openFails !== undefined) throw this.openFails;
    const s = new SinkStream();
    this.uni.push(s);
    return s.stream;
  }

  async createBidirectionalStream(): Promise<{ readable: ReadableStream<Uint8Array>; writable: WritableStream<Uint8Array> }> {
    if (this.ended) throw new DOMException('session closed', 'InvalidStateError');
    if (this.openFails !== undefined) throw this.openFails;
    const b = { sink: new SinkStream(), source: new FedStream<Uint8Array>() };
    this.bidi.push(b);
    return { readable: b.source.stream, writable: b.sink.stream };
  }
}

/** Installs a global for one test. */
export function installGlobal(t: { after(fn: () => void): void }, name: string, value: unknown): void {
  const saved = Object.getOwnPropertyDescriptor(globalThis, name);
  Object.defineProperty(globalThis, name, { value, configurable: true, writable: true });
  t.after(() => {
    if (saved === undefined) Reflect.deleteProperty(globalThis, name);
    else Object.defineProperty(globalThis, name, saved);
  });
}
