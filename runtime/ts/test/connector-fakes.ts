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

  constructor(url: string) {
    this.url = url;
    FakeWebSocket.last = this;
    FakeWebSocket.count++;
  }

  onopen: ((event: unknown) => void) | null = null;
  onmessage: ((event: { readonly data: unknown }) => void) | null = null;
  onclose: ((event: { readonly code: number; readonly reason: string }) => void) | null = null;
  onerror: ((event: unknown) => void) | null = null;

  send(data: Uint8Array): void {
    if (this.readyState !== 1) throw new Error('InvalidStateError');
    this.sent.push(data.slice());
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
  serverOpen(): void {
    this.readyState = 1;
    this.onopen?.({});
  }
  serverSend(data: unknown): void {
    this.onmessage?.({ data });
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
