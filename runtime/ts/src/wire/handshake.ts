// The handshake (§4): frame 0 of each emit stream, its strict decoding, the
// per-event comparison of §4.3 and feature negotiation (§4.2). Mirrors the
// Go runtime's wire/handshake.go, refusal wording included, so both
// runtimes name a conflicting event the same way.

import { TransportError } from '../errors.js';
import { MaxWebSocketReason } from '../codes.js';
import { cutReason, expect, jsonArray, jsonString, quoteShort, readObject } from './json.js';
import { ProtocolVersion } from './kinds.js';
import { utf8Encode } from './utf8.js';

export { ProtocolVersion } from './kinds.js';

/** An event's delivery guarantee as the contract declares it (§3). */
export type Lane = 'reliable' | 'unreliable';

/** One row of a handshake's event table (§4.3). */
export interface EventEntry {
  readonly name: string;
  readonly id: number;
  readonly lane: Lane;
}

/** The payload of the HANDSHAKE frame (§4.1). */
export interface Handshake {
  readonly v: number;
  readonly feat: readonly string[];
  readonly events: readonly EventEntry[];
}

/**
 * Compares two strings by Unicode code point (§4.3), which JavaScript's
 * default comparison (UTF-16 units) gets wrong for names mixing
 * U+E000–U+FFFF with astral characters.
 */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates (astral characters) move past U+E000–U+FFFF.
    if (x >= 0xd800) x += x < 0xe000 ? 0x2000 : -0x800;
    if (y >= 0xd800) y += y < 0xe000 ? 0x2000 : -0x800;
    return x - y;
  }
  return a.length - b.length;
}

/** The feature tokens both peers support, sorted and without duplicates (§4.2); unknown tokens are ignored. */
export function negotiateFeatures(local: readonly string[], peer: readonly string[]): string[] {
  const theirs = new Set(peer);
  return [...new Set(local.filter((f) => theirs.has(f)))].sort(compareCodePoints);
}

function sortedByName(events: readonly EventEntry[]): EventEntry[] {
  return [...events].sort((a, b) => compareCodePoints(a.name, b.name));
}

/**
 * Compares this peer's event table with the peer's (§4.3). Same name with a
 * different lane or id, or same id with a different name, throws
 * WT_CONTRACT_MISMATCH whose message is the close reason naming the event
 * ("event 'cursor' is 'unreliable' here and 'reliable' at the peer"), cut to
 * 123 bytes like every refusal reason (§3.3, §4). A name known to one side
 * only is not a conflict. With several conflicts, the first in name order of
 * the local table is reported, lane before id.
 */
export function compareTables(local: readonly EventEntry[], peer: readonly EventEntry[]): void {
  // The peer's events by name and by id: a Map's string and number keys never meet.
  const peers = new Map<string | number, EventEntry>();
  for (const p of peer) peers.set(p.name, p).set(p.id, p);
  for (const l of sortedByName(local)) {
    const p = peers.get(l.name);
    const q = peers.get(l.id);
    const reason =
      p && p.lane !== l.lane
        ? `event '${l.name}' is '${l.lane}' here and '${p.lane}' at the peer`
        : p && p.id !== l.id
          ? `event '${l.name}' has id ${l.id} here and ${p.id} at the peer`
          : q && q.name !== l.name
            ? `id ${l.id} is event '${l.name}' here and '${q.name}' at the peer`
            : '';
    if (reason) throw new TransportError('WT_CONTRACT_MISMATCH', cutReason(reason, MaxWebSocketReason));
  }
}

function decodeEvents(raw: unknown, what: string): EventEntry[] {
  // Names seen (as keys) and the name of each id seen: a Map's string and number keys never meet.
  const seen = new Map<string | number, unknown>();
  return jsonArray(raw, what).map((row, i) => {
    const at = `events[${i}]`;
    const cells = jsonArray(row, at);
    if (cells.length !== 3) throw new Error(`${at} is not [name, id, lane]`);
    const name = jsonString(cells[0], `${at} name`);
    const event = `event ${quoteShort(name)}`;
    const id = cells[1] as number;
    // A u32: an integer its own unsigned 32-bit value, 0 to 0xffffffff.
    expect(Number.isInteger(id) && id === id >>> 0, id, `${event} id`, 'a u32');
    if (!id) throw new Error(`${event} has id 0`);
    const lane = jsonString(cells[2], `${event} lane`);
    if (lane !== 'reliable' && lane !== 'unreliable') throw new Error(`${event} has lane ${quoteShort(lane)}`);
    if (seen.has(name)) throw new Error(`${event} twice`);
    if (seen.has(id)) throw new Error(`${quoteShort(seen.get(id) as string)} and ${quoteShort(name)} share id ${id}`);
    seen.set(name, id).set(id, name);
    return { name, id, lane };
  });
}

/**
 * Decodes a HANDSHAKE payload strictly (§4.1, §4.3): exactly the fields v
 * (an integer), feat (an array of strings) and events (an array of
 * [name, id, lane], the id a u32 other than 0, the lane 'reliable' or
 * 'unreliable'), no field twice, no name or id twice in the table, nothing
 * after the object. Anything else throws WT_PROTOCOL_ERROR naming what is
 * wrong. A v other than ProtocolVersion, written as an integer, throws
 * WT_PROTOCOL_VERSION_MISMATCH before anything else is read (§4.2).
 */
export function decodeHandshake(payload: Uint8Array): Handshake {
  // Its numbers are v and the ids: integers, written as such (strict).
  return readObject<Handshake>(
    payload,
    'handshake',
    {
      // Read first: another version's handshake is that version's to
      // define, so nothing after its v is judged (§4.2).
      v: (raw, what) => {
        const v = expect<number>(Number.isSafeInteger(raw), raw, what, 'an integer');
        if (v !== ProtocolVersion) throw new TransportError('WT_PROTOCOL_VERSION_MISMATCH', `version ${ProtocolVersion} here, ${v} at the peer`);
        return v;
      },
      feat: (raw, what) => jsonArray(raw, what).map((item, i) => jsonString(item, `feat[${i}]`)),
      events: decodeEvents,
    },
    true,
  );
}

/**
 * Encodes h as the compact JSON of §4.1, byte-identical to JSON.stringify of
 * {v, feat, events} with the events sorted by name by code point (§4.3).
 */
export function encodeHandshake(h: Handshake): Uint8Array {
  const events = sortedByName(h.events).map((e) => [e.name, e.id, e.lane]);
  return utf8Encode(JSON.stringify({ v: h.v, feat: h.feat, events }));
}
