// The contract object the runtime consumes: the generator emits it, and a
// test can write one by hand. compileContract checks it as the Go runtime's
// tio.NewContract does and indexes it for the engine.

import { CodecJson, CodecBytes, type Codec } from './wire/frame.js';
import type { EventEntry, Lane } from './wire/handshake.js';

/** The shape of an event: fire-and-forget, or a call (§3.2). */
export type Shape = 'emit' | 'returns' | 'yields';
/** A slot's codec (§5.3): 'json' slots take and give JS values, 'bytes' slots Uint8Array. */
export type SlotCodec = 'json' | 'bytes';

/**
 * A validator hook, called on receive: it fails by throwing or by returning
 * false; any other result passes, and the decoded value is delivered as is.
 */
export type Validator = (value: unknown) => unknown;

/** One event of a contract. */
export interface EventSpec {
  readonly name: string;
  /** The event id (§5.4), computed by the generator: SHA-256(name)[0:4] big-endian, or the explicit id. */
  readonly id: number;
  readonly lane: Lane;
  /** Which side sends an emit; absent means either. Calls declare none (the client initiates them). */
  readonly from?: 'client' | 'server';
  readonly shape: Shape;
  /** The codec of the payload (of the request, for calls). */
  readonly payload: SlotCodec;
  /** The codec of the returns or yields slot; calls only. */
  readonly result?: SlotCodec;
  /** What an unreliable event accepts on the WebSocket mapping (§7.6). */
  readonly fallback?: 'newest';
  /** Checks a received emit's payload; a failing one is dropped and counted (validationDropped). */
  readonly validate?: Validator;
  /** Checks a call's result or each streamed element; a failing one rejects WT_VALIDATION_FAILED. */
  readonly validateResult?: Validator;
  /**
   * Reads a received payload (the value JSON.parse gave; a bytes slot's
   * Uint8Array) as the typed value handlers get, or throws (generated code throws a ValidationError
   * naming the field); a payload it refuses is dropped and counted
   * (validationDropped). Runs before validate.
   */
  readonly decode?: Decoder;
  /** Reads a call's result or each streamed element as decode does; a refused one rejects WT_VALIDATION_FAILED. */
  readonly decodeResult?: Decoder;
  /**
   * Writes a JSON payload (of the request, for calls) as the JSON text sent
   * as it is, in place of JSON.stringify, or throws: the emit or call then
   * throws WT_VALIDATION_FAILED and nothing is sent.
   */
  readonly encode?: (value: never) => string;
}

/** A decode hook: the parsed JSON value in, the typed value out, or it throws. */
export type Decoder = (value: unknown) => unknown;

/** A contract: its events, and optionally its name for messages. */
export interface Contract {
  readonly name?: string;
  readonly events: readonly EventSpec[];
}

/** An event as the engine indexes it. */
export interface CompiledEvent {
  readonly spec: EventSpec;
  readonly name: string;
  readonly id: number;
  readonly lane: Lane;
  readonly shape: Shape;
  readonly payloadCodec: Codec;
  /** 0 for emits. */
  readonly resultCodec: Codec | 0;
  /** Whether the client may send it (an emit per its direction; every call). */
  readonly sentByClient: boolean;
  /** Whether the server may send it (an emit per its direction; never a call). */
  readonly sentByServer: boolean;
}

/** A checked, indexed contract; immutable and shared by every session of a client. */
export interface CompiledContract {
  readonly name: string;
  readonly byId: ReadonlyMap<number, CompiledEvent>;
  readonly byName: ReadonlyMap<string, CompiledEvent>;
  /** The handshake event table (§4.3): the compiled events, in the contract's order (each has a row's name, id and lane). */
  readonly table: readonly EventEntry[];
  /** The first unreliable event, in name order, with no fallback: a WebSocket session is refused naming it (§2, §7.6); '' when none. */
  readonly firstUndeclared: string;
}

const compiled = new WeakMap<Contract, CompiledContract>();

/**
 * Checks and indexes a contract. Names and ids must be unique (§5.4); ids
 * are integers from 1 to 2^32-1; calls are reliable, declare no direction
 * and have a result slot; fallbacks belong to unreliable events. Throws a
 * TypeError naming the contract and the event otherwise.
 */
export function compileContract(c: Contract): CompiledContract {
  const done = compiled.get(c);
  if (done) return done;
  const name = c.name ?? 'contract';
  const byId = new Map<number, CompiledEvent>();
  const byName = new Map<string, CompiledEvent>();
  let firstUndeclared = '';
  for (const e of c.events) {
    const fail = (msg: string): never => {
      throw new TypeError(`contract ${name}: '${e.name}' ${msg}`);
    };
    // A field or slot holding a value it may not: named, and the value as JSON.
    const has = (field: keyof EventSpec): never => fail(`has ${field} ${JSON.stringify(e[field])}`);
    const codecOf = (slot: string, v: SlotCodec | undefined): Codec => (v === 'json' ? CodecJson : v === 'bytes' ? CodecBytes : fail(`has ${slot} ${JSON.stringify(v)}`));
    if (typeof e.name !== 'string' || !e.name) throw new TypeError(`contract ${name}: an event has no name`);
    // A u32 other than 0; anything but a number (a bigint, a symbol) is refused before >>> would throw.
    if (typeof e.id !== 'number' || e.id !== e.id >>> 0 || !e.id) fail(`has id ${String(e.id)}`);
    if (e.lane !== 'reliable' && e.lane !== 'unreliable') has('lane');
    const payloadCodec = codecOf('payload', e.payload);
    let resultCodec: Codec | 0 = 0;
    if (e.shape === 'emit') {
      if (e.result !== undefined) fail('is emit with a result');
    } else if (e.shape === 'returns' || e.shape === 'yields') {
      if (e.lane !== 'reliable') fail('is an unreliable call');
      if (e.from !== undefined) fail('is a call with from');
      resultCodec = codecOf(e.shape, e.result);
    } else {
      has('shape');
    }
    if (e.from !== undefined && e.from !== 'client' && e.from !== 'server') has('from');
    if (e.fallback !== undefined && e.fallback !== 'newest') has('fallback');
    // Past the check above a fallback is 'newest' or absent.
    if (e.fallback && e.lane === 'reliable') fail('is reliable with a fallback');
    if (byName.has(e.name)) fail('declared twice');
    if (byId.has(e.id)) fail(`shares id ${e.id} with '${byId.get(e.id)!.name}'`);
    const ev: CompiledEvent = {
      ...e,
      spec: e,
      payloadCodec,
      resultCodec,
      // A call declares no direction (refused above): the client sends every call.
      sentByClient: e.from !== 'server',
      sentByServer: e.shape === 'emit' && e.from !== 'client',
    };
    byId.set(e.id, ev);
    byName.set(e.name, ev);
    if (e.lane === 'unreliable' && e.fallback === undefined && (firstUndeclared === '' || e.name < firstUndeclared)) firstUndeclared = e.name;
  }
  // byName holds each event once, in the contract's order: the handshake's table.
  const out: CompiledContract = { name, byId, byName, table: [...byName.values()], firstUndeclared };
  compiled.set(c, out);
  return out;
}
