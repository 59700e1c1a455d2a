// The WebSocket mapping of a transport-io session (the transport-io
// protocol, version 0, §3.3): the socket is both peers' emit streams, there
// are no call streams and no datagrams (the engine fails calls
// WT_LANE_UNAVAILABLE and sends unreliable events as DATAGRAM frames),
// session close codes travel as WebSocket close codes, and the mapping
// carries its own liveness (keepalive and idle deadline). Mirrors the Go
// runtime's transport/websocket.

import { CloseIdleTimeout, CloseNoError, ClosePeerTooSlow, CloseProtocolError, MaxWebSocketReason, sessionCodeFromWebSocket, webSocketCloseCode } from './codes.js';
import { abandoned, endedError, never, outcomeWithin, parseUrl } from './connector.js';
import { TransportError } from './errors.js';
import { cutReason } from './wire/json.js';
import type { Clock, CloseInfo, Conn, ConnectContext, Connector, Opened } from './transport.js';
import { CloseGraceMs, DefaultConnectTimeoutMs, drainPollMs, IdleTimeoutMs, KeepaliveIntervalMs, MaxUnreadBytes, OPEN, sendHighWater } from './limits.js';

export { CloseGraceMs, DefaultConnectTimeoutMs, IdleTimeoutMs, KeepaliveIntervalMs, MaxUnreadBytes } from './limits.js';

// A handler whose parameter is compared bivariantly, so that the event
// types of the browser, of Node and of `ws` all fit.
type Handler<E> = { bivarianceHack(event: E): void }['bivarianceHack'] | null;

/**
 * The part of a WebSocket this connector uses: the browser's, Node's global
 * (Node 22, or Node 20 with --experimental-websocket) and the `ws`
 * package's all have it.
 */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  readonly bufferedAmount: number;
  onopen: Handler<unknown>;
  onmessage: Handler<{ readonly data: unknown }>;
  onclose: Handler<{ readonly code: number; readonly reason: string }>;
  onerror: Handler<unknown>;
  send(data: Uint8Array<ArrayBuffer>): void;
  close(code?: number, reason?: string): void;
  /** `ws` only: drops the TCP connection at once (nothing once the socket closed). */
  terminate?(): void;
}

/** A WebSocket constructor: `WebSocket` of the browser, of Node, or of the `ws` package. */
export interface WebSocketConstructor {
  new (url: string): WebSocketLike;
}

export interface WebSocketOptions {
  /** The WebSocket to use; default globalThis.WebSocket (WT_NO_SUPPORT when there is none). */
  readonly WebSocket?: WebSocketConstructor;
  /** How long the socket's opening handshake may take, in ms; default DefaultConnectTimeoutMs. */
  readonly connectTimeoutMs?: number;
}

/** How a session ends with no close from either side (§11). */
const lost: CloseInfo = { code: CloseNoError, reason: '', remote: false, lost: true };

/** One session over a WebSocket. */
class WebSocketConn implements Conn {

  readonly #sock: WebSocketLike;
  readonly #clock: Clock;
  #info: CloseInfo | undefined;
  #resolveClosed!: (info: CloseInfo) => void;
  // When a message was last sent (or tried) and received: set as the socket opens, read (by #live) only after.
  #lastSent!: number;
  #lastRecv!: number;
  #liveness: unknown;

  // The peer's emit stream: the bytes of its binary messages, in order,
  // queued up to MaxUnreadBytes. The stream's start sets #in as #reader is
  // initialized, so #in is declared first (a later declaration would reset it).
  #in!: ReadableStreamDefaultController<Uint8Array>;
  readonly #reader = new ReadableStream<Uint8Array>({ start: (c) => (this.#in = c) }, { highWaterMark: MaxUnreadBytes, size: (b) => b.length }).getReader();

  readonly mapping = 'websocket' as const;
  declare readonly closed: Promise<CloseInfo>;
  /**
   * Set by the connector's open as it makes the socket, before any event:
   * resolves the opening's outcome, null once open, or why it failed. Each
   * event tells it; the promise keeps the first, the one the opening had.
   */
  declare opening: (outcome: string | null) => void;

