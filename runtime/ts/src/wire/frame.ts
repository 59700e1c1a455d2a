// Stream frames (§5): the 12-byte header, the type-specific caps, the codec
// per slot, and an incremental decoder that takes bytes in any chunking.
// Pure: no I/O, no timers. Mirrors the Go runtime's wire/frame.go and
// wire/reader.go, check for check and in the same order.

import { protocolError, TransportError } from '../errors.js';
import {
  CodecBytes,
  CodecJson,
  FrameCallCredit,
  FrameCallError,
  FrameCallRequest,
  FrameCallResponse,
  FrameDatagram,
  FrameEmit,
  FrameHandshake,
  FrameJoin,
  FrameLeave,
  HeaderLen,
  MaxCallPayload,
  MaxPayload,
  minLength,
} from './kinds.js';

export * from './kinds.js';

/** Frame types (§5.2). 0x00 and 0x0A–0xFF are reserved and invalid. */
export const FrameType = {
  HANDSHAKE: FrameHandshake,
  EMIT: FrameEmit,
  CALL_REQUEST: FrameCallRequest,
  CALL_RESPONSE: FrameCallResponse,
  CALL_ERROR: FrameCallError,
  JOIN: FrameJoin,
  LEAVE: FrameLeave,
  CALL_CREDIT: FrameCallCredit,
  DATAGRAM: FrameDatagram,
} as const;
export type FrameType = (typeof FrameType)[keyof typeof FrameType];

const frameNames = ['', 'HANDSHAKE', 'EMIT', 'CALL_REQUEST', 'CALL_RESPONSE', 'CALL_ERROR', 'JOIN', 'LEAVE', 'CALL_CREDIT', 'DATAGRAM'];

/** Codecs (§5.3). 0x00 and 0x03–0xFF are reserved. */
export const Codec = { JSON: CodecJson, BYTES: CodecBytes } as const;
export type Codec = (typeof Codec)[keyof typeof Codec];

/** Reports whether c is a codec version 0 accepts. */
export function codecKnown(c: number): c is Codec {
  return c === CodecJson || c === CodecBytes;
}

/** "json", "bytes", or "codec 0x03" for a reserved value. */
export function codecName(c: number): string {
  if (c === CodecJson) return 'json';
  if (c === CodecBytes) return 'bytes';
  return 'codec 0x' + hex2(c);
}

/** Reports whether t is a type §5.2 defines. */
export function frameTypeKnown(t: number): t is FrameType {
  return t >= FrameHandshake && t <= FrameDatagram;
}

/** The spec's name of a type, e.g. "CALL_REQUEST", or "type 0x0a" for a reserved value. */
export function frameTypeName(t: number): string {
  return frameTypeKnown(t) ? (frameNames[t] as string) : 'type 0x' + hex2(t);
}

/** One decoded stream frame. */
export interface Frame {
  readonly type: FrameType;
  readonly codec: Codec;
  readonly eventId: number;
  readonly payload: Uint8Array;
}

