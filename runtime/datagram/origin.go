// Package datagram holds the state machines of the unreliable lane (§7, §9):
// origin allocation, the sender's sequence, the receiver's last-write-wins
// gate and the per-peer send ring. They are pure: no goroutines, no I/O, and
// every time comes from an injected clock.Clock.
package datagram

import (
	"fmt"
	"sync"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Origin layout (§7.3): a 10-bit host ordinal in the high bits and a 22-bit
// per-host counter in the low bits.
const (
	// HostOrdinals is the number of host ordinals, the stated limit of
	// 1,024 concurrent session hosts.
	HostOrdinals = 1 << 10
	// counterBits is the width of the per-host counter.
	counterBits = 22
	// maxCounter is the last counter value; counters start at 1, so
	// neither 0x00000000 nor any host's all-zero counter is ever issued.
	maxCounter = 1<<counterBits - 1
)

// OriginQuarantine is how long a released origin waits before it is issued
// again (§7.3): twice the 60 s receiver retention, so no sequence state for
// the old holder survives it.
const OriginQuarantine = 120 * time.Second

// OriginAllocator issues the origins of one session host (§7.3). It is
// safe for concurrent use.
type OriginAllocator struct {
	clk  clock.Clock
	host uint32 // ordinal << 22

	mu         sync.Mutex
	next       uint32   // next never-issued counter
	live       []uint64 // bit per counter issued so far: held by a session (at most 512 KiB, grown as counters are issued)
	liveCount  int
	quarantine []released // in release order, so oldest first
	qHead      int
}

type released struct {
	origin uint32
	at     time.Time
}

// NewOriginAllocator returns the allocator of the host with the given
// ordinal (from the adapter, §7.3), which must be below HostOrdinals.
func NewOriginAllocator(hostOrdinal uint16, c clock.Clock) (*OriginAllocator, error) {
	if hostOrdinal >= HostOrdinals {
		return nil, fmt.Errorf("datagram: host ordinal %d is outside the 10-bit origin partition, 0 to %d (§7.3)",
			hostOrdinal, HostOrdinals-1)
	}
	return &OriginAllocator{
		clk:  clock.Or(c),
		host: uint32(hostOrdinal) << counterBits,
		next: 1,
	}, nil
}

// Allocate issues an origin that no live session of this host holds and
// that was not released within OriginQuarantine. Quarantined origins that
// have served their time are reused before fresh counters, so the space in
// use stays near concurrent + churn × 120 s. When neither is available it
// fails with WT_TOO_MANY_STREAMS: the counter never wraps (§7.3).
func (a *OriginAllocator) Allocate() (uint32, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.qHead < len(a.quarantine) {
		r := a.quarantine[a.qHead]
		if a.clk.Now().Sub(r.at) >= OriginQuarantine {
			a.quarantine[a.qHead] = released{}
			a.qHead++
			if a.qHead == len(a.quarantine) {
				a.quarantine, a.qHead = a.quarantine[:0], 0
			}
			a.setLiveLocked(r.origin, true)
			return r.origin, nil
		}
	}
	if a.next > maxCounter {
		return 0, &wire.Error{
			Code: wire.TooManyStreams,
			Message: "this host's origin space is exhausted: all 4,194,303 datagram origins are held by live sessions " +
				"or quarantined for 120 s after release (§7.3)",
			Remedy: "Refuse or shed sessions on this host, spread them over more hosts, or wait for released origins to leave quarantine.",
		}
	}
	o := a.host | a.next
	a.next++
	a.setLiveLocked(o, true)
	return o, nil
}

// Release returns a live origin to the pool through quarantine. Releasing an
// origin that is not live does nothing, so a double release cannot put one
// origin in the pool twice.
func (a *OriginAllocator) Release(origin uint32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if origin&^maxCounter != a.host || !a.isLiveLocked(origin) {
		return
	}
	a.setLiveLocked(origin, false)
	if a.qHead > 0 && len(a.quarantine) == cap(a.quarantine) {
		n := copy(a.quarantine, a.quarantine[a.qHead:])
		clear(a.quarantine[n:])
		a.quarantine, a.qHead = a.quarantine[:n], 0
	}
	a.quarantine = append(a.quarantine, released{origin: origin, at: a.clk.Now()})
}

// Live reports how many origins are held by sessions.
func (a *OriginAllocator) Live() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.liveCount
}

// Quarantined reports how many released origins are waiting out the
// quarantine or waiting to be reused.
func (a *OriginAllocator) Quarantined() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.quarantine) - a.qHead
}

func (a *OriginAllocator) isLiveLocked(origin uint32) bool {
	c := origin & maxCounter
	return int(c/64) < len(a.live) && a.live[c/64]&(1<<(c%64)) != 0
}

func (a *OriginAllocator) setLiveLocked(origin uint32, live bool) {
	c := origin & maxCounter
	if live {
		if int(c/64) >= len(a.live) {
			// Doubling: a host with n live sessions holds about n bits.
			grow := min(max(int(c/64)+1-len(a.live), len(a.live)), (maxCounter+1)/64-len(a.live))
			a.live = append(a.live, make([]uint64, grow)...)
		}
		a.live[c/64] |= 1 << (c % 64)
		a.liveCount++
	} else {
		a.live[c/64] &^= 1 << (c % 64)
		a.liveCount--
	}
}
