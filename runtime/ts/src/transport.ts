// The seam between the session engine and the connectors that carry a
// session: WebTransport (every lane, transport-io protocol §2, §3), the
// WebSocket mapping of the emit lane (§3.3), and the in-memory pair of
// ./testing. The engine talks to a session only through Conn; a connector
// never sees a decoded message. Mirrors the Go runtime's transport.Conn.

import type { TransportError } from './errors.js';

/** Which mapping carries a session (§2). Each side knows it from the connector; the handshake never carries it. */
export type Mapping = 'webtransport' | 'websocket';

/** How a session ended. Meaningful once Conn.closed has resolved. */
export interface CloseInfo {
  /** The §10.2 code of the close, whichever side sent it; 0 when the connection was lost (§11). */
  readonly code: number;
  /** The close reason (at most 1024 bytes; 123 on the WebSocket mapping). */
  readonly reason: string;
  /** True when the peer closed the session. */
  readonly remote: boolean;
  /** True when the session ended without a close from either side (§11): code is then WT_NO_ERROR. */
  readonly lost: boolean;
}

/** The sending half of a stream. */
export interface SendStream {
  /**
   * Writes bytes of the stream. Resolves once the transport took them (its
   * own flow control may hold it); rejects once the stream was reset or
   * stopped, or the session ended. The caller reuses `chunk` once the write
   * settles, so a transport that reads it later keeps a copy (a browser's
   * WebTransport stream copies it as the write begins).
   */
  write(chunk: Uint8Array): Promise<void>;
  /** Finishes the send side cleanly (FIN). */
  close(): Promise<void>;
  /** Abandons the send side with a §10.1 code (RESET_STREAM). */
  reset(code: number): void;
}

/** The receiving half of a stream. Message boundaries carry no meaning (§5). */
export interface ReceiveStream {
  /**
   * The next bytes of the stream, or null after the peer's FIN. Rejects with
   * a StreamResetError after the peer's reset, or another error once the
   * session ended.
   */
  read(): Promise<Uint8Array | null>;
  /** Stops reading with a §10.1 code (STOP_SENDING). */
  stop(code: number): void;
}

/** A bidirectional call stream (§3.2). */
export interface CallStream extends SendStream, ReceiveStream {}

/** Where a transport takes the datagrams it sends from: the engine's §9 ring. */
export interface DatagramQueue {
  /** The next datagram to send, undefined when none is queued. */
  pop(): Uint8Array | undefined;
}

/** One established session as a connector carries it. */
export interface Conn {
  readonly mapping: Mapping;
  /**
   * Opens this side's emit stream (§3.1); the engine calls it once and writes
   * the handshake as frame 0. It only writes: the stream lasts as long as
   * the session, whose close ends it.
   */
  openEmit(): Promise<Pick<SendStream, 'write'>>;
  /**
   * The peer's emit stream; the engine calls it once, and only reads it. The
   * handshake deadline covers a peer that never opens it.
   */
  acceptEmit(): Promise<Pick<ReceiveStream, 'read'>>;
  /** Opens a call stream (§3.2). Absent on a mapping without bidirectional streams (§3.3). */
  readonly openCall?: () => Promise<CallStream>;
  /**
   * The next call stream the peer opened (§3.2), or null once the session
   * ended. Absent where openCall is.
   */
  readonly acceptCall?: () => Promise<CallStream | null>;
  /**
   * Sends datagrams as given (§7), popping each from queue (the §9 send
   * ring: undefined when empty) while the transport has room, and again
   * whenever room frees; never waits for the peer. What the transport
   * cannot take yet stays in the ring, which drops the oldest and the stale
   * and counts them (§9). Absent on a mapping without datagrams (§3.3).
   */
  readonly sendDatagram?: (queue: DatagramQueue) => void;
  /** The next datagram received, or null once the session ended. Absent where sendDatagram is. */
  readonly receiveDatagram?: () => Promise<Uint8Array | null>;
  /** The transport's current maximum datagram size, or 0 when it reports none (§7.4: the engine then assumes 1024). */
  maxDatagramSize(): number;
  /**
   * Ends the session with a §10.2 code and a reason (cut to 1024 bytes, or to
   * 123 on the WebSocket mapping, on a character boundary). The first close
   * wins; later calls do nothing. Does not wait for the peer.
   */
  close(code: number, reason: string): void;
  /** Resolves (never rejects) once the session ended for any reason. */
  readonly closed: Promise<CloseInfo>;
}

/** Time as the engine and connectors see it; ./testing provides a fake one. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** What the client hands a connector each time it opens a session. */
export interface ConnectContext {
  readonly clock: Clock;
  /** Aborted when the client gives up on this attempt (close() during connect). */
  readonly signal: AbortSignal;
}

/** What a connector produced: the session and, through a fallback, why the first mapping was not used. */
export interface Opened {
  readonly conn: Conn;
  /** null when the first choice carries the session. */
  readonly fallbackReason: string | null;
  /**
   * Set by a fallback connector while its first mapping carries the session:
   * opens the second one instead. The client calls it when that session
   * ended WT_HANDSHAKE_TIMEOUT before its handshake (§4.1), which only the
   * engine can see.
   */
  readonly fallBack?: (why: TransportError, ctx: ConnectContext) => Promise<Opened>;
}

/**
 * A way to open sessions. connectWebTransport, connectWebSocket, connectDev
 * and withFallback build one and do no I/O; the client calls open() on
 * connect() and on every reconnect. open rejects with a TransportError.
 */
export interface Connector {
  open(ctx: ConnectContext): Promise<Opened>;
}
