// Stream frames (§5): the 12-byte header, the type-specific caps, the codec
// per slot, and an incremental decoder that takes bytes in any chunking.
// Pure: no I/O, no timers. Mirrors the Go runtime's wire/frame.go and
// wire/reader.go, check for check and in the same order.

import { TransportError } from '../errors.js';

/** Frame types (§5.2). 0x00 and 0x0A–0xFF are reserved and invalid. */
export const FrameType = {
  HANDSHAKE: 0x01,
  EMIT: 0x02,
  CALL_REQUEST: 0x03,
  CALL_RESPONSE: 0x04,
  CALL_ERROR: 0x05,
  JOIN: 0x06,
  LEAVE: 0x07,
  CALL_CREDIT: 0x08,
  DATAGRAM: 0x09,
} as const;
export type FrameType = (typeof FrameType)[keyof typeof FrameType];

const frameNames = ['', 'HANDSHAKE', 'EMIT', 'CALL_REQUEST', 'CALL_RESPONSE', 'CALL_ERROR', 'JOIN', 'LEAVE', 'CALL_CREDIT', 'DATAGRAM'];

/** Codecs (§5.3). 0x00 and 0x03–0xFF are reserved. */
export const Codec = { JSON: 0x01, BYTES: 0x02 } as const;
export type Codec = (typeof Codec)[keyof typeof Codec];

/** The fixed overhead of a frame: 4 length bytes and the 8 header bytes the length counts (§5.1). */
export const HeaderLen = 12;
/** The payload cap of every frame type but the call frames (§5.1). */
export const MaxPayload = 1 << 20;
/** The payload cap of CALL_REQUEST, CALL_RESPONSE and CALL_ERROR (§5.1). */
export const MaxCallPayload = 16 << 20;
/** The smallest Length: 8 header bytes and one payload byte (§5.1). */
const minLength = 9;

/** Reports whether t is a type §5.2 defines. */
export function frameTypeKnown(t: number): t is FrameType {
  return t >= FrameType.HANDSHAKE && t <= FrameType.DATAGRAM;
}

/** The spec's name of a type, e.g. "CALL_REQUEST", or "type 0x0a" for a reserved value. */
export function frameTypeName(t: number): string {
  return frameTypeKnown(t) ? (frameNames[t] as string) : 'type 0x' + hex2(t);
}

/** Reports whether c is a codec version 0 accepts. */
export function codecKnown(c: number): c is Codec {
  return c === Codec.JSON || c === Codec.BYTES;
}

/** "json", "bytes", or "codec 0x03" for a reserved value. */
export function codecName(c: number): string {
  if (c === Codec.JSON) return 'json';
  if (c === Codec.BYTES) return 'bytes';
  return 'codec 0x' + hex2(c);
}

function hex2(n: number): string {
  return n.toString(16).padStart(2, '0');
}

/** The largest payload a frame of type t may carry (§5.1): 16 MiB on the call frames, 1 MiB otherwise. */
export function maxPayloadOf(t: number): number {
  return t === FrameType.CALL_REQUEST || t === FrameType.CALL_RESPONSE || t === FrameType.CALL_ERROR ? MaxCallPayload : MaxPayload;
}

// Control frames always carry codec 0x01 (§5.3).
function isControl(t: number): boolean {
  return (
    t === FrameType.HANDSHAKE ||
    t === FrameType.JOIN ||
    t === FrameType.LEAVE ||
    t === FrameType.CALL_ERROR ||
    t === FrameType.CALL_CREDIT ||
    t === FrameType.DATAGRAM
  );
}

// EMIT and CALL_REQUEST name their event; every other frame carries 0 (§5.4).
function hasEventId(t: number): boolean {
  return t === FrameType.EMIT || t === FrameType.CALL_REQUEST;
}

/** One decoded stream frame. */
export interface Frame {
  readonly type: FrameType;
  readonly codec: Codec;
  readonly eventId: number;
  readonly payload: Uint8Array;
}

