package datagram

import (
	"sync"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
)

// Send-ring defaults (§9).
const (
	// RingCapacity is the datagram bound per peer: 64 frames.
	RingCapacity = 64
	// RingTTL is the default time-to-live of a queued datagram.
	RingTTL = 150 * time.Millisecond
)

// ProbeInterval is how often the server sends a probe datagram on each
// session as a liveness probe (§7.2).
const ProbeInterval = 15 * time.Second

// Ring is the per-peer datagram send queue of §9: bounded, it drops the
// oldest entry on overflow, and it drops entries older than the TTL when
// they are dequeued. The two causes are counted separately, as
// overflowDropped and staleDropped. It is safe for concurrent use, never
// blocks, and allocates its slots once, with the first Push: a session
// that never sends a datagram holds none.
type Ring struct {
	clk   clock.Clock
	base  time.Time
	ttl   time.Duration
	ready chan struct{}

	capacity int

	mu       sync.Mutex
	slots    []ringSlot // nil until the first Push
	head     int
	n        int
	overflow uint64
	stale    uint64
}

type ringSlot struct {
	b  []byte
	at time.Duration // since Ring.base
}

// NewRing returns a ring of capacity entries whose entries expire after
// ttl; capacity ≤ 0 means RingCapacity and ttl ≤ 0 means RingTTL.
func NewRing(capacity int, ttl time.Duration, c clock.Clock) *Ring {
	if capacity <= 0 {
		capacity = RingCapacity
	}
	if ttl <= 0 {
		ttl = RingTTL
	}
	c = clock.Or(c)
	return &Ring{
		clk:      c,
		base:     c.Now(),
		ttl:      ttl,
		ready:    make(chan struct{}, 1),
		capacity: capacity,
	}
}

// Push queues b, which the ring holds until Pop returns it or drops it; the
// caller must not change b after. A full ring first drops its oldest entry
// (overflowDropped).
func (r *Ring) Push(b []byte) {
	at := r.clk.Now().Sub(r.base)
	r.mu.Lock()
	if r.slots == nil {
		r.slots = make([]ringSlot, r.capacity)
	}
	if r.n == len(r.slots) {
		r.slots[r.head] = ringSlot{}
		r.head = (r.head + 1) % len(r.slots)
		r.n--
		r.overflow++
	}
	r.slots[(r.head+r.n)%len(r.slots)] = ringSlot{b: b, at: at}
	r.n++
	r.mu.Unlock()
	select {
	case r.ready <- struct{}{}:
	default:
	}
}

// Pop returns the oldest entry no older than the TTL, dropping the older
// ones it passes (staleDropped); ok is false when none is left.
func (r *Ring) Pop() (b []byte, ok bool) {
	now := r.clk.Now().Sub(r.base)
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.n > 0 {
		s := r.slots[r.head]
		r.slots[r.head] = ringSlot{}
		r.head = (r.head + 1) % len(r.slots)
		r.n--
		if now-s.at > r.ttl {
			r.stale++
			continue
		}
		return s.b, true
	}
	return nil, false
}

// Ready receives a value after a Push. A sender takes the signal first and
// then Pops until ok is false, so a Push racing the last Pop leaves a signal
// behind rather than an entry unseen.
func (r *Ring) Ready() <-chan struct{} { return r.ready }

// Len reports the entries queued, stale ones included until a Pop passes
// them.
func (r *Ring) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Stats reports the entries dropped on overflow and at dequeue for age.
func (r *Ring) Stats() (overflowDropped, staleDropped uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.overflow, r.stale
}
