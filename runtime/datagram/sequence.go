package datagram

import (
	"sync"

	"github.com/transport-io/tiogen/runtime/wire"
)

// Sequencer numbers one origin's datagrams per event (§7.3): 1 first, then
// increasing, wrapping from 0xFFFFFFFF to 1. The zero value is ready; it is
// safe for concurrent use. It holds one counter per event sent, so its size
// is bounded by the contract's unreliable events.
type Sequencer struct {
	mu   sync.Mutex
	last map[uint32]uint32
}

// Next returns the sequence of the next datagram of eventID.
func (s *Sequencer) Next(eventID uint32) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last = make(map[uint32]uint32)
	}
	seq := wire.NextSeq(s.last[eventID])
	s.last[eventID] = seq
	return seq
}
