// The client: sessions opened through a Connector, reconnected with a
// jittered backoff when asked, handlers kept across sessions, and a frozen
// snapshot for UI bindings (useSyncExternalStore and the like). Each
// reconnect is a new session: nothing is resumed (§11).

import { CloseNoError, SessionCode, type SessionCodeName } from './codes.js';
import { closedBy, describeError, never, outcomeWithin } from './connector.js';
import { compileContract, type CompiledContract, type Contract } from './contract.js';
import { protocolError, type RefusedError, TransportError } from './errors.js';
import { noStats, reportError, Session, type Handler, type Stats } from './session/session.js';
import type { Clock, Connector, Mapping } from './transport.js';

export type { Handler, Stats } from './session/session.js';

/** Where the client is (§11). */
export type Status = 'idle' | 'connecting' | 'connected' | 'closing' | 'closed';

/** What a UI shows of the client; frozen, and a new object only when something in it changed. */
export interface Snapshot {
  readonly status: Status;
  /** The client's rooms (§6.5), sorted, as the server's JOIN and LEAVE frames say. */
  readonly rooms: readonly string[];
  /** How the last session or attempt failed; null when none did. */
  readonly lastError: TransportError | null;
  /** The server's refusal at the door (WT_UNAUTHORIZED, §4); null unless refused. */
  readonly refused: { readonly reason: string } | null;
  /** The mapping carrying the session (§2, §3.3); null without one. */
  readonly transport: Mapping | null;
  /** Why the first mapping of a fallback was not used; null when it carries the session. */
  readonly fallbackReason: string | null;
}

export interface ReconnectOptions {
  /** The first backoff step, in ms; each step doubles up to maxMs. */
  readonly minMs: number;
  readonly maxMs: number;
  /** A number in [0, 1) for the jitter; Math.random by default. */
  readonly random?: () => number;
}

/**
 * The wait before reconnect attempt n (from 0): each step doubles from min
 * up to max, and the wait is drawn from the step's upper half, never below
 * min, so clients dropped together do not return together (as the Go
 * runtime's Backoff). Past attempt 1023, 2 ** attempt is Infinity, which
 * max still bounds (min is above 0).
 */
export function backoff(r: ReconnectOptions, attempt: number): number {
  const step = Math.min(r.maxMs, r.minMs * 2 ** attempt);
  const lo = Math.max(step / 2, r.minMs);
  return lo + (r.random ?? Math.random)() * (step - lo);
}

export interface ClientOptions {
  readonly contract: Contract;
  /** How sessions are opened: connectWebTransport(...), connectWebSocket(...), withFallback(...), or ./testing's memoryConnector. */
  readonly connect: Connector;
  /** Reconnect after a session ends or an attempt fails; off when absent. Never after WT_UNAUTHORIZED (§4). */
  readonly reconnect?: ReconnectOptions;
  /** The clock of every timer (handshake deadline, backoff, datagram TTL); the host's by default. */
  readonly clock?: Clock;
}

export interface CallOptions {
  /** Aborting resets the call's stream WT_ABORTED (§8) and rejects (or ends the loop) with WT_ABORTED. */
  readonly signal?: AbortSignal;
}

