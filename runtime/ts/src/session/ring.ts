// The per-peer datagram send ring of §9: 64 frames, the oldest dropped on
// overflow, entries older than the TTL dropped at dequeue, the two causes
// counted separately. Mirrors the Go runtime's datagram.Ring.

import type { Clock } from '../transport.js';

/** The datagram bound per peer (§9). */
export const RingCapacity = 64;
/** The default time-to-live of a queued datagram, in ms (§9). */
export const RingTTL = 150;

export class DatagramRing {
  readonly #slots: Array<Uint8Array | undefined>;
  readonly #at: Float64Array;
  #head = 0;
  #n = 0;
  /** Entries dropped oldest-first from the full ring. */
  overflowDropped = 0;
  /** Entries dropped at dequeue past their TTL (an entry exactly TTL old is still sent). */
  staleDropped = 0;

  readonly #clock: Clock;

  constructor(
    clock: Clock,
    readonly capacity = RingCapacity,
    readonly ttl = RingTTL,
  ) {
    this.#clock = clock;
    this.#slots = new Array<Uint8Array | undefined>(capacity);
    this.#at = new Float64Array(capacity);
  }

  get length(): number {
    return this.#n;
  }

  /** Queues b, which the ring holds until pop returns or drops it. */
  push(b: Uint8Array): void {
    const cap = this.capacity;
    if (this.#n === cap) {
      this.#slots[this.#head] = undefined;
      this.#head = (this.#head + 1) % cap;
      this.#n--;
      this.overflowDropped++;
    }
    const i = (this.#head + this.#n) % cap;
    this.#slots[i] = b;
    this.#at[i] = this.#clock.now();
    this.#n++;
  }

  /** The oldest entry no older than the TTL, dropping the older ones it passes; undefined when none is left. */
  pop(): Uint8Array | undefined {
    const now = this.#clock.now();
    while (this.#n > 0) {
      const i = this.#head;
      const b = this.#slots[i];
      this.#slots[i] = undefined;
      this.#head = (i + 1) % this.capacity;
      this.#n--;
      if (now - (this.#at[i] as number) > this.ttl) {
        this.staleDropped++;
        continue;
      }
      return b;
    }
    return undefined;
  }

  clear(): void {
    this.#slots.fill(undefined);
    this.#n = 0;
  }
}