  constructor(sock: WebSocketLike, clock: Clock) {
    this.#sock = sock;
    this.#clock = clock;
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
    sock.binaryType = 'arraybuffer';
    sock.onopen = () => {
      // Only a socket still connecting opens (the browser's, Node's, `ws`'s):
      // one the connector gave up on was closed, so its opening is awaited.
      this.opening(null);
      this.#lastSent = this.#lastRecv = this.#clock.now();
      this.#live();
    };
    sock.onmessage = ({ data }) => {
      if (this.#info) return;
      this.#lastRecv = this.#clock.now();
      // A text message is a string; with binaryType 'arraybuffer' the browser's,
      // Node's and `ws`'s sockets give every binary message as an ArrayBuffer.
      if (typeof data === 'string') return this.close(CloseProtocolError, 'text message, not binary');
      const bytes = new Uint8Array(data as ArrayBuffer);
      // An empty message is a keepalive: it carries no bytes of the stream (§3.3).
      if (!bytes.length) return;
      this.#in.enqueue(bytes);
      if ((this.#in.desiredSize as number) < 0) {
        this.close(ClosePeerTooSlow, `over ${MaxUnreadBytes} bytes unread`);
      }
    };
    // The peer's close (remote), or the socket's own end (lost): a WebSocket
    // close code outside the §3.3 table (1006 lost, 1001 going away) is no
    // session code, and the session ended with none (§11). One while
    // connecting fails the opening, and ends a Conn the connector drops.
    sock.onclose = (ev) => {
      this.opening('close code ' + ev.code);
      const code = sessionCodeFromWebSocket(ev.code);
      this.#end(code === undefined ? lost : { code, reason: ev.reason, remote: true, lost: false });
    };
    // A browser follows an error with a close event, which says how the
    // session ended; Node 20's WebSocket fails an opening handshake with an
    // error alone. So an error fails an opening at once (whose abandon then
    // ends the wait of #failed), and ends an open session as #failed does.
    sock.onerror = () => {
      this.opening('socket error');
      void this.#failed();
    };
  }

  /**
   * Ends the session as lost (§11: no code) and lets the socket go: one
   * whose opening handshake was given up on, or one that said nothing of
   * how it ended.
   */
  abandon(): void {
    // Without a code close() never throws (the browser's, Node's and `ws`'s):
    // it ends an opening handshake, and does nothing to a closing socket.
    if (this.#end(lost)) this.#sock.close();
  }

  /** The socket is both peers' emit streams (§3.3): this side's, write, and the peer's, read. */
  async openEmit(): Promise<this> {
    if (this.#info) throw endedError(this.#info);
    return this;
  }

  acceptEmit(): Promise<this> {
    return this.openEmit();
  }

  maxDatagramSize(): number {
    return 0;
  }

  /**
   * The socket as this side's emit stream (§3.3): each write one binary
   * message. The engine writes at most 64 KiB of frames, or one frame alone,
   * so at most 12 bytes and 1 MiB (§5.1); the Go peer accepts 2 MiB.
   */
  async write(chunk: Uint8Array): Promise<void> {
    this.#lastSent = this.#clock.now();
    // Only a CONNECTING socket throws: the browser's, Node's and `ws`'s drop
    // what a closing one is sent, so a socket not open is a failed send,
    // which ends the session (#failed), and the last check throws. A
    // session ended already has no open socket: its close closed it. A
    // copy: the engine reuses its buffer once this resolves, and `ws` keeps
    // a message by reference while it compresses another (permessage-deflate).
    if (this.#sock.readyState === OPEN) this.#sock.send(chunk.slice() as Uint8Array<ArrayBuffer>);
    else await this.#failed();
    // No event tells a drained buffer: look again after each drainPollMs, waited out on the clock.
    while (this.#sock.bufferedAmount > sendHighWater && !this.#info) await outcomeWithin(this.#clock, drainPollMs, never);
    if (this.#info) throw endedError(this.#info);
  }

  /** The socket as the peer's emit stream: the bytes of its binary messages, in order. */
  read(): Promise<Uint8Array | null> {
    return this.#reader.read().then((next) => {
      if (next.done) throw endedError(this.#info!);
      return next.value;
    });
  }

  /**
   * Ends the session with a §10.2 code: WebSocket 1000 for WT_NO_ERROR,
   * 3000 plus the code otherwise, the reason cut to 123 bytes on a
   * character boundary (§3.3). The session is closed at once; the closing
   * handshake gets CloseGraceMs before a `ws` socket's TCP connection is
   * dropped, since a peer that stopped reading may never answer.
   */
  close(code: number, reason: string): void {
    reason = cutReason(reason, MaxWebSocketReason);
    if (this.#end({ code, reason, remote: false, lost: false })) {
      try {
        this.#sock.close(webSocketCloseCode(code), reason);
      } catch {
        // A browser accepts only 1000 and 3000–4999: 1011 (a code §10.2 does not define) goes without a code.
        this.#sock.close();
      }
      // A socket closed by then ignores terminate().
      if (this.#sock.terminate) this.#clock.setTimeout(() => this.#sock.terminate!(), CloseGraceMs);
    }
  }

  // §3.3, on one timer due at the earlier deadline: WT_IDLE_TIMEOUT once
  // IdleTimeoutMs passed with nothing received (a keepalive counting), else
  // an empty binary message once KeepaliveIntervalMs passed with nothing
  // sent. (#end clears the timer.)
  #live(): void {
    const now = this.#clock.now();
    if (now - this.#lastRecv >= IdleTimeoutMs) return this.close(CloseIdleTimeout, `nothing received in ${IdleTimeoutMs} ms`);
    // A keepalive a closing socket drops counts as sent too, so the next is a whole interval away.
    if (now - this.#lastSent >= KeepaliveIntervalMs) {
      this.#lastSent = this.#clock.now();
      this.#sock.send(new Uint8Array());
    }
    this.#liveness = this.#clock.setTimeout(() => this.#live(), Math.min(this.#lastSent + KeepaliveIntervalMs, this.#lastRecv + IdleTimeoutMs) - now);
  }

  /** Records how the session ended, fails what waits on it; the first end wins. */
  #end(info: CloseInfo): boolean {
    if (this.#info) return false;
    this.#info = info;
    this.#clock.clearTimeout(this.#liveness);
    // What the peer sent before it closed stays readable; a local close
    // drops it at once.
    if (info.remote || info.lost) this.#in.close();
    else this.#in.error(endedError(info));
    this.#resolveClosed(info);
    return true;
  }

  // A write failed, or the socket reported an error: its close event may
  // still be on its way and say why (a refusal, §4). Only if none comes
  // within CloseGraceMs is the session lost (§11: no code) here, and the
  // socket let go (abandon does nothing to a session that ended). Resolves
  // once the session ended either way.
  async #failed(): Promise<void> {
    await outcomeWithin(this.#clock, CloseGraceMs, this.closed);
    this.abandon();
  }
}

/**
 * A connector for the WebSocket mapping (§3.3) at url (ws:// or wss://). It
 * does no I/O until the client opens a session through it. A failed upgrade
 * is WT_HANDSHAKE_FAILED; a refusal arrives after the upgrade, as the
 * session's close (4007 carrying WT_UNAUTHORIZED and its reason, §4).
 */
export function connectWebSocket(url: string, options: WebSocketOptions = {}): Connector {
  return {
    async open(ctx: ConnectContext): Promise<Opened> {
      const Ctor = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
      if (!Ctor) {
        throw new TransportError('WT_NO_SUPPORT', 'no WebSocket here; pass one');
      }
      const where = parseUrl(url);
      if (where?.protocol !== 'ws:' && where?.protocol !== 'wss:') {
        throw new TransportError('WT_HANDSHAKE_FAILED', 'URL not ws:// or wss://');
      }
      if (ctx.signal.aborted) throw abandoned();
      let sock: WebSocketLike;
      try {
        sock = new Ctor(url);
      } catch (err) {
        throw new TransportError('WT_HANDSHAKE_FAILED', `${where.origin}${where.pathname}`, { cause: err });
      }
      const conn = new WebSocketConn(sock, ctx.clock);
      const timeoutMs = options.connectTimeoutMs ?? DefaultConnectTimeoutMs;
      // null once open; else why the socket failed (never ''), or outcomeWithin's 'timeout' or 'aborted'.
      const outcome = await outcomeWithin(ctx.clock, timeoutMs, new Promise<string | null>((done) => (conn.opening = done)), ctx.signal);
      if (outcome) {
        conn.abandon();
        if (outcome === 'aborted') throw abandoned();
        throw new TransportError('WT_HANDSHAKE_FAILED', `${where.origin}${where.pathname}: ${outcome === 'timeout' ? `no upgrade in ${timeoutMs} ms` : outcome}`);
      }
      return { conn, fallbackReason: null };
    },
  };
}
