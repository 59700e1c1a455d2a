// The WebTransport mapping of a transport-io session (the transport-io
// protocol, version 0, §2, §3): every lane, over the browser's WebTransport.
// The emit lane is one unidirectional stream per direction, each call a
// bidirectional stream, the unreliable lane the session's datagrams.
// Mirrors the Go runtime's transport/webtransport client.

import { CloseNoError, CloseReliabilityRefused, MaxCloseReason } from './codes.js';
import { abandoned, describeError, endedError, never, outcomeWithin, parseUrl } from './connector.js';
import { StreamResetError, TransportError } from './errors.js';
import type { CallStream, Clock, CloseInfo, Conn, ConnectContext, Connector, DatagramQueue, Opened, ReceiveStream, SendStream } from './transport.js';
import { cutReason } from './wire/json.js';
import { CloseWaitMs, DefaultConnectTimeoutMs, maxDatagramsInFlight, ProbeTimeoutMs, WellKnownPath } from './limits.js';

export { CloseWaitMs, DefaultConnectTimeoutMs, ProbeTimeoutMs, WellKnownPath } from './limits.js';

export interface WebTransportOptions {
  /**
   * Pins the server certificate by its SHA-256, as the browser's option of
   * the same name: the certificate must be ECDSA and valid at most 14 days.
   */
  readonly serverCertificateHashes?: readonly WebTransportHash[];
  /** How long the session may take to become ready, in ms; default DefaultConnectTimeoutMs. */
  readonly connectTimeoutMs?: number;
}

// lib.dom's WebTransportOptions, writable.
type WebTransportOptions_ = { -readonly [K in keyof globalThis.WebTransportOptions]: globalThis.WebTransportOptions[K] };

/** What streamErrorCode reads of an error: a WebTransportError's fields (or none). */
type StreamError = { source?: unknown; streamErrorCode?: number | null } | null | undefined;

/** One session over the browser's WebTransport. */
class WebTransportConn implements Conn {

  readonly #t: WebTransport;
  readonly #clock: Clock;
  #info: CloseInfo | undefined;
  #resolveClosed!: (info: CloseInfo) => void;
  readonly #datagramReader: ReadableStreamDefaultReader<Uint8Array>;
  #datagramWriter: WritableStreamDefaultWriter<Uint8Array> | undefined;
  readonly #incomingCalls: ReadableStreamDefaultReader<WebTransportBidirectionalStream>;
  #datagramsInFlight = 0;

  readonly mapping = 'webtransport' as const;
  declare readonly closed: Promise<CloseInfo>;

  constructor(t: WebTransport, clock: Clock) {
    this.#t = t;
    this.#clock = clock;
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
    // The engine reads both from the start, for the session's life.
    this.#incomingCalls = t.incomingBidirectionalStreams.getReader() as ReadableStreamDefaultReader<WebTransportBidirectionalStream>;
    this.#datagramReader = (t.datagrams.readable as ReadableStream<Uint8Array>).getReader();
    // A close resolves the browser's closed with the peer's code and
    // reason; a lost connection rejects it (§11).
    t.closed.then(
      (ci) => this.#end({ code: ci.closeCode ?? CloseNoError, reason: ci.reason ?? '', remote: true, lost: false }),
      () => this.#end({ code: CloseNoError, reason: '', remote: false, lost: true }),
    );
  }

  readonly openCall = (): Promise<CallStream> => this.#op('opening call', this.#t.createBidirectionalStream().then((bidi) => this.#bidi(bidi)));

  // After the session's end the browser has closed (or errored) the
  // incoming streams and the datagrams, so a read gives done or fails.
  readonly acceptCall = (): Promise<CallStream | null> =>
    this.#incomingCalls.read().then(
      (next) => (next.done ? null : this.#bidi(next.value)),
      () => null, // the session ended
    );

  openEmit(): Promise<SendStream> {
    return this.#op('opening emit stream', this.#t.createUnidirectionalStream().then((s) => this.#stream(s.getWriter())));
  }

