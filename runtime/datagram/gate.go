package datagram

import (
	"sync"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/wire"
)

// SequenceRetention is how long a receiver keeps the sequence state of an
// (origin, event) pair with no datagram for it (§7.3).
const SequenceRetention = 60 * time.Second

// GateCapacity is how many (origin, event) pairs a Gate from NewGate tracks.
// A receiving session sees one pair per sending peer and unreliable event,
// so this covers a room of thousands; a hostile peer spraying origins costs
// at most this many entries (about 1.5 MiB). When full, the pair seen least
// recently is evicted and counted: a late datagram of that pair is then
// accepted once more, a degradation the unreliable lane already permits
// (§7.5), never a corruption.
const GateCapacity = 16384

// Gate is a receiver's last-write-wins check (§7.3), keyed on (origin,
// event): a datagram whose sequence is not newer, circularly, than the
// newest accepted for its pair is rejected. Pair state is dropped after
// SequenceRetention with no datagram for the pair. It is safe for
// concurrent use and allocates nothing for a pair it already tracks.
type Gate struct {
	clk      clock.Clock
	base     time.Time
	capacity int

	mu      sync.Mutex
	index   map[uint64]int32
	entries []gateEntry
	free    []int32
	head    int32 // most recently seen, or -1
	tail    int32 // least recently seen, or -1
	evicted uint64
}

type gateEntry struct {
	key        uint64
	seq        uint32
	seen       time.Duration // since Gate.base
	prev, next int32         // towards head, towards tail; -1 at the ends
}

// NewGate returns a Gate that tracks up to GateCapacity pairs.
func NewGate(c clock.Clock) *Gate { return NewGateWithCapacity(c, GateCapacity) }

// NewGateWithCapacity returns a Gate that tracks up to pairs pairs (at
// least 1).
func NewGateWithCapacity(c clock.Clock, pairs int) *Gate {
	c = clock.Or(c)
	return &Gate{
		clk:      c,
		base:     c.Now(),
		capacity: max(pairs, 1),
		index:    make(map[uint64]int32),
		head:     -1,
		tail:     -1,
	}
}

// Accept reports whether a datagram with this origin, event and sequence is
// the newest of its pair and records it; false means stale or duplicate, to
// be discarded and counted as staleReceived. Any datagram of a pair,
// accepted or not, restarts the pair's retention.
func (g *Gate) Accept(origin, eventID, seq uint32) bool {
	now := g.clk.Now().Sub(g.base)
	key := uint64(origin)<<32 | uint64(eventID)
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.tail >= 0 && now-g.entries[g.tail].seen >= SequenceRetention {
		g.removeLocked(g.tail)
	}
	if i, ok := g.index[key]; ok {
		e := &g.entries[i]
		e.seen = now
		g.unlinkLocked(i)
		g.pushFrontLocked(i)
		if !wire.SeqNewer(seq, e.seq) {
			return false
		}
		e.seq = seq
		return true
	}
	if len(g.index) >= g.capacity {
		g.removeLocked(g.tail)
		g.evicted++
	}
	var i int32
	if n := len(g.free); n > 0 {
		i, g.free = g.free[n-1], g.free[:n-1]
	} else {
		i = int32(len(g.entries))
		g.entries = append(g.entries, gateEntry{})
	}
	g.entries[i] = gateEntry{key: key, seq: seq, seen: now}
	g.pushFrontLocked(i)
	g.index[key] = i
	return true
}

// Pairs reports how many pairs the gate holds state for, expired ones
// included until the next Accept sweeps them.
func (g *Gate) Pairs() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.index)
}

// Evicted reports how many pairs were dropped because the gate was full
// (not the ones that expired).
func (g *Gate) Evicted() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.evicted
}

func (g *Gate) removeLocked(i int32) {
	g.unlinkLocked(i)
	delete(g.index, g.entries[i].key)
	g.free = append(g.free, i)
}

func (g *Gate) unlinkLocked(i int32) {
	e := &g.entries[i]
	if e.prev >= 0 {
		g.entries[e.prev].next = e.next
	} else {
		g.head = e.next
	}
	if e.next >= 0 {
		g.entries[e.next].prev = e.prev
	} else {
		g.tail = e.prev
	}
	e.prev, e.next = -1, -1
}

func (g *Gate) pushFrontLocked(i int32) {
	e := &g.entries[i]
	e.prev, e.next = -1, g.head
	if g.head >= 0 {
		g.entries[g.head].prev = i
	}
	g.head = i
	if g.tail < 0 {
		g.tail = i
	}
}
