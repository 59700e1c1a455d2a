// Datagrams of the unreliable lane (§7.1–§7.4). Mirrors the Go runtime's
// wire/datagram.go.

import { protocolError, TransportError } from '../errors.js';
import { codecKnown, codecName, getU32, putU32, type Codec } from './frame.js';
import { DatagramHeaderLen, DefaultDatagramSize } from './kinds.js';

export { DatagramHeaderLen, DefaultDatagramSize } from './kinds.js';

/** One unreliable-lane message (§7.1). */
export interface Datagram {
  readonly codec: Codec;
  readonly eventId: number;
  readonly origin: number;
  readonly seq: number;
  readonly payload: Uint8Array;
}

/** Writes the 13-byte datagram header at b[off] (§7.1). */
export function putDatagramHeader(b: Uint8Array, off: number, codec: number, eventId: number, origin: number, seq: number): void {
  b[off] = codec;
  putU32(b, off + 1, eventId);
  putU32(b, off + 5, origin);
  putU32(b, off + 9, seq);
}

/** Encodes d in the §7.1 layout. It does not check the size ceiling; the sender does (§7.4). */
export function encodeDatagram(d: Datagram): Uint8Array {
  const b = new Uint8Array(DatagramHeaderLen + d.payload.length);
  putDatagramHeader(b, 0, d.codec, d.eventId, d.origin, d.seq);
  b.set(d.payload, DatagramHeaderLen);
  return b;
}

/**
 * Decodes a datagram; the payload is a view of b. A datagram shorter than
 * the 13-byte header carries no event: undefined, discarded silently (§7.2),
 * which also covers the empty liveness probe. A reserved codec throws
 * WT_UNSUPPORTED_CODEC (§5.3); event id 0 and an empty payload throw
 * WT_PROTOCOL_ERROR (§7.2). Origin and sequence are not judged here (§7.3).
 */
export function parseDatagram(b: Uint8Array): Datagram | undefined {
  if (b.length < DatagramHeaderLen) return undefined;
  const codec = b[0] as number;
  const eventId = getU32(b, 1);
  if (!codecKnown(codec)) throw new TransportError('WT_UNSUPPORTED_CODEC', `datagram of reserved ${codecName(codec)}`);
  if (!eventId) throw protocolError('datagram of event id 0');
  if (b.length === DatagramHeaderLen) throw protocolError('empty datagram');
  return { codec, eventId, origin: getU32(b, 5), seq: getU32(b, 9), payload: b.subarray(DatagramHeaderLen) };
}

/**
 * The largest datagram payload when the transport reports transportMax as
 * its maximum datagram size (§7.4); zero or less means 1024. Never negative.
 */
export function maxDatagramPayload(transportMax: number): number {
  return Math.max((transportMax > 0 ? transportMax : DefaultDatagramSize) - DatagramHeaderLen, 0);
}

/** Whether seq is newer than last (§7.3): circular over u32, a difference above 0x7FFFFFFF is wrap, not progress. */
export function seqNewer(seq: number, last: number): boolean {
  // The difference as a signed 32-bit number: positive from 1 to 0x7FFFFFFF ahead.
  return ((seq - last) | 0) > 0;
}

/** The sequence after seq (§7.3): from 1, wrapping from 0xFFFFFFFF to 1, never 0. nextSeq(0) is 1. */
export function nextSeq(seq: number): number {
  // For a u32: seq + 1, and 0xFFFFFFFF % 0xFFFFFFFF + 1 is 1.
  return (seq % 0xffffffff) + 1;
}

