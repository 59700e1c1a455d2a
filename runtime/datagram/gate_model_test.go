package datagram

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/wire"
)

// The Gate agrees with a plain model of §7.3 — a map of the newest sequence
// and last datagram time per pair — over random traffic and clock steps,
// while its capacity is not reached.
func TestSpec7_3_GateMatchesModel(t *testing.T) {
	type state struct {
		seq  uint32
		seen time.Duration
	}
	rng := rand.New(rand.NewPCG(7, 3))
	clk := clock.NewFake()
	g := NewGate(clk)
	model := map[uint64]state{}
	var now time.Duration
	for step := range 200000 {
		if rng.IntN(50) == 0 {
			d := time.Duration(rng.Int64N(int64(30 * time.Second)))
			clk.Advance(d)
			now += d
		}
		origin, event := uint32(rng.IntN(20)+1), uint32(rng.IntN(3)+1)
		seq := uint32(rng.IntN(40))
		if rng.IntN(100) == 0 {
			seq = 0xFFFFFFF0 + uint32(rng.IntN(16)) // near the wrap
		}
		key := uint64(origin)<<32 | uint64(event)
		s, ok := model[key]
		want := !ok || now-s.seen >= SequenceRetention || wire.SeqNewer(seq, s.seq)
		if want {
			s.seq = seq
		}
		s.seen = now
		model[key] = s
		if got := g.Accept(origin, event, seq); got != want {
			t.Fatalf("step %d: Accept(%d, %d, %d) = %v, model says %v", step, origin, event, seq, got, want)
		}
	}
	if g.Evicted() != 0 {
		t.Fatalf("Evicted() = %d below capacity", g.Evicted())
	}
}
