// The session engine, client side: one transport-io session over a Conn.
// The handshake as frame 0 with its deadline (§4), the emit lane with its
// bounded queue and coalesced writes (§3.1, §5, §9), calls on a
// bidirectional stream each with credit (§3.2, §6.2–§6.6, §8), the datagram
// lane (§7), rooms (§6.5) and every close (§10.2, §11). Mirrors the Go
// runtime's tio engine (session.go, call.go, dgram.go) in behaviour and
// naming.

import {
  CloseHandshakeTimeout,
  ClosePeerTooSlow,
  CloseProtocolError,
  CloseReliabilityRefused,
  type CodeName,
  ResetAborted,
  ResetTooManyStreams,
  SessionCode,
} from '../codes.js';
import { protocolError, StreamResetError, TransportError } from '../errors.js';
import type { CompiledContract, CompiledEvent } from '../contract.js';
import { closeError, closedBy, describeError, outcomeWithin } from '../connector.js';
import type { CallStream, Clock, Conn, ReceiveStream } from '../transport.js';
import {
  checkFrame,
  CodecBytes,
  CodecJson,
  codecName,
  encodeFrame,
  FrameCallCredit,
  FrameCallError,
  FrameCallRequest,
  FrameCallResponse,
  FrameDatagram,
  FrameDecoder,
  FrameEmit,
  FrameHandshake,
  FrameJoin,
  FrameLeave,
  frameTypeName,
  HeaderLen,
  MaxPayload,
  putHeader,
  type Codec,
  type Frame,
} from '../wire/frame.js';
import { ProtocolVersion, compareTables, decodeHandshake, encodeHandshake } from '../wire/handshake.js';
import { type Datagram, DatagramHeaderLen, maxDatagramPayload, nextSeq, parseDatagram, putDatagramHeader } from '../wire/datagram.js';
import { encodeCallError, encodeCredit, parseCallError, parseRoom } from '../wire/payload.js';
import { utf8Decode, utf8Encode, utf8Into } from '../wire/utf8.js';
import { DatagramRing } from './ring.js';
import { SequenceGate } from './gate.js';
import {
  clientOrigin,
  CreditBatch,
  DatagramLaneMark,
  EmitQueueFrames,
  emitFlushAt,
  HandshakeTimeout,
  MaxCalls,
  RequestTimeout,
} from '../limits.js';

export { CreditBatch, DatagramLaneMark, EmitQueueFrames, HandshakeTimeout, InitialCredit, MaxCalls, RequestTimeout } from '../limits.js';

/** One session's counters, as the Go runtime's tio.Stats. */
export interface Stats {
  /** Frames waiting in the emit queue now (§9). */
  readonly emitQueueDepth: number;
  /** Unreliable frames dropped oldest-first from the full send ring (§9). */
  readonly overflowDropped: number;
  /** Unreliable frames dropped at dequeue past their 150 ms TTL (§9). */
  readonly staleDropped: number;
  /** Datagrams discarded by last-write-wins (§7.3). */
  readonly staleReceived: number;
  /** Emits and datagrams for an event id not in the contract (§5.4). */
  readonly unknownDropped: number;
  /** Received emits and datagrams whose payload failed to decode or validate. */
  readonly validationDropped: number;
  /** Emits and datagrams of an event the server does not send (its contract direction). */
  readonly directionDropped: number;
  /** Datagrams with a reserved codec, event id 0 or an empty payload (§7.2). */
  readonly malformedDropped: number;
  /** Datagrams that arrived before the server's handshake (§7.5). */
  readonly earlyDiscarded: number;
}

/** The counters of a session before anything happened. */
export const noStats: Stats = Object.freeze({
  emitQueueDepth: 0,
  overflowDropped: 0,
  staleDropped: 0,
  staleReceived: 0,
  unknownDropped: 0,
  validationDropped: 0,
  directionDropped: 0,
  malformedDropped: 0,
  earlyDiscarded: 0,
});

/** A handler of an event the server sends: its decoded payload. */
export type Handler = (payload: unknown) => void;

/**
 * Encodes a value for a slot (§5.3): JSON as UTF-8 (through the event's
 * encode hook when it has one), bytes as they are. With keepText, JSON short
 * enough for one emit batch at 3 bytes per UTF-16 unit at most stays text,
 * for the writer to encode in place: its length is then 0 exactly when its
 * UTF-8's is, and far below the cap.
 */
