// A receiver's last-write-wins check (§7.3), keyed on (origin, event): a
// datagram whose sequence is not newer, circularly, than the newest
// accepted for its pair is rejected. A pair's state is dropped after 60 s
// with no datagram for it; at most `capacity` pairs are held, the least
// recently seen evicted first. Mirrors the Go runtime's datagram.Gate.

import { seqNewer } from '../wire/datagram.js';
import type { Clock } from '../transport.js';

/** How long a receiver keeps an (origin, event) pair's state with no datagram for it, in ms (§7.3). */
export const SequenceRetention = 60_000;
/** How many pairs a gate tracks (as the Go runtime's datagram.GateCapacity). */
export const GateCapacity = 16384;

interface Entry {
  origin: number;
  eventId: number;
  seq: number;
  seen: number;
  prev: Entry | undefined; // towards the most recently seen
  next: Entry | undefined; // towards the least recently seen
}

export class SequenceGate {
  // Keyed origin → event: the pair does not fit one exact JS number.
  readonly #index = new Map<number, Map<number, Entry>>();
  #size = 0;
  #head: Entry | undefined;
  #tail: Entry | undefined;
  /** Pairs dropped because the gate was full (not the ones that expired). */
  evicted = 0;

  constructor(
    private readonly clock: Clock,
    readonly capacity = GateCapacity,
  ) {}

  /** Pairs held now, expired ones included until the next accept sweeps them. */
  get pairs(): number {
    return this.#size;
  }

  /**
   * Whether this datagram is the newest of its pair; records it. Any
   * datagram of a pair, accepted or not, restarts the pair's retention.
   */
  accept(origin: number, eventId: number, seq: number): boolean {
    const now = this.clock.now();
    while (this.#tail !== undefined && now - this.#tail.seen >= SequenceRetention) this.#remove(this.#tail);
    const e = this.#index.get(origin)?.get(eventId);
    if (e !== undefined) {
      e.seen = now;
      this.#unlink(e);
      this.#pushFront(e);
      if (!seqNewer(seq, e.seq)) return false;
      e.seq = seq;
      return true;
    }
    if (this.#size >= this.capacity && this.#tail !== undefined) {
      this.#remove(this.#tail);
      this.evicted++;
    }
    const entry: Entry = { origin, eventId, seq, seen: now, prev: undefined, next: undefined };
    let byEvent = this.#index.get(origin);
    if (byEvent === undefined) {
      byEvent = new Map();
      this.#index.set(origin, byEvent);
    }
    byEvent.set(eventId, entry);
    this.#size++;
    this.#pushFront(entry);
    return true;
  }

  #remove(e: Entry): void {
    this.#unlink(e);
    const byEvent = this.#index.get(e.origin);
    if (byEvent !== undefined) {
      byEvent.delete(e.eventId);
      if (byEvent.size === 0) this.#index.delete(e.origin);
    }
    this.#size--;
  }

  #unlink(e: Entry): void {
    if (e.prev !== undefined) e.prev.next = e.next;
    else this.#head = e.next;
    if (e.next !== undefined) e.next.prev = e.prev;
    else this.#tail = e.prev;
    e.prev = e.next = undefined;
  }

  #pushFront(e: Entry): void {
    e.next = this.#head;
    if (this.#head !== undefined) this.#head.prev = e;
    this.#head = e;
    if (this.#tail === undefined) this.#tail = e;
  }
}