/** A byte as two hex digits, naming a reserved codec or type. */
function hex2(n: number): string {
  return n.toString(16).padStart(2, '0');
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
 * Throws the error a receiver would raise for a frame of this header and
 * payload size, applying §5.1–§5.4 in the order a receiver reads them: type,
 * cap, reserved bits, codec, control-frame codec, event id. The encoder
 * refuses to build a frame a peer must reject; the decoder, whose frames
 * hold at least one payload byte, also passes the reserved bits, and the
 * emit stream's decoder a smaller cap for the call frames (see FrameDecoder).
 */
export function checkFrame(t: number, c: number, eventId: number, payloadLen: number, reserved?: number, callCap = MaxCallPayload): void {
  if (!payloadLen) throw protocolError(`${frameTypeName(t)} with no payload`);
  // The valid case allocates nothing: a message is built only for a fault.
  if (!frameTypeKnown(t)) throw protocolError(`reserved frame ${frameTypeName(t)}`);
  // The type's cap (§5.1): 16 MiB on the call frames (0x03–0x05, §5.2), 1 MiB otherwise.
  const cap = t >= FrameCallRequest && t <= FrameCallError ? callCap : MaxPayload;
  if (payloadLen > cap) throw new TransportError('WT_PAYLOAD_TOO_LARGE', `${frameTypeName(t)} payload ${payloadLen} bytes, over ${cap}`);
  if (reserved) throw protocolError(`${frameTypeName(t)} reserved bits ${reserved} set`);
  if (!codecKnown(c)) throw new TransportError('WT_UNSUPPORTED_CODEC', `${frameTypeName(t)} reserved ${codecName(c)}`);
  // Control frames always carry codec 0x01 (§5.3): of the known types
  // (0x01–0x09), HANDSHAKE and every one from CALL_ERROR (0x05) on.
  if ((t === FrameHandshake || t >= FrameCallError) && c !== CodecJson) throw protocolError(`${frameTypeName(t)} with ${codecName(c)}, not json`);
  // EMIT and CALL_REQUEST name their event; every other frame carries 0 (§5.4).
  if (!eventId === (t === FrameEmit || t === FrameCallRequest)) {
    throw protocolError(`${frameTypeName(t)} with event id ${eventId}`);
  }
}

export function putU32(b: Uint8Array, off: number, v: number): void {
  b[off] = v >>> 24;
  b[off + 1] = v >>> 16;
  b[off + 2] = v >>> 8;
  b[off + 3] = v;
}

export function getU32(b: Uint8Array, off: number): number {
  return (((b[off] as number) << 24) | ((b[off + 1] as number) << 16) | ((b[off + 2] as number) << 8) | (b[off + 3] as number)) >>> 0;
}

/**
 * Writes the 12-byte header of a frame carrying payloadLen bytes at b[off],
 * the two reserved bytes zero (§5.1): b may be a buffer written before. It
 * does not validate; checkFrame does.
 */
export function putHeader(b: Uint8Array, off: number, t: number, c: number, eventId: number, payloadLen: number): void {
  putU32(b, off, 8 + payloadLen);
  putU32(b, off + 4, (t << 24) | (c << 16));
  putU32(b, off + 8, eventId);
}

/**
 * Decodes stream frames from bytes pushed in any chunking, one byte at a
 * time included. The header is judged before any payload byte is buffered,
 * in the Go runtime's order: Length ≥ 9 (from the 4 length bytes alone), a
 * known type, the type's cap (WT_PAYLOAD_TOO_LARGE), reserved bits zero, a
 * known codec (WT_UNSUPPORTED_CODEC), codec 0x01 on control frames, the
 * event id rule. The caller calls next() until it returns undefined after
 * every push, so the decoder holds at most what arrived of one frame (within
 * its type's cap) plus the rest of the last chunk. A header that fails stays
 * held, so next() keeps throwing its error: the frame boundaries are lost,
 * and the engine drops a decoder that threw (it holds at most what arrived
 * since the last whole frame, a header being judged before its payload is
 * buffered). Which frame may appear on which stream is the caller's
 * concern, but for the cap: the emit stream's decoder (callCap MaxPayload)
 * caps the call frames, which are invalid there (§5.2), at 1 MiB too, so a
 * peer cannot make it hold 16 times what the emit stream permits (§5.1)
 * before the type is refused. The Go runtime refuses such a type on its
 * header; here a call frame over 1 MiB on the emit stream is refused on its
 * header as WT_PAYLOAD_TOO_LARGE, a smaller one once read: either closes
 * the session WT_PROTOCOL_ERROR (§5.5).
 */
export class FrameDecoder {
  #start = 0;
  /** The cap of the call frames: MaxCallPayload, or on the emit stream MaxPayload. */
  #callCap: number;
  /** The size of the frame being read, header included, once its header passed (it stays held until then); 0 before. */
  #n = 0;
  #end = 0;
  // Unread bytes are buf[start..end). A chunk pushed onto an empty decoder
  // is used as it is (no copy); bytes are copied only to join chunks, into
  // a buffer this decoder owns and grows at most to the frame's size. A
  // chunk in use ends at end, so it has no room: the next chunk is never
  // written into it, but joined with what it holds in a buffer of their own.
  #buf: Uint8Array = new Uint8Array();

  /** True when the decoder holds no byte of a frame: a stream ending now ends cleanly between frames. */
  get empty(): boolean {
    // A header that passed stays held until its frame is whole.
    return this.#start === this.#end;
  }

  constructor(callCap = MaxCallPayload) {
    this.#callCap = callCap;
  }

  /** Adds bytes of the stream. The decoder keeps a reference: the caller must not change chunk after. */
  push(chunk: Uint8Array): void {
    // An empty chunk adds nothing.
    const held = this.#end - this.#start;
    if (!held) {
      this.#buf = chunk;
      this.#start = 0;
      this.#end = chunk.length;
      return;
    }
    if (this.#buf.length - this.#end < chunk.length) {
      const need = held + chunk.length;
      // Room for the rest of the frame when its size is known, else (#n is 0) for what arrived.
      const b = new Uint8Array(Math.max(need, Math.min(2 * need, this.#n)));
      b.set(this.#buf.subarray(this.#start, this.#end));
      this.#buf = b;
      this.#start = 0;
      this.#end = held;
    }
    this.#buf.set(chunk, this.#end);
    this.#end += chunk.length;
  }

  /** The next complete frame, or undefined until more bytes arrive. Throws a TransportError on a malformed frame. */
  next(): Frame | undefined {
    const b = this.#buf;
    const held = this.#end - this.#start;
    const at = this.#start;
    if (!this.#n) {
      if (held < 4) return undefined;
      const length = getU32(b, at);
      if (length < minLength) throw protocolError(`frame length ${length}, under ${minLength}`);
      if (held < HeaderLen) return undefined;
      checkFrame(b[at + 4] as number, b[at + 5] as number, getU32(b, at + 8), length - 8, ((b[at + 6] as number) << 8) | (b[at + 7] as number), this.#callCap);
      this.#n = length + 4;
    }
    if (held < this.#n) return undefined;
    this.#start += this.#n;
    this.#n = 0;
    // The frame ends where the next one starts.
    return { type: b[at + 4] as FrameType, codec: b[at + 5] as Codec, eventId: getU32(b, at + 8), payload: b.subarray(at + HeaderLen, this.#start) };
  }
}