function encodeValue(ev: CompiledEvent, value: unknown, keepText?: boolean): string | Uint8Array {
  if (ev.payloadCodec === CodecBytes) {
    if (!(value instanceof Uint8Array)) throw validationFailed(ev, false, 'pass a Uint8Array');
    return value;
  }
  let text: string | undefined;
  try {
    text = ev.encode ? ev.encode(value as never) : JSON.stringify(value);
  } catch (e) {
    throw validationFailed(ev, false, describeError(e));
  }
  if (text === undefined) throw validationFailed(ev, false, 'not JSON');
  return keepText && 3 * text.length <= emitFlushAt - HeaderLen ? text : utf8Encode(text);
}

/**
 * What a received slot holds (§5.3): a JSON slot's text, a bytes slot's
 * bytes. A codec other than the slot's, or JSON that is not UTF-8, throws
 * WT_PROTOCOL_ERROR naming the event and the slot, checked in the Go
 * runtime's order.
 */
function slotContent(ev: CompiledEvent, result: boolean, codec: number, b: Uint8Array): string | Uint8Array {
  const want = result ? ev.resultCodec : ev.payloadCodec;
  if (codec !== want) throw protocolError(`${slotOf(ev, result)} is ${codecName(want)}, not ${codecName(codec)}`);
  if (codec === CodecBytes) return b;
  try {
    return utf8Decode(b);
  } catch {
    throw protocolError(`${slotOf(ev, result)} is not UTF-8`);
  }
}

/** What a §5.3 reason names: the event and the slot. */
function slotOf(ev: CompiledEvent, result: boolean): string {
  return `'${ev.name}' ${result ? ev.shape : ev.shape === 'emit' ? 'payload' : 'request'}`;
}

/**
 * Reads a slot's content (slotContent's), then applies the event's decode
 * hook and validator for the slot (the result's for returns and yields);
 * throws WT_VALIDATION_FAILED.
 */
function decodeValue(ev: CompiledEvent, content: string | Uint8Array, result: boolean): unknown {
  const decode = result ? ev.decodeResult : ev.decode;
  const validator = result ? ev.validateResult : ev.validate;
  let value: unknown = content;
  if (typeof content === 'string') {
    try {
      value = JSON.parse(content);
    } catch {
      throw validationFailed(ev, result, 'not JSON');
    }
  }
  let ok: unknown;
  try {
    if (decode) value = decode(value);
    ok = validator?.(value);
  } catch (e) {
    throw validationFailed(ev, result, describeError(e), e);
  }
  if (ok === false) throw validationFailed(ev, result, 'refused by its validator');
  return value;
}

/** The WT_VALIDATION_FAILED of a value refused for a slot (slotOf's): the event, the slot and why. */
function validationFailed(ev: CompiledEvent, result: boolean, why: string, cause?: unknown): TransportError {
  return new TransportError('WT_VALIDATION_FAILED', `${slotOf(ev, result)}: ${why}`, { cause });
}

export class Session {
  /** Resolves once the server's handshake is accepted; rejects with how the session ended before that. */
  declare readonly ready: Promise<void>;
  /** Resolves (never rejects) with how the session ended. */
  declare readonly ended: Promise<TransportError>;
  /** How the session ended, once it did (as ended resolves); undefined while it runs. */
  declare endError: TransportError | undefined;

  readonly #contract: CompiledContract;
  readonly #conn: Conn;
  /** Whether the WebSocket mapping carries the session (§3.3): its unreliable events travel as DATAGRAM frames on the emit lane. */
  readonly #ws: boolean;
  readonly #clock: Clock;
  /**
   * Whether the session takes frames: undefined while the server's
   * handshake is awaited, true once it is accepted, false from close() (the
   * handshake's deadline among its callers) or the end the Conn reported.
   * Set by close() at once, where endError follows only once the Conn
   * reports the end a turn later: a handler that closed the session sees no
   * frame after it, not even one of the chunk it came in, and the lanes stop.
   */
  #taking: boolean | undefined;
  readonly #handlers: ReadonlyMap<string, ReadonlySet<Handler>>;
  readonly #onRooms: (rooms: readonly string[]) => void;

  #resolveEstablished!: () => void;
  /** What the session's end settles: each call's, which the call removes as it finishes. */
  readonly #endListeners = new Set<() => void>();

  // The emit queue (§9): the frames not yet taken by the writer, four
  // entries each: type, codec, event id and payload (checkFrame's), JSON
  // still as text, so a batch encodes every header and text straight into
  // the buffer it writes. The writer takes the array whole, so the queue is
  // free for new emits while it writes.
  #q: Array<number | string | Uint8Array> = [];
  #wakeWriter: (() => void) | undefined;

  readonly #ring: DatagramRing;
  readonly #gate: SequenceGate;
  /** The last sequence sent, by event id. */
  readonly #seqs: Record<number, number> = {};
  readonly #roomSet = new Set<string>();

  // The ring counts its drops here too; the queue depth stays 0: stats() reads it from the queue.
  #counters: { -readonly [K in keyof Stats]: number } = { ...noStats };

