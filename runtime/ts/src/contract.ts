// The contract object the runtime consumes: the generator emits it, and a
// test can write one by hand, checked by the compiler against EventSpec;
// compileContract indexes it for the engine.

import { CodecJson, CodecBytes, type Codec } from './wire/frame.js';
import type { EventEntry } from './wire/handshake.js';

/** The shape of an event: fire-and-forget, or a call (§3.2). */
export type Shape = 'emit' | 'returns' | 'yields';
/** A slot's codec (§5.3): 'json' slots take and give JS values, 'bytes' slots Uint8Array. */
export type SlotCodec = 'json' | 'bytes';

/**
 * A validator hook, called on receive: it fails by throwing or by returning
 * false; any other result passes, and the decoded value is delivered as is.
 */
export type Validator = (value: unknown) => unknown;

/** What every event declares. */
interface EventBase {
  readonly name: string;
  /** The event id (§5.4), computed by the generator: SHA-256(name)[0:4] big-endian, or the explicit id. */
  readonly id: number;
  /** The codec of the payload (of the request, for calls). */
  readonly payload: SlotCodec;
  /** Checks a received emit's payload; a failing one is dropped and counted (validationDropped). */
  readonly validate?: Validator;
  /**
   * Reads a received payload (the value JSON.parse gave; a bytes slot's
   * Uint8Array) as the typed value handlers get, or throws (generated code throws a ValidationError
   * naming the field); a payload it refuses is dropped and counted
   * (validationDropped). Runs before validate.
   */
  readonly decode?: Decoder;
  /**
   * Writes a JSON payload (of the request, for calls) as the JSON text sent
   * as it is, in place of JSON.stringify, or throws: the emit or call then
   * throws WT_VALIDATION_FAILED and nothing is sent.
   */
  readonly encode?: (value: never) => string;
}

/** An emit: on the emit lane (§6.1) or as a datagram (§7). */
interface EmitBase extends EventBase {
  readonly shape: 'emit';
  /** Which side sends it; absent means either. */
  readonly from?: 'client' | 'server';
  readonly result?: never;
  readonly validateResult?: never;
  readonly decodeResult?: never;
}

/** An emit on the emit lane: it needs no fallback on the WebSocket mapping. */
export interface ReliableEmitSpec extends EmitBase {
  readonly lane: 'reliable';
  readonly fallback?: never;
}

/** An emit sent as a datagram (§7). */
export interface UnreliableEmitSpec extends EmitBase {
  readonly lane: 'unreliable';
  /** What it accepts on the WebSocket mapping (§7.6); without one, a WebSocket session is refused (§2). */
  readonly fallback?: 'newest';
}

/** A call (§3.2): always reliable, and always the client's to make, so it declares no direction. */
export interface CallSpec extends EventBase {
  readonly shape: 'returns' | 'yields';
  readonly lane: 'reliable';
  readonly from?: never;
  readonly fallback?: never;
  /** The codec of the returns or yields slot. */
  readonly result: SlotCodec;
  /** Checks a call's result or each streamed element; a failing one rejects WT_VALIDATION_FAILED. */
  readonly validateResult?: Validator;
  /** Reads a call's result or each streamed element as decode does; a refused one rejects WT_VALIDATION_FAILED. */
  readonly decodeResult?: Decoder;
}

/**
 * One event of a contract. Its type states every rule of an event's fields
 * (§3.2, §5.3, §7.6), so the compiler refuses a contract that breaks one.
 */
export type EventSpec = ReliableEmitSpec | UnreliableEmitSpec | CallSpec;

/** A decode hook: the parsed JSON value in, the typed value out, or it throws. */
export type Decoder = (value: unknown) => unknown;

/** A contract: its events, and optionally its name for messages. */
export interface Contract {
  readonly name?: string;
  readonly events: readonly EventSpec[];
}

/** An event as the engine indexes it: its spec, and what the engine reads of it on every message. */
export type CompiledEvent = EventSpec & {
  readonly payloadCodec: Codec;
  /** 0 for emits. */
  readonly resultCodec: Codec | 0;
  /** Whether the server may send it (an emit per its direction; never a call). */
  readonly sentByServer: boolean;
};

/** An indexed contract; immutable and shared by every session of a client. */
export interface CompiledContract {
  readonly name: string;
  readonly byId: ReadonlyMap<number, CompiledEvent>;
  readonly byName: ReadonlyMap<string, CompiledEvent>;
  /** The handshake event table (§4.3): the contract's events, in its order (each has a row's name, id and lane). */
  readonly table: readonly EventEntry[];
  /** The first unreliable event, in name order, with no fallback: a WebSocket session is refused naming it (§2, §7.6); '' when none. */
  readonly firstUndeclared: string;
}

/**
 * Indexes a contract for the engine (a client does so once, when it is
 * made). It checks nothing itself: the generator checks a .tio contract,
 * the compiler checks an EventSpec's fields, and a table the peer cannot
 * take (an id that is no u32 or is 0, a name or id twice) is refused by its
 * handshake reader (§4.3, §5.4), naming the events, as this package's
 * reader refuses the peer's.
 */
export function compileContract(c: Contract): CompiledContract {
  const byId = new Map<number, CompiledEvent>();
  const byName = new Map<string, CompiledEvent>();
  let firstUndeclared = '';
  for (const e of c.events) {
    const ev: CompiledEvent = {
      ...e,
      payloadCodec: e.payload === 'bytes' ? CodecBytes : CodecJson,
      resultCodec: e.result ? (e.result === 'bytes' ? CodecBytes : CodecJson) : 0,
      // A call declares no direction: the client makes every call, and the server sends an emit unless it is the client's.
      sentByServer: e.shape === 'emit' && e.from !== 'client',
    };
    byId.set(e.id, ev);
    byName.set(e.name, ev);
    if (e.lane === 'unreliable' && !e.fallback && (!firstUndeclared || e.name < firstUndeclared)) firstUndeclared = e.name;
  }
  // Every event, in the contract's order, so that the peer sees a name or id twice.
  return { name: c.name ?? 'contract', byId, byName, table: c.events, firstUndeclared };
}
