package datagram

import (
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
)

func TestSpec7_3_LastWriteWins(t *testing.T) {
	g := NewGate(clock.NewFake())
	steps := []struct {
		seq  uint32
		want bool
	}{
		{5, true}, {5, false}, {4, false}, {6, true}, {9, true}, {7, false}, {10, true},
	}
	for _, s := range steps {
		if got := g.Accept(1, 100, s.seq); got != s.want {
			t.Fatalf("Accept(seq %d) = %v, want %v", s.seq, got, s.want)
		}
	}
}

func TestSpec7_3_DuplicatesDiscarded(t *testing.T) {
	g := NewGate(clock.NewFake())
	if !g.Accept(1, 1, 1) || g.Accept(1, 1, 1) {
		t.Fatal("a duplicate datagram was accepted; suppression is unconditional (§7.3)")
	}
}

// Keying on (origin, event) keeps every sender's stream independent: a
// newcomer starting at 1 is not stale against a peer at 3000 (§7.3).
func TestSpec7_3_KeyedOnOriginAndEvent(t *testing.T) {
	g := NewGate(clock.NewFake())
	if !g.Accept(1, 100, 3000) {
		t.Fatal("first datagram of a pair rejected")
	}
	if !g.Accept(2, 100, 1) {
		t.Fatal("another origin's sequence 1 rejected as stale against origin 1's 3000")
	}
	if !g.Accept(1, 200, 1) {
		t.Fatal("another event's sequence 1 rejected as stale against event 100's 3000")
	}
	if g.Accept(1, 100, 2999) {
		t.Fatal("older sequence of the original pair accepted")
	}
}

// A difference above 0x7FFFFFFF is wrap, not regression (§7.3).
func TestSpec7_3_CircularComparisonAcrossWrap(t *testing.T) {
	g := NewGate(clock.NewFake())
	if !g.Accept(9, 9, 0xFFFFFFFE) || !g.Accept(9, 9, 0xFFFFFFFF) {
		t.Fatal("ascending sequences rejected")
	}
	if !g.Accept(9, 9, 1) {
		t.Fatal("sequence 1 after 0xFFFFFFFF (the wrap) rejected")
	}
	if g.Accept(9, 9, 0xFFFFFFFF) {
		t.Fatal("0xFFFFFFFF after the wrap to 1 accepted as newer")
	}
	if !g.Accept(9, 9, 0x7FFFFFFF) {
		t.Fatal("a jump of 0x7FFFFFFE forward rejected")
	}
	if g.Accept(9, 9, 0x7FFFFFFF+0x80000000) {
		t.Fatal("a jump of exactly 0x80000000 read as progress")
	}
}

func TestSpec7_3_SequenceStateDroppedAfter60s(t *testing.T) {
	clk := clock.NewFake()
	g := NewGate(clk)
	g.Accept(1, 1, 500)
	clk.Advance(SequenceRetention - time.Nanosecond)
	if g.Accept(1, 1, 10) {
		t.Fatal("state dropped before 60 s with no datagram")
	}
	// That stale datagram was still a datagram of the pair: retention restarts.
	clk.Advance(SequenceRetention - time.Nanosecond)
	if g.Accept(1, 1, 10) {
		t.Fatal("state dropped 60 s after the first datagram despite a later one")
	}
	clk.Advance(SequenceRetention)
	if !g.Accept(1, 1, 10) {
		t.Fatal("after 60 s with no datagram the pair's state was kept (§7.3): a reused origin's sequence 10 was rejected")
	}
	if g.Pairs() != 1 {
		t.Fatalf("Pairs() = %d, want 1", g.Pairs())
	}
}

// Expired pairs are swept, so a receiver's state follows live traffic.
func TestSpec7_3_ExpiredPairsFreed(t *testing.T) {
	clk := clock.NewFake()
	g := NewGate(clk)
	for o := range uint32(1000) {
		g.Accept(o+1, 1, 1)
	}
	clk.Advance(SequenceRetention)
	g.Accept(5000, 1, 1)
	if g.Pairs() != 1 {
		t.Fatalf("Pairs() = %d after every other pair expired, want 1", g.Pairs())
	}
}

func TestGateBoundedEvictsLeastRecent(t *testing.T) {
	g := NewGateWithCapacity(clock.NewFake(), 3)
	g.Accept(1, 1, 10)
	g.Accept(2, 1, 10)
	g.Accept(3, 1, 10)
	g.Accept(1, 1, 11) // origin 1 is now the most recent; 2 the least
	g.Accept(4, 1, 10) // evicts 2
	if g.Pairs() != 3 || g.Evicted() != 1 {
		t.Fatalf("Pairs() = %d, Evicted() = %d; want 3, 1", g.Pairs(), g.Evicted())
	}
	if g.Accept(1, 1, 11) || g.Accept(3, 1, 10) {
		t.Fatal("state of a pair that was not the least recent was lost")
	}
	if !g.Accept(2, 1, 5) {
		t.Fatal("evicted pair's state survived")
	}
}

func TestGateDefaultCapacity(t *testing.T) {
	g := NewGate(clock.NewFake())
	for o := range uint32(GateCapacity + 10) {
		g.Accept(o+1, 7, 1)
	}
	if g.Pairs() != GateCapacity || g.Evicted() != 10 {
		t.Fatalf("Pairs() = %d, Evicted() = %d; want %d, 10", g.Pairs(), g.Evicted(), GateCapacity)
	}
}

func TestGateConcurrent(t *testing.T) {
	g := NewGate(clock.NewFake())
	accepted := make(chan int, 4)
	for w := range 4 {
		go func() {
			n := 0
			for seq := uint32(1); seq <= 1000; seq++ {
				if g.Accept(uint32(w%2)+1, 1, seq) {
					n++
				}
			}
			accepted <- n
		}()
	}
	total := 0
	for range 4 {
		total += <-accepted
	}
	// Two writers share each pair: every sequence is accepted at most once
	// per pair, and at least the last one.
	if total > 2000 || total < 2 {
		t.Fatalf("accepted %d datagrams across two pairs of 1000 sequences", total)
	}
}

func TestSpec7_3_SequencerStartsAt1AndWrapsTo1(t *testing.T) {
	var s Sequencer
	if s.Next(1) != 1 || s.Next(1) != 2 || s.Next(2) != 1 {
		t.Fatal("sequences do not start at 1 per event")
	}
	s.last[1] = 0xFFFFFFFE
	if got := s.Next(1); got != 0xFFFFFFFF {
		t.Fatalf("Next = %#x, want 0xFFFFFFFF", got)
	}
	if got := s.Next(1); got != 1 {
		t.Fatalf("after 0xFFFFFFFF Next = %#x, want 1 (never 0, §7.3)", got)
	}
}

func BenchmarkGateAccept(b *testing.B) {
	g := NewGate(clock.Real)
	b.ReportAllocs()
	seq := uint32(0)
	for b.Loop() {
		seq++
		g.Accept(42, 7, seq)
	}
}

func BenchmarkGateAccept1000Pairs(b *testing.B) {
	g := NewGate(clock.Real)
	b.ReportAllocs()
	seq := uint32(0)
	i := uint32(0)
	for b.Loop() {
		i++
		if i%1000 == 0 {
			seq++
		}
		g.Accept(i%1000+1, 7, seq+1)
	}
}
