package datagram

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/wire"
)

func newAllocator(t *testing.T, ordinal uint16, c clock.Clock) *OriginAllocator {
	t.Helper()
	a, err := NewOriginAllocator(ordinal, c)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustAllocate(t *testing.T, a *OriginAllocator) uint32 {
	t.Helper()
	o, err := a.Allocate()
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestSpec7_3_OriginNeverZero(t *testing.T) {
	a := newAllocator(t, 0, clock.NewFake())
	for range 1000 {
		if o := mustAllocate(t, a); o == 0 {
			t.Fatal("allocated origin 0x00000000 (§7.3)")
		}
	}
}

func TestSpec7_3_OriginCarriesHostOrdinal(t *testing.T) {
	for _, ordinal := range []uint16{0, 1, 513, 1023} {
		a := newAllocator(t, ordinal, clock.NewFake())
		seen := map[uint32]bool{}
		for range 100 {
			o := mustAllocate(t, a)
			if o>>22 != uint32(ordinal) {
				t.Fatalf("ordinal %d: origin %#08x has %d in its high 10 bits", ordinal, o, o>>22)
			}
			if seen[o] {
				t.Fatalf("ordinal %d: origin %#08x issued twice while live", ordinal, o)
			}
			seen[o] = true
		}
	}
	if _, err := NewOriginAllocator(1024, clock.NewFake()); err == nil {
		t.Fatal("ordinal 1024 accepted; the partition has 10 bits (§7.3)")
	}
}

// Two hosts with distinct ordinals cannot issue the same origin (§7.3).
func TestSpec7_3_OriginsUniqueAcrossHosts(t *testing.T) {
	a, b := newAllocator(t, 1, clock.NewFake()), newAllocator(t, 2, clock.NewFake())
	seen := map[uint32]bool{}
	for range 5000 {
		for _, x := range []*OriginAllocator{a, b} {
			o := mustAllocate(t, x)
			if seen[o] {
				t.Fatalf("origin %#08x issued by two hosts", o)
			}
			seen[o] = true
		}
	}
}

func TestSpec7_3_QuarantineBeforeReuse(t *testing.T) {
	clk := clock.NewFake()
	a := newAllocator(t, 3, clk)
	released := mustAllocate(t, a)
	a.Release(released)
	a.Release(released) // a double release must not queue it twice
	clk.Advance(OriginQuarantine - time.Nanosecond)
	for range 100 {
		if o := mustAllocate(t, a); o == released {
			t.Fatalf("origin %#08x reissued %v after release, before the 120 s quarantine", o, OriginQuarantine-time.Nanosecond)
		}
	}
	clk.Advance(time.Nanosecond)
	if o := mustAllocate(t, a); o != released {
		t.Fatalf("after quarantine got %#08x, want the released %#08x reused first", o, released)
	}
	if o := mustAllocate(t, a); o == released {
		t.Fatal("a released origin was reissued twice")
	}
	if a.Quarantined() != 0 {
		t.Fatalf("Quarantined() = %d after reuse, want 0", a.Quarantined())
	}
}

func TestSpec7_3_ReleaseOfUnknownOriginIgnored(t *testing.T) {
	clk := clock.NewFake()
	a := newAllocator(t, 0, clk)
	a.Release(12345)
	a.Release(0)
	if a.Quarantined() != 0 {
		t.Fatalf("releasing origins never issued queued %d", a.Quarantined())
	}
}

// At exhaustion the allocator refuses with WT_TOO_MANY_STREAMS; it never
// wraps onto a live or quarantined origin (§7.3). The test jumps the counter
// to near its end rather than issuing four million origins.
func TestSpec7_3_ExhaustionRefusesRatherThanWraps(t *testing.T) {
	clk := clock.NewFake()
	a := newAllocator(t, 1023, clk)
	first := mustAllocate(t, a)
	a.next = maxCounter - 2
	for _, want := range []uint32{0xFFFFFFFD, 0xFFFFFFFE, 0xFFFFFFFF} {
		if o := mustAllocate(t, a); o != want {
			t.Fatalf("origin %#08x issued, want %#08x", o, want)
		}
	}
	_, err := a.Allocate()
	if !errors.Is(err, &wire.Error{Code: wire.TooManyStreams}) {
		t.Fatalf("allocation past the 22-bit counter: err = %v, want WT_TOO_MANY_STREAMS", err)
	}
	var we *wire.Error
	if !errors.As(err, &we) || we.Remedy == "" || !strings.Contains(we.Message, "exhausted") {
		t.Fatalf("exhaustion error %v lacks its explanation or a remedy", err)
	}
	a.Release(first)
	if _, err := a.Allocate(); err == nil {
		t.Fatal("a quarantined origin was issued at exhaustion")
	}
	clk.Advance(OriginQuarantine)
	if o := mustAllocate(t, a); o != first {
		t.Fatalf("after quarantine got %#08x, want %#08x", o, first)
	}
	if a.Live() != 4 {
		t.Fatalf("Live() = %d, want 4", a.Live())
	}
}

func TestOriginAllocatorConcurrent(t *testing.T) {
	a := newAllocator(t, 7, clock.NewFake())
	results := make(chan uint32, 800)
	done := make(chan struct{})
	for range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 100 {
				o, err := a.Allocate()
				if err != nil {
					t.Error(err)
					return
				}
				results <- o
			}
		}()
	}
	for range 8 {
		<-done
	}
	close(results)
	seen := map[uint32]bool{}
	for o := range results {
		if seen[o] {
			t.Fatalf("origin %#08x issued twice concurrently", o)
		}
		seen[o] = true
	}
}

// TestOriginBitmapGrowsWithTheCountersIssued: a host holds a bit per
// counter it issued, not the whole 22-bit space up front (§7.3).
func TestOriginBitmapGrowsWithTheCountersIssued(t *testing.T) {
	a, err := NewOriginAllocator(3, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []uint32
	for range 1000 {
		o, err := a.Allocate()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, o)
	}
	if words := len(a.live); words*64 < 1000 || words > 64 {
		t.Fatalf("%d bitmap words for 1000 origins", words)
	}
	for _, o := range got {
		a.Release(o)
		a.Release(o) // a double release does nothing
	}
	if n := a.Live(); n != 0 {
		t.Fatalf("%d live after releasing every origin", n)
	}
}
