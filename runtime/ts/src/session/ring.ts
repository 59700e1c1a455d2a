// The per-peer datagram send ring of §9: 64 frames, the oldest dropped on
// overflow, entries older than the TTL dropped at dequeue, the two causes
// counted separately. Mirrors the Go runtime's datagram.Ring.

import type { Clock } from '../transport.js';

/** The datagram bound per peer (§9). */
export const RingCapacity = 64;
/** The default time-to-live of a queued datagram, in ms (§9). */
export const RingTTL = 150;

/** What a ring drops, counted. */
export interface RingDrops {
  /** Entries dropped oldest-first from the full ring. */
  overflowDropped: number;
  /** Entries dropped at dequeue past their TTL (an entry exactly TTL old is still sent). */
  staleDropped: number;
}

export class DatagramRing {
  // Oldest first, each entry with the time it was queued: at most 64, so a
  // shift costs little.
  #q: Array<[Uint8Array, number]> = [];
  readonly #clock: Clock;
  readonly #drops: RingDrops;

  /** A ring counting its drops in drops (the session's counters). */
  constructor(clock: Clock, drops: RingDrops) {
    this.#clock = clock;
    this.#drops = drops;
  }

  /** The oldest entry no older than the TTL, dropping the older ones it passes; undefined when none is left. */
  pop(): Uint8Array | undefined {
    const now = this.#clock.now();
    for (let e; (e = this.#q.shift()); ) {
      if (now - e[1] <= RingTTL) return e[0];
      this.#drops.staleDropped++;
    }
    return undefined;
  }

  /** Queues b, which the ring holds until pop returns or drops it. */
  push(b: Uint8Array): void {
    if (this.#q.push([b, this.#clock.now()]) > RingCapacity) {
      this.#q.shift();
      this.#drops.overflowDropped++;
    }
  }
}