  /**
   * A session over conn, for its client: clock times every deadline of the
   * session; handlers are the client's by event name (shared by every
   * session of a client, so a reconnect keeps them); onRooms is given the
   * client's view of its own rooms (§6.5), sorted and frozen, whenever a
   * JOIN or LEAVE changed it, and must not throw, or the loop that read the
   * frame takes it for the peer's fault. The session runs at once.
   */
  constructor(conn: Conn, contract: CompiledContract, clock: Clock, handlers: ReadonlyMap<string, ReadonlySet<Handler>>, onRooms: (rooms: readonly string[]) => void) {
    this.#conn = conn;
    this.#ws = conn.mapping === 'websocket';
    this.#contract = contract;
    this.#clock = clock;
    this.#handlers = handlers;
    this.#onRooms = onRooms;
    this.#ring = new DatagramRing(clock, this.#counters);
    this.#gate = new SequenceGate(clock);
    // Rejected only by the session's end, below: a local, not a field.
    let rejectEstablished!: (e: TransportError) => void;
    this.ready = new Promise<void>((resolve, reject) => {
      this.#resolveEstablished = resolve;
      rejectEstablished = reject;
    });
    // A session that ends before anyone awaits `ready` is not an unhandled
    // rejection; this settles with it, whichever way.
    const readySettled = this.ready.catch(() => {});
    // The session's end: what it waits on fails, what it queued is dropped.
    this.ended = conn.closed.then((info) => {
      rejectEstablished((this.endError = closeError(info)));
      this.#taking = false;
      this.#q = [];
      this.#wake();
      for (const l of this.#endListeners) l();
      return this.endError;
    });
    // The session runs from here: the reliability check, then the handshake
    // deadline and the lanes. §2, §7.6: on the WebSocket mapping a contract with an undeclared
    // unreliable event has no session, refused before the handshake.
    if (this.#ws && contract.firstUndeclared) {
      this.close(CloseReliabilityRefused, `'${contract.firstUndeclared}' is unreliable with no fallback`);
      return;
    }
    // The deadline's wait ends once `ready` settles: the handshake
    // accepted, or the session's end.
    void outcomeWithin(clock, HandshakeTimeout, readySettled).then(() => {
      if (this.#taking === undefined) this.close(CloseHandshakeTimeout, `no handshake in ${HandshakeTimeout} ms`);
    });
    void this.#writeLoop();
    void this.#readLoop();
    // Datagrams and server-opened calls: a Conn of the WebSocket mapping has
    // neither lane (§3.3), a WebTransport one has both (the Conn's contract).
    if (!this.#ws) {
      void this.#receiveDatagrams();
      void this.#answerCalls();
    }
  }

  /** Ends the session with a §10.2 code and a reason (cut to 1024 bytes); the first close wins. */
  close(code: number, reason: string): void {
    this.#taking = false;
    // The Conn cuts the reason to what its mapping carries (§3.3, §10.2).
    this.#conn.close(code, reason);
  }

  stats(): Stats {
    return { ...this.#counters, emitQueueDepth: this.#q.length / 4 };
  }

  /** Closes for a fault on the emit lane (§5.5): the error's own §10.2 code, else WT_PROTOCOL_ERROR. */
  #protocolError(err: TransportError): void {
    this.close((SessionCode as Record<string, number>)[err.code] ?? CloseProtocolError, err.message);
  }

  // ---- sending --------------------------------------------------------

  /** Finds an event the client may send with this shape; anything else is refused before a byte is written. */
  #lookupSend(name: string, shape: CompiledEvent['shape']): CompiledEvent {
    const ev = this.#contract.byName.get(name);
    if (!ev) throw new TransportError('WT_UNKNOWN_EVENT', `'${name}' is not in ${this.#contract.name}`);
    if (ev.shape !== shape) {
      throw protocolError(`'${ev.name}' is ${ev.shape}, not ${shape}`);
    }
    // A call declares no direction, so only an emit can be the server's.
    if (ev.from === 'server') throw protocolError(`'${ev.name}' is from the server`);
    return ev;
  }

  /**
   * Sends an emit (§6.1) or an unreliable event (§7). Reliable: queued on
   * the emit lane; a full queue closes the session WT_PEER_TOO_SLOW (§9).
   * Unreliable: a datagram, or on the WebSocket mapping a DATAGRAM frame
   * (§3.3), through the send ring; over the size ceiling it throws
   * WT_DATAGRAM_TOO_LARGE and nothing is sent (§7.4).
   */
  emit(name: string, value: unknown): void {
    // The client hands over only a session that has not ended: it checks just before.
    const ev = this.#lookupSend(name, 'emit');
    if (ev.lane === 'reliable') {
      const payload = encodeValue(ev, value, true);
      checkFrame(FrameEmit, ev.payloadCodec, ev.id, payload.length);
      if (this.#q.length / 4 === EmitQueueFrames) {
        const reason = `emit queue over ${EmitQueueFrames} frames`;
        this.close(ClosePeerTooSlow, reason);
        throw new TransportError('WT_PEER_TOO_SLOW', reason);
      }
      this.#q.push(FrameEmit, ev.payloadCodec, ev.id, payload);
      return this.#wake();
    }
    const payload = encodeValue(ev, value) as Uint8Array;
    if (!payload.length) throw protocolError(`'${ev.name}': empty datagram`);
    const limit = maxDatagramPayload(this.#conn.maxDatagramSize());
    if (payload.length > limit) {
      throw new TransportError('WT_DATAGRAM_TOO_LARGE', `'${ev.name}': ${payload.length} bytes, over ${limit}`);
    }
    const b = new Uint8Array(DatagramHeaderLen + payload.length);
    // The event's next sequence (§7.3), recorded as its last sent.
    putDatagramHeader(b, 0, ev.payloadCodec, ev.id, clientOrigin, (this.#seqs[ev.id] = nextSeq(this.#seqs[ev.id] ?? 0)));
    b.set(payload, DatagramHeaderLen);
    // The ring holds what the transport (§9) or the WebSocket mapping's
    // emit lane (§3.3) cannot take yet; either takes from it as it has room.
    this.#ring.push(b);
    if (this.#ws) this.#wake();
    else
      try {
        this.#conn.sendDatagram!(this.#ring);
      } catch {
        // Loss is the lane's nature (§7.5): a send error is a loss.
      }
  }

  #wake(): void {
    // Resolving runs the writer later, so it never sees the old resolver.
    // Cleared, later emits skip the call: calling a settled promise's
    // resolver for each emit costs a third of the engine's emit rate.
    this.#wakeWriter?.();
    this.#wakeWriter = undefined;
  }

  /**
   * Opens this side's emit stream, writes the handshake at once (§4.1),
   * then writes whatever is queued, coalesced: every frame taken in one
   * batch goes out in writes of whole frames up to 64 KiB (a larger frame
   * alone), each encoded, JSON text included, into the writer's own buffer,
   * which each write lends the transport until it settles (a copy per write
   * cost a tenth of the page's CPU per 1 KiB emit in Chromium). On the
   * WebSocket mapping it also moves unreliable frames from the ring onto the
   * lane while fewer than 32 emit frames are in the batch (§3.3).
   */
  async #writeLoop(): Promise<void> {
    try {
      const st = await this.#conn.openEmit();
      const batch = new Uint8Array(emitFlushAt);
      // The first batch is the handshake alone.
      for (let q: Array<number | string | Uint8Array> = [FrameHandshake, CodecJson, 0, encodeHandshake({ v: ProtocolVersion, feat: [], events: this.#contract.table })]; ; ) {
        let off = 0;
        for (let j = 0; j < q.length; j += 4) {
          const p = q[j + 3] as string | Uint8Array;
          // The most this frame can take: at most 3 bytes per UTF-16 unit.
          const most = HeaderLen + (typeof p === 'string' ? 3 : 1) * p.length;
          if (off && off + most > emitFlushAt) {
            await st.write(batch.subarray(0, off));
            off = 0;
          }
          if (most > emitFlushAt) await st.write(encodeFrame(q[j] as number, q[j + 1] as number, q[j + 2] as number, p as Uint8Array)); // a larger frame alone
          else {
            let n = p.length;
            if (typeof p === 'string') n = utf8Into(p, batch, off + HeaderLen);
            else batch.set(p, off + HeaderLen);
            putHeader(batch, off, q[j] as number, q[j + 1] as number, q[j + 2] as number, n);
            off += HeaderLen + n;
          }
        }
        if (off) await st.write(batch.subarray(0, off));
        // Nothing is taken once the session closed (its end empties the
        // queue); what the ring holds then is never sent.
        if (this.#taking === false) return;
        // Take the frames: the queue is free for new emits while this batch is written.
        q = this.#q;
        this.#q = [];
        if (this.#ws) {
          // §3.3: a DATAGRAM frame's header carries codec 0x01 and event id 0.
          for (let room = DatagramLaneMark - q.length / 4, d; room-- > 0 && (d = this.#ring.pop()); ) {
            q.push(FrameDatagram, CodecJson, 0, d);
          }
        }
        // Nothing to write: wait, then take again.
        if (!q.length) await new Promise<void>((resolve) => (this.#wakeWriter = resolve));
      }
    } catch (e) {
      // A write failing because the session ended fails once the Conn
      // recorded the end, so this close then does nothing (the first close wins).
      this.close(CloseProtocolError, e instanceof StreamResetError ? `emit stream stopped, code ${e.code ?? '?'}` : `emit stream: ${describeError(e)}`);
    }
  }

  // ---- receiving ------------------------------------------------------
  // A fault of the peer's is thrown as a TransportError where it is found;
  // the loop that read it closes the session with the error's own §10.2
  // code, else WT_PROTOCOL_ERROR (§5.5), in one place.

  /** Reads the server's emit stream: the handshake first (§3.1, §4), then every frame in order; a fault closes the session (§5.5). */
  async #readLoop(): Promise<void> {
    const dec = new FrameDecoder(MaxPayload);
    try {
      // A peer that never opens its emit stream meets the handshake deadline.
      const rs = await this.#conn.acceptEmit();
      // No await for a frame the decoder holds already: the frames of one
      // chunk are handled in one go, not one microtask turn each.
      for (let f; (f = dec.next() ?? (await nextFrame(dec, rs))); ) {
        if (this.#taking === false) return;
        // Frame 0 (§3.1).
        if (this.#taking === undefined) {
          if (f.type !== FrameHandshake) throw protocolError(`frame 0 is ${frameTypeName(f.type)}, not HANDSHAKE`);
          // §4.2–§4.4: version first (the reader's), then the event table (fatal on conflict), then features.
          compareTables(this.#contract.table, decodeHandshake(f.payload).events);
          // Version 0 implements no feature token (§4.2): nothing to negotiate.
          this.#taking = true;
          // One turn before the frames after it: whoever awaits `ready` (the
          // client, which then reports itself connected) runs first.
          await this.#resolveEstablished();
        } else if (f.type === FrameEmit) {
          this.#receive(f, false);
        } else if (f.type === FrameJoin || f.type === FrameLeave) {
          const room = parseRoom(f.payload);
          // A change only: joining a room held, or leaving one not held, changes nothing.
          if (f.type === FrameJoin ? !this.#roomSet.has(room) && this.#roomSet.add(room) : this.#roomSet.delete(room)) {
            this.#onRooms(Object.freeze([...this.#roomSet].sort()));
          }
        } else if (f.type === FrameDatagram && this.#ws) {
          this.#receiveDatagram(f.payload);
        } else {
          throw protocolError(`${frameTypeName(f.type)} on the emit stream`);
        }
      }
      // The peer finished its emit stream: its close (or loss) follows.
      if (!dec.empty) throw protocolError("peer's emit stream ended mid-frame");
    } catch (e) {
      // The peer's fault, thrown where it was found, or its reset of the
      // stream. A Conn fails for the session's end only once it recorded
      // it, so a close for that does nothing (the first close wins).
      this.#protocolError(e instanceof StreamResetError ? protocolError(`peer's emit stream reset, code ${e.code ?? '?'}`) : (e as TransportError));
    }
  }

  /** Reads the transport's datagrams (WebTransport); those before the server's handshake are discarded (§7.5). */
  async #receiveDatagrams(): Promise<void> {
    try {
      for (let b; (b = await this.#conn.receiveDatagram!()) && this.#taking !== false; ) {
        if (this.#taking) this.#receiveDatagram(b);
        // A probe (shorter than the header, §7.2) may overtake the server's handshake: it is no early datagram.
        else if (b.length >= DatagramHeaderLen) this.#counters.earlyDiscarded++;
      }
    } catch (e) {
      // The peer's fault: receive() itself gives null at the end, never an error.
      this.#protocolError(e as TransportError);
    }
  }

  /** Applies §7.2 and §7.3 to one datagram, from the transport or a DATAGRAM frame; throws the peer's fault. */
  #receiveDatagram(b: Uint8Array): void {
    let d;
    try {
      d = parseDatagram(b);
    } catch {
      return void this.#counters.malformedDropped++;
    }
    // Shorter than the header: a probe or nothing (§7.2).
    if (d) this.#receive(d, true);
  }

  /**
   * The per-message rules an EMIT and a datagram share (§5.3, §5.4, §7.3):
   * an unknown id is dropped and counted; an event other than an emit of
   * the message's lane, or a payload its slot refuses (codec, UTF-8), is the
   * peer's fault; an event the server does not send, and a datagram the
   * gate finds stale, are dropped and counted, as is a value the event's
   * decode hook or validator refuses. The rest goes to the handlers.
   */
  #receive(m: Frame | Datagram, datagram: boolean): void {
    const ev = this.#contract.byId.get(m.eventId);
    if (!ev) return void this.#counters.unknownDropped++;
    if (ev.shape !== 'emit' || (ev.lane === 'unreliable') !== datagram) throw protocolError(`${datagram ? 'datagram' : 'EMIT'} of ${ev.lane} ${ev.shape} '${ev.name}'`);
    const content = slotContent(ev, false, m.codec, m.payload);
    if (!ev.sentByServer) return void this.#counters.directionDropped++;
    if (datagram && !this.#gate.accept((m as Datagram).origin, m.eventId, (m as Datagram).seq)) return void this.#counters.staleReceived++;
    let value: unknown;
    try {
      value = decodeValue(ev, content, false);
    } catch {
      return void this.#counters.validationDropped++;
    }
    // A copy: a handler may unsubscribe itself or another.
    for (const h of [...(this.#handlers.get(ev.name) ?? [])]) {
      try {
        h(value);
      } catch (e) {
        // A typed handler's refusal of the value is counted; the
        // application's own failure is reported as an uncaught error would
        // be, without stopping the session's reader.
        if (e instanceof TransportError && e.code === 'WT_VALIDATION_FAILED') this.#counters.validationDropped++;
        else reportError(e);
      }
    }
  }

  // ---- calls ----------------------------------------------------------

  /**
   * A returns call (§3.2): the request, then FIN, then the response. An
   * abort resets the stream WT_ABORTED (§8) and rejects WT_ABORTED; a
   * CALL_ERROR rejects with the server's code and message (§6.4); on the
   * WebSocket mapping it rejects WT_LANE_UNAVAILABLE at once, and the
   * session stays up (§3.3).
   */
  async call(name: string, value: unknown, signal?: AbortSignal): Promise<unknown> {
    const ev = this.#lookupSend(name, 'returns');
    let response: string | Uint8Array | undefined;
    // Any number of responses is accepted (§3.2); the first is the answer.
    for await (const content of this.#exchange(value, signal, ev, false)) response ??= content;
    // A response's content is never empty (a frame's payload has at least one byte, §5.1).
    if (!response) throw protocolError(`'${ev.name}': no response`);
    return decodeValue(ev, response, true);
  }

  /**
   * A yields call (§3.2): each element as the loop consumes it, a
   * CALL_ERROR after elements raised after them (§6.4). Consuming grants
   * credit in batches of 16 (§6.6); break, return() or the signal resets
   * the stream WT_ABORTED and stops reading (§8). Nothing is sent until the
   * loop starts.
   */
  async *stream(name: string, value: unknown, signal?: AbortSignal): AsyncGenerator<unknown, void, undefined> {
    const ev = this.#lookupSend(name, 'yields');
    for await (const content of this.#exchange(value, signal, ev, true)) yield decodeValue(ev, content, true);
  }

  /**
   * What both shapes of call share: the request (and FIN after it for a
   * returns call, §6.2), then the content of each CALL_RESPONSE until the
   * responder's FIN; a CALL_ERROR throws after the responses before it
   * (§6.4). On a yields call each response consumed grants credit in
   * batches of 16 (§6.6), and the responder's FIN or CALL_ERROR is answered
   * with FIN. Leaving early abandons the stream (§8). (The parameters'
   * order is the one the bundle is smallest with.)
   */
  async *#exchange(value: unknown, signal: AbortSignal | undefined, ev: CompiledEvent, yields: boolean): AsyncGenerator<string | Uint8Array, void, undefined> {
    // The WebSocket mapping has no call streams (§3.3); a WebTransport Conn has openCall (the Conn's contract).
    if (this.#ws) {
      throw new TransportError('WT_LANE_UNAVAILABLE', `'${ev.name}': no calls over WebSocket`);
    }
    const req = encodeFrame(FrameCallRequest, ev.payloadCodec, ev.id, encodeValue(ev, value) as Uint8Array);
    // What the call waits on: its stream, the caller's signal and the
    // session's end. Every await of the call races them (op), so an abort
    // or a close settles the call at once, whatever the transport does.
    let st: CallStream | undefined;
    // The call's first failure: abandoning the stream makes its other half
    // fail too, with this side's own code, and later failures report the first.
    let settled: TransportError | undefined;
    // Whether the call ended as the protocol ends it (the responder's FIN or CALL_ERROR): its stream is then not abandoned.
    let finished: true | undefined;
    let interrupt!: (e: unknown) => void;
    const interrupted = new Promise<never>((_, reject) => (interrupt = reject));
    interrupted.catch(() => {});
    // Settles the call, whatever it waits on, with why it ended without its
    // outcome: the caller's abort (WT_ABORTED), else the session's end
    // (WT_SESSION_CLOSED caused by how it ended, §11), else e, a fault of
    // the responder (an error, or its description); abandons its stream and
    // returns the first failure (an abort settles the call as it happens, so
    // a later failure reports it whatever e is). The signal's and the end's
    // listener, and what op throws at once when either came before.
    const failed = (e?: unknown): TransportError => {
      if (st) abandon(st);
      interrupt(
        (settled ??= signal?.aborted
          ? new TransportError('WT_ABORTED', `'${ev.name}' cancelled${signal.reason instanceof Error ? `: ${signal.reason.message}` : ''}`, {
              cause: signal.reason,
              remedy: 'Nothing to do.',
            })
          : this.endError
            ? closedBy(this.endError)
            : e instanceof StreamResetError
              ? e.code === ResetTooManyStreams
                ? new TransportError('WT_TOO_MANY_STREAMS', `'${ev.name}': over ${MaxCalls} calls`)
                : protocolError(`'${ev.name}': reset, code ${e.code ?? '?'}`)
              : protocolError(`'${ev.name}': ${e instanceof TransportError ? `${e.code}: ${e.message}` : describeError(e)}`)),
      );
      return settled;
    };
    // As failed, for an error of the transport, but throwing the call's
    // failure: one other than a reset means the session ended (the seam's
    // contract), so it waits up to 1000 ms for the transport to report that
    // end, and the call then rejects WT_SESSION_CLOSED.
    const failedAsync = async (e: unknown): Promise<never> => {
      if (!settled && !(e instanceof StreamResetError)) await outcomeWithin(this.#clock, 1000, this.ended);
      throw failed(e);
    };
    // What a transport operation on the call gives (the handshake's arrival,
    // its stream's opening, a read), or the call's failure first; throws at
    // once, starting nothing, when the caller already aborted or the
    // session ended (so an aborted call opens no stream it would not use).
    const op = async <T>(start: () => Promise<T>): Promise<T> => {
      if (signal?.aborted || this.endError) throw failed();
      // Started only now, and raced: its later rejection is handled.
      return Promise.race([start(), interrupted]).catch(failedAsync);
    };
    signal?.addEventListener('abort', failed);
    // The session's end to come (one already passed is found by op, before
    // the call waits on anything).
    this.#endListeners.add(failed);
    try {
      // A call made before the server's handshake arrived waits for it.
      await op(() => this.ready);
      st = await op(this.#conn.openCall!);
      // Neither the request's write nor the FIN after it (returns, §6.2) is
      // awaited: the response is read at once (a browser may resolve close()
      // only once the FIN is acknowledged, a delayed ACK later). A failure
      // of either fails the call, but for the responder's STOP_SENDING with
      // a code other than WT_TOO_MANY_STREAMS (§10.1, its refusal): it
      // stopped reading the request, and its answer (the CALL_ERROR of a
      // request over its byte budget, §5.1, §6.4) or its reset is on the
      // stream, which the loop below reads, as the Go runtime's client does.
      // A stop without its code (Firefox, or Chromium losing the reset that
      // came with it) still fails the call: the read side may never end.
      Promise.all([st.write(req), yields || st.close()]).catch((e: StreamResetError) => {
        // The call's reads report the failure: this rejection is handled.
        if (!e.remote || e.code == null || e.code === ResetTooManyStreams) failedAsync(e).catch(() => {});
      });
      const dec = new FrameDecoder();
      // Each chunk read through op (one reader for the call, not one per
      // frame); a malformed frame abandons the stream and rejects
      // WT_PROTOCOL_ERROR (§5.1). A failed read settled the call already:
      // failed gives that failure.
      const chunks = { read: () => op(() => st!.read()) };
      for (let f, consumed = 0; (f = await nextFrame(dec, chunks).catch((e: unknown) => { throw failed(e); })); ) {
        if (f.type === FrameCallError) {
          // The responder's error (§6.4), thrown after the responses before
          // it; a malformed CALL_ERROR throws its own WT_PROTOCOL_ERROR.
          // Unknown codes are kept as they are.
          finished = true;
          if (yields) st.close().catch(() => {});
          st.stop(1); // terminal: nothing more to read (0 is never sent, §10.1)
          const ce = parseCallError(f.payload);
          throw new TransportError(ce.code as CodeName, ce.message);
        }
        // The content of a CALL_RESPONSE in the call's slot (§5.3, §6.3);
        // anything else, or a response its slot refuses, is WT_PROTOCOL_ERROR
        // (§5.2, §5.3), and the stream is abandoned below.
        if (f.type !== FrameCallResponse) throw protocolError(`'${ev.name}': ${frameTypeName(f.type)} in a response`);
        yield slotContent(ev, true, f.codec, f.payload);
        // The loop came back for more: the element was consumed.
        if (yields && ++consumed === CreditBatch) {
          consumed = 0;
          // One batch's CALL_CREDIT, never above the initial window (§6.6), in
          // a fresh buffer (the transport owns it). A failed grant shows up
          // as the next read's error.
          st.write(encodeFrame(FrameCallCredit, CodecJson, 0, encodeCredit(CreditBatch))).catch(() => {});
        }
      }
      if (!dec.empty) throw failed('stream ended mid-frame');
      finished = true;
      if (yields) await st.close().catch(() => {}); // the sequence is complete
    } finally {
      if (st && !finished) abandon(st);
      signal?.removeEventListener('abort', failed);
      this.#endListeners.delete(failed);
    }
  }

  // ---- calls the server opens -----------------------------------------
  // Calls are the client's to make (§3.2, §4.3: a call declares no
  // direction), but a client still answers a call stream the server opens,
  // with the CALL_ERROR that says why (§6.4), rather than leaving it open;
  // past MaxCalls at once it resets the stream WT_TOO_MANY_STREAMS without
  // reading it (§10.1). As the Go runtime's client does where a transport
  // delivers such a stream; over WebTransport a Go client grants the server
  // no bidirectional stream credit at all, which a browser cannot.

  async #answerCalls(): Promise<void> {
    let answering = 0;
    // Until the Conn gives null, which it does once the session ended: a
    // stream it gave as the session ended is abandoned when its answer fails.
    for (let st; (st = await this.#conn.acceptCall!().catch(() => null)); ) {
      if (answering >= MaxCalls) {
        st.stop(ResetTooManyStreams);
        st.reset(ResetTooManyStreams);
      } else {
        answering++;
        void this.#answerCall(st).finally(() => answering--);
      }
    }
  }

  /** Reads the first frame of a call stream the server opened (within RequestTimeout) and answers it with a CALL_ERROR. */
  async #answerCall(st: CallStream): Promise<void> {
    // The request once read whole; undefined while it is not.
    let f: Frame | null | undefined;
    try {
      // A read the deadline cut short fails once the stream is stopped
      // below, which the race has handled.
      const got = await outcomeWithin(this.#clock, RequestTimeout, nextFrame(new FrameDecoder(), st));
      if (got === 'timeout') throw new TransportError('WT_ABORTED', `no whole request in ${RequestTimeout} ms`);
      if (!(f = got as Frame | null)) return abandon(st); // the stream ended before its first frame
      if (f.type !== FrameCallRequest) throw protocolError(`call opened by ${frameTypeName(f.type)}`);
      const ev = this.#contract.byId.get(f.eventId);
      if (!ev) throw new TransportError('WT_UNKNOWN_EVENT', `id ${f.eventId} is not in ${this.#contract.name}`);
      if (ev.shape === 'emit') throw protocolError(`'${ev.name}' is emit, not a call`);
      // A request its slot refuses is named as such; one it takes is still
      // the server calling, which only clients do (§3.2).
      slotContent(ev, false, f.codec, f.payload);
      this.#counters.directionDropped++;
      throw protocolError(`'${ev.name}' is a call: only clients call`);
    } catch (e) {
      // Every request is answered with why it is refused. An oversized
      // frame (§5.1), a stream reset or cut short, or the session's end
      // leave nothing to answer; after lost framing or a late request
      // nothing more is read.
      if (!(e instanceof TransportError) || e.code === 'WT_PAYLOAD_TOO_LARGE' || this.endError) return abandon(st);
      // A CALL_ERROR (§6.4) and FIN; a failed write abandons the stream.
      Promise.all([st.write(encodeFrame(FrameCallError, CodecJson, 0, encodeCallError(e))), st.close()]).catch(() => abandon(st));
      if (!f) return st.stop(ResetAborted);
    }
    // A whole request was answered: read to the end, discarding what the peer still sends (as the Go runtime's drain).
    while (await st.read().catch(() => null));
  }
}

/**
 * The next frame of a stream, reading chunks from rs as needed; null
 * once the stream ended (dec.empty tells whether between frames).
 */
const nextFrame = async (dec: FrameDecoder, rs: Pick<ReceiveStream, 'read'>): Promise<Frame | null> =>
  dec.next() ?? rs.read().then((chunk) => chunk && (dec.push(chunk), nextFrame(dec, rs)));

/** Abandons a call stream (cancellation, a malformed response, §8): reset and stop with WT_ABORTED. */
function abandon(st: CallStream): void {
  try {
    st.reset(ResetAborted);
  } catch {
    // already reset or the session ended
  }
  try {
    st.stop(ResetAborted);
  } catch {
    // already stopped or the session ended
  }
}

/** Reports the application's own failure (a handler's, a listener's) as an uncaught error would be, without stopping what called it. */
export function reportError(e: unknown): void {
  const report = (globalThis as { reportError?: (e: unknown) => void }).reportError;
  if (report) report(e);
  else
    queueMicrotask(() => {
      throw e;
    });
}