/**
 * Applies §5.1–§5.4 to a header in the order a receiver reads them: type,
 * cap, codec, control-frame codec, event id. Returns the error or undefined.
 */
function checkHeader(t: number, c: number, eventId: number, payloadLen: number): TransportError | undefined {
  if (!frameTypeKnown(t)) return new TransportError('WT_PROTOCOL_ERROR', `reserved frame ${frameTypeName(t)} (§5.2)`);
  if (payloadLen > maxPayloadOf(t)) {
    return new TransportError('WT_PAYLOAD_TOO_LARGE', `${frameTypeName(t)} payload of ${payloadLen} bytes exceeds the ${maxPayloadOf(t)}-byte cap (§5.1)`);
  }
  if (!codecKnown(c)) return new TransportError('WT_UNSUPPORTED_CODEC', `${frameTypeName(t)} frame with reserved ${codecName(c)} (§5.3)`);
  if (isControl(t) && c !== Codec.JSON) {
    return new TransportError('WT_PROTOCOL_ERROR', `${frameTypeName(t)} frame with ${codecName(c)}; control frames carry codec 0x01 (§5.3)`);
  }
  if (hasEventId(t) && eventId === 0) return new TransportError('WT_PROTOCOL_ERROR', `${frameTypeName(t)} frame with event id 0 (§5.4)`);
  if (!hasEventId(t) && eventId !== 0) {
    return new TransportError('WT_PROTOCOL_ERROR', `${frameTypeName(t)} frame with event id ${eventId}; it must be 0 (§5.4)`);
  }
  return undefined;
}

/**
 * Throws the error a receiver would raise for a frame of this header and
 * payload size: the encoder refuses to build a frame a peer must reject.
 */
export function checkFrame(t: number, c: number, eventId: number, payloadLen: number): void {
  if (payloadLen === 0) throw new TransportError('WT_PROTOCOL_ERROR', `${frameTypeName(t)} frame with an empty payload (§5.1)`);
  const err = checkHeader(t, c, eventId, payloadLen);
  if (err !== undefined) throw err;
}

/** Writes the 12-byte header of a frame carrying payloadLen bytes at b[off]. It does not validate; checkFrame does. */
export function putHeader(b: Uint8Array, off: number, t: number, c: number, eventId: number, payloadLen: number): void {
  const length = 8 + payloadLen;
  b[off] = length >>> 24;
  b[off + 1] = length >>> 16;
  b[off + 2] = length >>> 8;
  b[off + 3] = length;
  b[off + 4] = t;
  b[off + 5] = c;
  b[off + 6] = 0;
  b[off + 7] = 0;
  b[off + 8] = eventId >>> 24;
  b[off + 9] = eventId >>> 16;
  b[off + 10] = eventId >>> 8;
  b[off + 11] = eventId;
}

/**
 * Encodes one frame. It throws the TransportError a receiver would raise
 * for it (§5.1–§5.4): WT_PROTOCOL_ERROR for an empty payload or a wrong
 * type, codec or event id, WT_UNSUPPORTED_CODEC for a reserved codec,
 * WT_PAYLOAD_TOO_LARGE over the type's cap.
 */
export function encodeFrame(t: number, c: number, eventId: number, payload: Uint8Array): Uint8Array {
  checkFrame(t, c, eventId, payload.length);
  const b = new Uint8Array(HeaderLen + payload.length);
  putHeader(b, 0, t, c, eventId, payload.length);
  b.set(payload, HeaderLen);
  return b;
}

