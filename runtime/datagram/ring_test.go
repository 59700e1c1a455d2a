package datagram

import (
	"fmt"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
)

func frame(i int) []byte { return []byte(fmt.Sprint(i)) }

func TestSpec9_RingDropsOldestAndCountsOverflow(t *testing.T) {
	r := NewRing(RingCapacity, RingTTL, clock.NewFake())
	for i := range RingCapacity + 10 {
		r.Push(frame(i))
	}
	if r.Len() != RingCapacity {
		t.Fatalf("Len() = %d, want %d", r.Len(), RingCapacity)
	}
	overflow, stale := r.Stats()
	if overflow != 10 || stale != 0 {
		t.Fatalf("Stats() = %d overflow, %d stale; want 10, 0", overflow, stale)
	}
	for i := 10; i < RingCapacity+10; i++ {
		b, ok := r.Pop()
		if !ok || string(b) != fmt.Sprint(i) {
			t.Fatalf("Pop = %q, %v; want %d: the oldest must go first", b, ok, i)
		}
	}
	if _, ok := r.Pop(); ok {
		t.Fatal("Pop on an empty ring returned an entry")
	}
}

func TestSpec9_StaleDroppedAtDequeue(t *testing.T) {
	clk := clock.NewFake()
	r := NewRing(RingCapacity, RingTTL, clk)
	r.Push(frame(1))
	r.Push(frame(2))
	clk.Advance(RingTTL / 2)
	r.Push(frame(3))
	clk.Advance(RingTTL / 2)
	// frame 1 and 2 are exactly 150 ms old: not older than the TTL.
	if b, ok := r.Pop(); !ok || string(b) != "1" {
		t.Fatalf("Pop = %q, %v; an entry exactly TTL old is kept", b, ok)
	}
	clk.Advance(time.Nanosecond)
	if b, ok := r.Pop(); !ok || string(b) != "3" {
		t.Fatalf("Pop = %q, %v; want 3 with 2 dropped as stale", b, ok)
	}
	overflow, stale := r.Stats()
	if overflow != 0 || stale != 1 {
		t.Fatalf("Stats() = %d overflow, %d stale; want 0, 1", overflow, stale)
	}
}

// The two causes are counted apart (§9).
func TestSpec9_OverflowAndStaleCountedSeparately(t *testing.T) {
	clk := clock.NewFake()
	r := NewRing(4, RingTTL, clk)
	for i := range 6 {
		r.Push(frame(i))
	}
	clk.Advance(RingTTL + time.Millisecond)
	if _, ok := r.Pop(); ok {
		t.Fatal("a stale entry was returned")
	}
	overflow, stale := r.Stats()
	if overflow != 2 || stale != 4 {
		t.Fatalf("Stats() = %d overflow, %d stale; want 2, 4", overflow, stale)
	}
}

func TestSpec9_RingDefaults(t *testing.T) {
	clk := clock.NewFake()
	r := NewRing(0, 0, clk)
	for i := range 100 {
		r.Push(frame(i))
	}
	if r.Len() != 64 {
		t.Fatalf("default capacity holds %d, want 64 (§9)", r.Len())
	}
	clk.Advance(150 * time.Millisecond)
	if _, ok := r.Pop(); !ok {
		t.Fatal("default TTL shorter than 150 ms")
	}
	clk.Advance(time.Nanosecond)
	if _, ok := r.Pop(); ok {
		t.Fatal("default TTL longer than 150 ms")
	}
}

func TestRingReadySignal(t *testing.T) {
	r := NewRing(4, RingTTL, clock.NewFake())
	select {
	case <-r.Ready():
		t.Fatal("Ready before any Push")
	default:
	}
	r.Push(frame(1))
	r.Push(frame(2))
	select {
	case <-r.Ready():
	default:
		t.Fatal("no Ready after Push")
	}
	select {
	case <-r.Ready():
		t.Fatal("a second signal for one batch; capacity must be 1")
	default:
	}
}

// A sender draining on Ready sees every entry pushed concurrently.
func TestRingConcurrentPushPop(t *testing.T) {
	r := NewRing(RingCapacity, time.Hour, clock.Real)
	const n = 10000
	done := make(chan struct{})
	go func() {
		for i := range n {
			r.Push(frame(i))
		}
		close(done)
	}()
	got := 0
	finished := false
	for !finished {
		select {
		case <-r.Ready():
		case <-done:
			finished = true
		}
		for {
			if _, ok := r.Pop(); !ok {
				break
			}
			got++
		}
	}
	overflow, stale := r.Stats()
	if uint64(got)+overflow != n || stale != 0 || r.Len() != 0 {
		t.Fatalf("popped %d + overflow %d != %d pushed (stale %d, left %d)", got, overflow, n, stale, r.Len())
	}
}

func BenchmarkRingPushPop(b *testing.B) {
	r := NewRing(RingCapacity, RingTTL, clock.Real)
	p := make([]byte, 100)
	b.ReportAllocs()
	for b.Loop() {
		r.Push(p)
		<-r.Ready()
		r.Pop()
	}
}

func BenchmarkRingPushOverflow(b *testing.B) {
	r := NewRing(RingCapacity, RingTTL, clock.Real)
	p := make([]byte, 100)
	b.ReportAllocs()
	for b.Loop() {
		r.Push(p)
	}
}

// TestRingHoldsNoSlotsUntilThePush: a session that never sends a datagram
// pays nothing for the §9 ring but the ring itself.
func TestRingHoldsNoSlotsUntilThePush(t *testing.T) {
	r := NewRing(RingCapacity, RingTTL, nil)
	if r.slots != nil {
		t.Fatal("a new ring holds its slots")
	}
	if _, ok := r.Pop(); ok {
		t.Fatal("Pop on a new ring returned an entry")
	}
	r.Push([]byte("x"))
	if len(r.slots) != RingCapacity {
		t.Fatalf("%d slots after the first Push, want %d", len(r.slots), RingCapacity)
	}
	if b, ok := r.Pop(); !ok || string(b) != "x" {
		t.Fatalf("Pop = %q, %v", b, ok)
	}
}
