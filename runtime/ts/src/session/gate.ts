// A receiver's last-write-wins check (§7.3), keyed on (origin, event): a
// datagram whose sequence is not newer, circularly, than the newest
// accepted for its pair is rejected. A pair's state is dropped after 60 s
// with no datagram for it; at most `capacity` pairs are held, the least
// recently seen evicted first. Mirrors the Go runtime's datagram.Gate.

import { seqNewer } from '../wire/datagram.js';
import type { Clock } from '../transport.js';
import { GateCapacity, SequenceRetention } from '../limits.js';

export { GateCapacity, SequenceRetention } from '../limits.js';

interface Entry {
  seq: number;
  seen: number;
}

export class SequenceGate {
  // Keyed "origin,event" (the pair does not fit one exact JS number), in
  // the order last seen: a Map iterates in insertion order, so the first
  // entry is the least recently seen.
  readonly #pairs = new Map<string, Entry>();
  readonly #clock: Clock;
  readonly #capacity: number;

  constructor(clock: Clock, capacity = GateCapacity) {
    this.#clock = clock;
    this.#capacity = capacity;
  }

  /**
   * Whether this datagram is the newest of its pair; records it. Any
   * datagram of a pair, accepted or not, restarts the pair's retention.
   */
  accept(origin: number, eventId: number, seq: number): boolean {
    const now = this.#clock.now();
    const pairs = this.#pairs;
    for (const [k, e] of pairs) {
      if (now - e.seen < SequenceRetention) break;
      pairs.delete(k);
    }
    const key = origin + ',' + eventId;
    // A pair seen again is set anew, last: the most recently seen.
    const e = pairs.get(key);
    if (e) pairs.delete(key);
    else if (pairs.size >= this.#capacity) pairs.delete(pairs.keys().next().value as string);
    const newer = !e || seqNewer(seq, e.seq);
    pairs.set(key, { seq: newer ? seq : e.seq, seen: now });
    return newer;
  }
}