/**
 * Decodes stream frames from bytes pushed in any chunking, one byte at a
 * time included. The header is judged before any payload byte is buffered,
 * in the Go runtime's order: Length ≥ 9 (from the 4 length bytes alone), a
 * known type, the type's cap (WT_PAYLOAD_TOO_LARGE), reserved bits zero,
 * a known codec (WT_UNSUPPORTED_CODEC), codec 0x01 on control frames, the
 * event id rule. So the decoder holds at most one frame's bytes (within its
 * type's cap) plus the rest of the last chunk pushed. Errors are sticky:
 * once next() throws, the frame boundaries are lost and it keeps throwing.
 * Which frame may appear on which stream is the caller's concern.
 */
export class FrameDecoder {
  /** Chunks pushed and not yet consumed: chunks[head..], the first read from offset. */
  #chunks: Uint8Array[] = [];
  #head = 0;
  #offset = 0;
  #buffered = 0;
  /** The Length of the frame being read, once its 4 bytes arrived and passed; -1 before. */
  #length = -1;
  /** True once the current frame's header passed every check. */
  #headerChecked = false;
  #type = 0;
  #codec = 0;
  #eventId = 0;
  /**
   * A payload larger than what had arrived when its header passed: it grows
   * as bytes arrive (at most doubling), so a header claiming 16 MiB followed
   * by nothing costs 64 KiB, not 16 MiB.
   */
  #partial: Uint8Array | undefined;
  #partialLen = 0;
  readonly #scratch = new Uint8Array(HeaderLen);
  #error: TransportError | undefined;