/** The host's clock. */
export const systemClock: Clock = {
  now: Date.now,
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

const noRooms: readonly string[] = Object.freeze([]);

/** One connect()…close() run of the client; stopping it aborts its signal, which abandons its attempt and its waits. */
class Run extends AbortController {
  /** The close the run was stopped with (its code and reason); undefined while it runs. */
  declare stopped: [code: number, reason: string] | undefined;
  /** What waits for a session (connect()'s promise, calls made while connecting): each gets the session established, or undefined and the error. */
  #waiters = new Set<(s: Session | undefined, e?: unknown) => void>();
  /** Settled by the first session established, or the first failure. */
  readonly first: Promise<void> = this.next().then(() => {});
  /** The client's loop of this run; resolves once it ended. */
  declare done: Promise<void> | undefined;

  /** Hands the session established, or undefined and the error, to everything waiting. */
  settle(s: Session | undefined, e?: unknown): void {
    for (const w of this.#waiters) w(s, e);
    this.#waiters.clear();
  }

  /** The next session established, for a call made while connecting. */
  next(signal?: AbortSignal): Promise<Session> {
    return new Promise<Session>((resolve, reject) => {
      const w = (s: Session | undefined, e?: unknown) => {
        signal?.removeEventListener('abort', onAbort);
        if (s) resolve(s);
        else reject(e);
      };
      // Called only by the signal, so there is one.
      const onAbort = () => {
        this.#waiters.delete(w);
        reject(new TransportError('WT_ABORTED', 'cancelled while connecting', { cause: signal!.reason, remedy: 'Nothing to do.' }));
      };
      this.#waiters.add(w);
      // A signal aborted already fires no more 'abort'.
      signal?.aborted ? onAbort() : signal?.addEventListener('abort', onAbort);
    });
  }
}

/**
 * A transport-io client. Constructing it does no I/O (safe in server-side
 * rendering); connect() opens the first session.
 */
export class Client {
  readonly #contract: CompiledContract;
  readonly #connector: Connector;
  /** The run in progress (one at a time); undefined when idle or closed. */
  #run: Run | undefined;
  readonly #clock: Clock;
  readonly #reconnect: ReconnectOptions | undefined;
  readonly #handlers = new Map<string, Set<Handler>>();

  #snapshot: Snapshot = Object.freeze({
    status: 'idle',
    rooms: noRooms,
    lastError: null,
    refused: null,
    transport: null,
    fallbackReason: null,
  });
  /** The last session: the current one until it ends (endError), whose counters stats() still reads. */
  #session: Session | undefined;
  readonly #listeners = new Set<() => void>();

  constructor(opts: ClientOptions) {
    this.#contract = compileContract(opts.contract);
    this.#connector = opts.connect;
    this.#clock = opts.clock ?? systemClock;
    const r = opts.reconnect;
    if (r && r.minMs > 0 && r.maxMs >= r.minMs) this.#reconnect = r;
  }

  /**
   * Opens a session and resolves once the server's handshake is accepted.
   * Idempotent: while connecting or connected it returns the same promise.
   * Rejects with how the attempt failed (a RefusedError for WT_UNAUTHORIZED);
   * with reconnect on, it keeps trying until a session is established, the
   * server refuses, or close() is called.
   */
  connect(): Promise<void> {
    let run = this.#run;
    if (!run || run.stopped) {
      run = this.#run = new Run();
      this.#update({ status: 'connecting', lastError: null, refused: null });
      run.done = this.#loop(run);
      // connect()'s caller may not await it (fire and forget); the error is in the snapshot too.
      run.first.catch(() => {});
    }
    return run.first;
  }

  /**
   * Ends the session with a §10.2 code (WT_NO_ERROR by default) and reason,
   * and stops reconnecting. Resolves once the session has ended.
   */
  async close(code: SessionCodeName | number = CloseNoError, reason = ''): Promise<void> {
    // A name's own number, else the number given; a name §10.2 lacks, or one
    // an object inherits ('toString'), is no number.
    const n: unknown = SessionCode[code as SessionCodeName] ?? code;
    if (typeof n !== 'number') throw protocolError(`${String(code)} is no close code`);
    const run = this.#run;
    if (!run) return;
    if (!run.stopped) {
      // The run stops: its attempt is abandoned, what waits for a session fails.
      run.stopped = [n, reason];
      run.abort();
      run.settle(undefined, new TransportError('WT_SESSION_CLOSED', 'client closed'));
    }
    if (this.#session && !this.#session.endError) {
      this.#update({ status: 'closing' });
      this.#session.close(n, reason);
    }
    // The run's loop ends after its session did.
    await run.done;
  }

  /**
   * Sends an event (§6.1, §7). Throws a TransportError: WT_UNKNOWN_EVENT,
   * WT_DATAGRAM_TOO_LARGE (nothing sent, §7.4), WT_PEER_TOO_SLOW (the queue
   * was full and the session closed, §9), WT_SESSION_CLOSED without a
   * session.
   */
  emit(name: string, payload: unknown): void {
    this.#current().emit(name, payload);
  }

  /**
   * Subscribes a handler to an event the server sends, on this session and
   * every later one; returns the function that unsubscribes it. Throws for
   * an event the client cannot receive.
   */
  on(name: string, handler: Handler): () => void {
    const ev = this.#contract.byName.get(name);
    if (!ev) throw new TypeError(`'${name}' is not in ${this.#contract.name}`);
    // Only an emit is sent by the server (a call never is).
    if (!ev.sentByServer) throw new TypeError(`'${name}' is no server emit`);
    const set = this.#handlers.get(name) ?? new Set<Handler>();
    // A wrapper per subscription, so one handler subscribed twice is two subscriptions.
    const sub: Handler = (v) => handler(v);
    this.#handlers.set(name, set.add(sub));
    return () => {
      set.delete(sub);
    };
  }

  /**
   * A returns call (§3.2). Waits for a session being connected; rejects
   * with the server's code and message for a CALL_ERROR (§6.4),
   * WT_VALIDATION_FAILED for a result its validator refuses, WT_ABORTED
   * after the signal, WT_SESSION_CLOSED when the session ends first (§11),
   * WT_LANE_UNAVAILABLE on the WebSocket mapping (§3.3).
   */
  async call(name: string, payload: unknown, opts: CallOptions = {}): Promise<unknown> {
    const s = await this.#ready(opts.signal);
    return s.call(name, payload, opts.signal);
  }

  /**
   * A yields call (§3.2): iterate it with for await. Credit is granted as
   * the loop consumes (§6.6); break, return() or the signal resets the
   * stream WT_ABORTED (§8). Nothing is sent until the loop starts.
   */
  async *stream(name: string, payload: unknown, opts: CallOptions = {}): AsyncGenerator<unknown, void, undefined> {
    yield* (await this.#ready(opts.signal)).stream(name, payload, opts.signal);
  }

  /** Calls listener whenever getSnapshot() changes; returns the function that unsubscribes it. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** The current snapshot: frozen, and the same object until something in it changes. */
  getSnapshot(): Snapshot {
    return this.#snapshot;
  }

  /** The current session's counters (the last session's once it ended). */
  stats(): Stats {
    return this.#session?.stats() ?? noStats;
  }

  // ---- internals ------------------------------------------------------

  #current(): Session {
    if (this.#session && !this.#session.endError) return this.#session;
    // How the last session ended, as the Go runtime says it, once one did.
    throw this.#session ? closedBy(this.#session.endError!) : new TransportError('WT_SESSION_CLOSED', `no session (${this.#snapshot.status})`);
  }

  #update(patch: Partial<Snapshot>): void {
    const cur = this.#snapshot;
    // Only what the patch names can differ; unchanged, the snapshot stays the same object.
    if (!(Object.keys(patch) as Array<keyof Snapshot>).some((k) => patch[k] !== cur[k])) return;
    this.#snapshot = Object.freeze({ ...cur, ...patch });
    // The listeners are the application's code: one that throws is reported
    // as an uncaught error would be, and neither stops the others nor is
    // taken for the peer's fault by the loop that read the frame.
    for (const l of [...this.#listeners]) {
      try {
        l();
      } catch (e) {
        reportError(e);
      }
    }
  }

  /** The session a call runs on: the current one, or the next one while connecting. */
  async #ready(signal: AbortSignal | undefined): Promise<Session> {
    const run = this.#run;
    return !run || run.stopped || (this.#session && !this.#session.endError) ? this.#current() : run.next(signal);
  }

  /** Dials sessions until stopped: every reconnect is a new session with the same handlers (§11). */
  async #loop(run: Run): Promise<void> {
    let attempt = 0;
    for (;;) {
      // Set unless stopped, which ends the loop before err is read.
      let err!: TransportError;
      let established = false;
      try {
        const ctx = { clock: this.#clock, signal: run.signal };
        let opened = await this.#connector.open(ctx);
        for (;;) {
          if (run.stopped) {
            opened.conn.close(...run.stopped);
            break;
          }
          // One session, run to its end.
          const s = new Session(opened.conn, this.#contract, this.#clock, this.#handlers, (rooms) => {
            if (this.#session === s) this.#update({ rooms });
          });
          this.#session = s;
          this.#update({ transport: opened.conn.mapping, fallbackReason: opened.fallbackReason, rooms: noRooms });
          try {
            await s.ready;
            established = true;
            attempt = 0;
            this.#update({ status: 'connected', lastError: null, refused: null });
            run.settle(s);
          } catch {
            // How it ended comes from s.ended below.
          }
          err = await s.ended;
          if (this.#session === s) this.#update({ rooms: noRooms, transport: null, fallbackReason: null });
          // A mapping that opened and never handshook falls back, if the connector can (§4.1).
          if (established || err.code !== 'WT_HANDSHAKE_TIMEOUT' || !opened.fallBack || run.stopped) break;
          opened = await opened.fallBack(err, ctx);
        }
      } catch (e) {
        // A connector rejects with a TransportError; anything else failed the handshake.
        err = e instanceof TransportError ? e : new TransportError('WT_HANDSHAKE_FAILED', describeError(e), { cause: e });
      }
      // A run another replaced was stopped first (connect() starts one only then).
      if (run.stopped) break;
      // A RefusedError has its reason; a WT_UNAUTHORIZED of another kind has none.
      const refused = err.code === 'WT_UNAUTHORIZED' ? { reason: (err as Partial<RefusedError>).reason ?? '' } : null;
      this.#update({ lastError: err, refused });
      // A refusal (WT_UNAUTHORIZED) is final (§4): the same request would be refused again.
      if (refused || !this.#reconnect) {
        run.settle(undefined, established ? closedBy(err) : err);
        break;
      }
      this.#update({ status: 'connecting' });
      // The stop aborts the run's signal, which ends the wait.
      if ((await outcomeWithin(this.#clock, backoff(this.#reconnect, attempt++), never, run.signal)) === 'aborted') break;
    }
    // Whatever waited for a session has its answer by now: a session, the
    // failure that ended the run, or the stop.
    if (this.#run === run) {
      this.#run = undefined;
      this.#update({ status: 'closed', rooms: noRooms, transport: null, fallbackReason: null });
    }
  }
}