  acceptEmit(): Promise<ReceiveStream> {
    // The peer opens exactly one (§3.1); any other waits unread. Read once,
    // the incoming streams are never locked when the reader is taken.
    return this.#op(
      'accepting emit stream',
      (this.#t.incomingUnidirectionalStreams.getReader() as ReadableStreamDefaultReader<ReadableStream<Uint8Array>>).read().then((next) => {
        if (next.done) throw new Error('no stream');
        return this.#stream(undefined, next.value.getReader());
      }),
    );
  }

  sendDatagram(queue: DatagramQueue): void {
    const d = this.#t.datagrams as WebTransportDatagramDuplexStream & { createWritable?: () => WritableStream<Uint8Array> };
    // Newer browsers create a writable per sender; older ones have one.
    const w = (this.#datagramWriter ??= (d.createWritable?.() ?? (d.writable as WritableStream<Uint8Array>)).getWriter());
    // A write done is room for the next: the oldest the ring still holds fresh (§9).
    const taken = (): void => {
      this.#datagramsInFlight--;
      this.sendDatagram(queue);
    };
    for (let b; !this.#info && this.#datagramsInFlight < maxDatagramsInFlight && (b = queue.pop()); ) {
      this.#datagramsInFlight++;
      w.write(b).then(taken, taken);
    }
  }

  readonly receiveDatagram = (): Promise<Uint8Array | null> =>
    this.#datagramReader.read().then(
      (next) => (next.done ? null : next.value),
      () => null,
    );

  maxDatagramSize(): number {
    // A browser that reports none leaves it undefined; the engine reads
    // anything but a positive size as none (§7.4).
    return this.#t.datagrams.maxDatagramSize || 0;
  }

  /** Ends the session with a §10.2 code and the reason cut to 1024 bytes; the first close wins. */
  close(code: number, reason: string): void {
    reason = cutReason(reason, MaxCloseReason);
    // A session past its opening closes without throwing, closed already or not.
    if (this.#end({ code, reason, remote: false, lost: false })) this.#t.close({ closeCode: code, reason });
  }

  /**
   * Awaits a session operation (opening or accepting a stream, a promise
   * the browser rejects, never throws for); its failure is the session's end, once closed says so within CloseWaitMs, else
   * WT_SESSION_CLOSED naming what failed. Once the session ended, the
   * browser's session opens no stream and its incoming streams ended (one
   * still queued fails its reads), and closed has said so already.
   */
  #op<T>(what: string, op: Promise<T>): Promise<T> {
    return op.catch(async (err) => {
      if ((await outcomeWithin(this.#clock, CloseWaitMs, this.closed)) !== 'timeout') throw endedError(this.#info!);
      throw new TransportError('WT_SESSION_CLOSED', `${what}: ${describeError(err)}`, { cause: err });
    });
  }

  /**
   * The error of a failed stream operation: the peer's reset or stop with
   * its code; failing that, the code the other half of a call stream
   * reports (Chromium fails a write on a reset stream with no code, and
   * the readable has it); the session's end, once closed says how it
   * ended; otherwise a reset with an unknown code (Firefox), never a crash.
   */
  async #failure(err: unknown, otherHalf: Promise<number>): Promise<Error> {
    const outcome = streamErrorCode(err) ?? (await outcomeWithin(this.#clock, CloseWaitMs, Promise.race([this.closed, otherHalf])));
    if (typeof outcome === 'number') return new StreamResetError(outcome, true);
    if (outcome !== 'timeout') return endedError(this.#info!);
    return new StreamResetError(undefined, true, `reset by the peer, no code (${describeError(err)})`);
  }

  /** Records how the session ended; whether this was its end (the first wins). */
  #end(info: CloseInfo): boolean {
    if (this.#info) return false;
    this.#info = info;
    this.#resolveClosed(info);
    return true;
  }

  /**
   * A stream as the engine sees it: its sending half (one writer for the
   * stream's life), its receiving half (one reader), or both on a call
   * stream. After this side's own reset or stop a half fails with it: the
   * reset's abort errors the writer, so a write or close then rejects (a
   * close once the browser's abort settles; the engine makes neither after
   * its reset), and the stop's cancel ends the reader. On a call stream a half failing with no code takes the peer's code
   * from the other half (Chromium fails a write on a reset stream with no
   * code; the readable has it).
   */
  #stream(w: WritableStreamDefaultWriter<Uint8Array> | undefined, r?: ReadableStreamDefaultReader<Uint8Array>): CallStream {
    let reset: StreamResetError | undefined;
    let stopped: StreamResetError | undefined;
    // The code of the peer's STOP_SENDING (RESET_STREAM) once the sending
    // (receiving) half fails with one; never settles otherwise, nor after
    // this side's own reset (stop), nor without that half. Only the other
    // half's failure reads it, so on a stream of one half it goes unread.
    const peerStopped: Promise<number> =
      w ? w.closed.then(() => never, (err: unknown) => (reset ? never : (streamErrorCode(err) ?? never))) : never;
    const peerReset: Promise<number> =
      r ? r.closed.then(() => never, (err: unknown) => (stopped ? never : (streamErrorCode(err) ?? never))) : never;
    // What a failed write or close throws. The writer queues: a write is not
    // held back behind the previous one's completion, and resolves once the
    // stream took the bytes; like every promise-returning Web API it
    // rejects, never throws.
    const sendFailed = async (err: unknown): Promise<never> => {
      throw reset ?? (await this.#failure(err, peerReset));
    };
    // A half this stream lacks is never used: the engine writes only a
    // sending half and reads only a receiving one. A second reset (stop)
    // keeps the first one's error, and the stream ignores its abort (cancel).
    return {
      write: (chunk) => w!.write(chunk).catch(sendFailed),
      close: () => w!.close().catch(sendFailed),
      reset(code) {
        reset ??= new StreamResetError(code, false);
        w!.abort(resetReason(code)).catch(() => {});
      },
      read: () =>
        r!.read().then(
          (next) => {
            // After this side's stop, whose cancel closed the stream, a read
            // ends done, which is no FIN (or fails, on a stream that failed first).
            if (stopped) throw stopped;
            return next.done ? null : next.value;
          },
          async (err) => {
            throw stopped ?? (await this.#failure(err, peerStopped));
          },
        ),
      stop(code) {
        stopped ??= new StreamResetError(code, false);
        r!.cancel(resetReason(code)).catch(() => {});
      },
    };
  }

  /** A call stream over a browser's bidirectional stream. */
  #bidi(bidi: WebTransportBidirectionalStream): CallStream {
    return this.#stream((bidi.writable as WritableStream<Uint8Array>).getWriter(), (bidi.readable as ReadableStream<Uint8Array>).getReader());
  }
}

/**
 * What abort and cancel carry so the browser sends code on RESET_STREAM or
 * STOP_SENDING (§8). Chromium 156 and Firefox ESR 153 construct
 * WebTransportError from one dictionary and throw for the (message,
 * options) form lib.dom declares; one of that form takes the dictionary as
 * its message, without throwing.
 */
function resetReason(code: number): unknown {
  const WTError = (globalThis as { WebTransportError?: unknown }).WebTransportError;
  // With no WebTransportError the code is lost; the reset still happens.
  // No message: the browser sends the code alone, and the error stays here
  // (a half this side reset or stopped throws its own StreamResetError).
  return WTError ? new (WTError as new (init: { streamErrorCode: number }) => unknown)({ streamErrorCode: code }) : code;
}

/**
 * A connector for WebTransport sessions at url (https://host:port/path). It
 * does no I/O until the client opens a session through it. A session that
 * could not be had is WT_NO_SUPPORT (no WebTransport in this runtime),
 * WT_UDP_UNREACHABLE (the handshake failed but the origin answered HEAD
 * /.well-known/transport-io over HTTPS within 2000 ms) or
 * WT_HANDSHAKE_FAILED (§10.3); a session the browser reports reliable-only
 * is refused WT_RELIABILITY_REFUSED (§2). A refusal is not an open error:
 * the session opens and closes WT_UNAUTHORIZED (§4).
 */
export function connectWebTransport(url: string, options: WebTransportOptions = {}): Connector {
  return {
    async open(ctx: ConnectContext): Promise<Opened> {
      const WT = (globalThis as { WebTransport?: typeof WebTransport }).WebTransport;
      if (!WT) {
        throw new TransportError('WT_NO_SUPPORT', 'no WebTransport here');
      }
      const where = parseUrl(url);
      if (where?.protocol !== 'https:') {
        throw new TransportError('WT_HANDSHAKE_FAILED', 'URL not https://');
      }
      if (ctx.signal.aborted) throw abandoned();
      const init: WebTransportOptions_ = { requireUnreliable: true }; // §2: ask for a session with datagrams
      // The browser reads the hashes as it constructs the session: no copy.
      if (options.serverCertificateHashes) init.serverCertificateHashes = options.serverCertificateHashes as WebTransportHash[];
      let transport: WebTransport;
      try {
        transport = new WT(url, init);
      } catch (err) {
        throw new TransportError('WT_HANDSHAKE_FAILED', `${where.origin}${where.pathname}: ${describeError(err)}`, {
          cause: err,
        });
      }
      // Whatever happens next, neither promise may reject unhandled.
      transport.closed.catch(() => {});
      const timeoutMs = options.connectTimeoutMs ?? DefaultConnectTimeoutMs;
      // null once ready; else why not: [its error], 'timeout' or 'aborted'.
      const outcome = await outcomeWithin(
        ctx.clock,
        timeoutMs,
        transport.ready.then(
          () => null,
          (error: unknown) => [error] as const,
        ),
        ctx.signal,
      );
      if (outcome) {
        try {
          transport.close();
        } catch {
          // Still connecting: the one state in which close() may throw.
        }
        if (outcome === 'aborted') throw abandoned();
        const cause = outcome === 'timeout' ? `not ready in ${timeoutMs} ms` : describeError(outcome[0]);
        // §10.3: whether the origin answers HEAD /.well-known/transport-io
        // over HTTPS within ProbeTimeoutMs. The request never carries the
        // session URL's query. From a page of another origin the answer is
        // opaque (no-cors): that it came at all is what tells a blocked UDP
        // path from a dead server. An abort since the outcome ends the wait
        // at once, and the request with it. Every runtime with WebTransport
        // has fetch (browsers, workers included; Node 20, the engines' least).
        const ac = new AbortController();
        const answer = await outcomeWithin(
          ctx.clock,
          ProbeTimeoutMs,
          fetch(where.origin + WellKnownPath, { method: 'HEAD', mode: 'no-cors', cache: 'no-store', credentials: 'omit', signal: ac.signal }).then(
            (rsp) => rsp.type === 'opaque' || rsp.ok,
            // A failed request is no answer.
            () => undefined,
          ),
          ctx.signal,
        );
        // Late, abandoned or answered: the request is over.
        ac.abort();
        if (answer !== true) throw new TransportError('WT_HANDSHAKE_FAILED', `${where.origin}: ${cause}; HTTPS does not answer`);
        throw new TransportError('WT_UDP_UNREACHABLE', `${where.origin}: ${cause}; HTTPS answers`);
      }
      // §2: a session that would carry the unreliable lane reliably is refused,
      // before the handshake. Chromium leaves reliability undefined.
      if ((transport as { reliability?: string }).reliability === 'reliable-only') {
        transport.close({ closeCode: CloseReliabilityRefused, reason: 'session is reliable-only' });
        throw new TransportError('WT_RELIABILITY_REFUSED', 'session is reliable-only');
      }
      return { conn: new WebTransportConn(transport, ctx.clock), fallbackReason: null };
    },
  };
}

/**
 * The code of a stream error the peer caused: RESET_STREAM or STOP_SENDING
 * with its §10.1 code. Null or undefined for an error without one: the
 * session ending, or Firefox, which reports a reset as a TypeError with no
 * code.
 */
function streamErrorCode(err: unknown): number | null | undefined {
  // A WebTransportError's streamErrorCode is a number or null; other errors have none.
  return (err as StreamError)?.source !== 'session' ? (err as StreamError)?.streamErrorCode : undefined;
}