  /** Adds bytes of the stream. The decoder keeps a reference: the caller must not change chunk after. */
  push(chunk: Uint8Array): void {
    if (this.#error !== undefined || chunk.length === 0) return;
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
  }

  /** The next complete frame, or undefined until more bytes arrive. Throws a TransportError on a malformed frame. */
  next(): Frame | undefined {
    if (this.#error !== undefined) throw this.#error;
    try {
      return this.#decode();
    } catch (e) {
      this.#error = e as TransportError;
      this.#chunks = [];
      this.#head = 0;
      this.#buffered = 0;
      this.#partial = undefined;
      throw e;
    }
  }

  /** True when no byte of a partial frame is held: a stream ending now ends cleanly between frames. */
  get atBoundary(): boolean {
    return this.#buffered === 0 && this.#length < 0;
  }

  /** Bytes held: of the frame being read and any after it. */
  get bufferedBytes(): number {
    return this.#buffered + (this.#partial === undefined ? 0 : this.#partial.length);
  }

  #decode(): Frame | undefined {
    if (this.#length < 0) {
      if (this.#buffered < 4) return undefined;
      const h = this.#peek(4);
      const length = ((h[0] as number) * 0x1000000 + (((h[1] as number) << 16) | ((h[2] as number) << 8) | (h[3] as number))) >>> 0;
      if (length < minLength) {
        throw new TransportError('WT_PROTOCOL_ERROR', `frame length ${length} is below the minimum of ${minLength} (§5.1)`);
      }
      this.#length = length;
    }
    const n = this.#length - 8;
    if (!this.#headerChecked) {
      if (this.#buffered < HeaderLen) return undefined;
      const h = this.#peek(HeaderLen);
      const t = h[4] as number;
      const c = h[5] as number;
      const eventId = ((h[8] as number) * 0x1000000 + (((h[9] as number) << 16) | ((h[10] as number) << 8) | (h[11] as number))) >>> 0;
      if (!frameTypeKnown(t)) throw new TransportError('WT_PROTOCOL_ERROR', `reserved frame ${frameTypeName(t)} (§5.2)`);
      if (n > maxPayloadOf(t)) {
        throw new TransportError('WT_PAYLOAD_TOO_LARGE', `${frameTypeName(t)} frame length ${this.#length} exceeds the ${maxPayloadOf(t)}-byte payload cap (§5.1)`);
      }
      if (h[6] !== 0 || h[7] !== 0) {
        throw new TransportError('WT_PROTOCOL_ERROR', `${frameTypeName(t)} frame with reserved bits 0x${hex2(h[6] as number)}${hex2(h[7] as number)} set (§5.1)`);
      }
      const err = checkHeader(t, c, eventId, n);
      if (err !== undefined) throw err;
      this.#type = t;
      this.#codec = c;
      this.#eventId = eventId;
      this.#headerChecked = true;
      this.#skip(HeaderLen);
    }
    let payload: Uint8Array;
    if (this.#partial === undefined) {
      if (this.#buffered >= n) {
        payload = this.#take(n);
      } else {
        if (n <= smallPayload) return undefined; // wait: at most smallPayload bytes held in chunks
        this.#partial = new Uint8Array(Math.min(n, Math.max(firstChunk, this.#buffered)));
        this.#partialLen = 0;
        if (!this.#fillPartial(n)) return undefined;
        payload = this.#partial;
      }
    } else {
      if (!this.#fillPartial(n)) return undefined;
      payload = this.#partial;
    }
    const f: Frame = { type: this.#type as FrameType, codec: this.#codec as Codec, eventId: this.#eventId, payload };
    this.#length = -1;
    this.#headerChecked = false;
    this.#partial = undefined;
    return f;
  }

  /** Moves pushed bytes into the partial payload, growing it; true once it holds all n. */
  #fillPartial(n: number): boolean {
    let p = this.#partial as Uint8Array;
    while (this.#partialLen < n && this.#buffered > 0) {
      if (this.#partialLen === p.length) {
        const grown = new Uint8Array(Math.min(2 * p.length, n));
        grown.set(p);
        p = this.#partial = grown;
      }
      const c = this.#chunks[this.#head] as Uint8Array;
      const k = Math.min(p.length - this.#partialLen, c.length - this.#offset);
      p.set(c.subarray(this.#offset, this.#offset + k), this.#partialLen);
      this.#partialLen += k;
      this.#skip(k);
    }
    return this.#partialLen === n;
  }

  /** The first n ≤ 12 unread bytes, without consuming them. */
  #peek(n: number): Uint8Array {
    const first = this.#chunks[this.#head] as Uint8Array;
    if (first.length - this.#offset >= n) return first.subarray(this.#offset, this.#offset + n);
    let got = 0;
    let off = this.#offset;
    for (let i = this.#head; got < n; i++) {
      const c = this.#chunks[i] as Uint8Array;
      const k = Math.min(n - got, c.length - off);
      this.#scratch.set(c.subarray(off, off + k), got);
      got += k;
      off = 0;
    }
    return this.#scratch;
  }

  #skip(n: number): void {
    this.#buffered -= n;
    while (n > 0) {
      const first = this.#chunks[this.#head] as Uint8Array;
      const left = first.length - this.#offset;
      if (n < left) {
        this.#offset += n;
        return;
      }
      n -= left;
      this.#head++;
      this.#offset = 0;
    }
    if (this.#head === this.#chunks.length) {
      this.#chunks.length = 0;
      this.#head = 0;
    } else if (this.#head > 64 && this.#head * 2 > this.#chunks.length) {
      this.#chunks.splice(0, this.#head);
      this.#head = 0;
    }
  }

  /** Consumes n buffered bytes: a view of the chunk when they lie in one, else one copy. */
  #take(n: number): Uint8Array {
    const first = this.#chunks[this.#head] as Uint8Array;
    if (first.length - this.#offset >= n) {
      const p = first.subarray(this.#offset, this.#offset + n);
      this.#skip(n);
      return p;
    }
    const p = new Uint8Array(n);
    let got = 0;
    while (got < n) {
      const c = this.#chunks[this.#head] as Uint8Array;
      const k = Math.min(n - got, c.length - this.#offset);
      p.set(c.subarray(this.#offset, this.#offset + k), got);
      got += k;
      this.#skip(k);
    }
    return p;
  }
}

// A payload up to this size waits in the pushed chunks until complete;
// a larger one is assembled as it arrives (see FrameDecoder.partial).
const smallPayload = 4 << 10;
const firstChunk = 64 << 10;
