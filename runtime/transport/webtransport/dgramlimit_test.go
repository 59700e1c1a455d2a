package webtransport

import (
	"bytes"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/wire"
)

func TestSpec7_4_DatagramLimitAtMostOneRefreshOld(t *testing.T) {
	fake := clock.NewFake()
	l := datagramLimit{clk: fake}
	probes := 0
	path := 1200
	probe := func() int { probes++; return path }
	// The fake clock runs a due timer on a goroutine of its own.
	advance := func(d time.Duration, expires bool) {
		t.Helper()
		fake.Advance(d)
		if !expires {
			return
		}
		deadline := time.Now().Add(5 * time.Second)
		for l.size.Load() != 0 {
			if time.Now().After(deadline) {
				t.Fatal("the cached limit did not expire")
			}
			time.Sleep(time.Millisecond)
		}
	}

	if n := l.get(probe); n != 1200 || probes != 1 {
		t.Fatalf("first get = %d after %d probes, want 1200 after 1", n, probes)
	}
	path = 1300 // path MTU discovery raised the limit
	advance(DatagramLimitRefresh-time.Nanosecond, false)
	if n := l.get(probe); n != 1200 || probes != 1 {
		t.Fatalf("get within the refresh bound = %d after %d probes, want the cached 1200", n, probes)
	}
	advance(time.Nanosecond, true)
	if n := l.get(probe); n != 1300 || probes != 2 {
		t.Fatalf("get at the refresh bound = %d after %d probes, want the path's 1300", n, probes)
	}
	// A size learnt from a refused send replaces the cached one at once and
	// lives no longer than the refresh bound of the size it replaced.
	advance(DatagramLimitRefresh/2, false)
	l.set(1100)
	if n := l.get(probe); n != 1100 || probes != 2 {
		t.Fatalf("get after set = %d after %d probes, want 1100 unprobed", n, probes)
	}
	advance(DatagramLimitRefresh/2, true)
	if n := l.get(probe); n != 1300 || probes != 3 {
		t.Fatalf("get past the bound = %d after %d probes, want a fresh probe", n, probes)
	}
	// Nothing cached and idle: no timer runs.
	advance(DatagramLimitRefresh, true)
	if p := fake.Pending(); p != 0 {
		t.Fatalf("%d timers pending with nothing cached", p)
	}
	// A transport that reports no limit is asked again next time.
	path = 0
	l.get(probe)
	l.get(probe)
	if probes != 5 || fake.Pending() != 0 {
		t.Fatalf("%d probes and %d timers, want no caching of a zero limit", probes, fake.Pending())
	}
}

func TestSpec7_4_RefusedDatagramRefreshesTheLimit(t *testing.T) {
	h := startServer(t, Options{})
	client, _ := h.pair()
	c := client.(*conn)
	pathLimit := c.probeDatagramLimit()
	if pathLimit < 1000 || pathLimit > 1500 {
		t.Fatalf("probe = %d, want a loopback QUIC figure between 1000 and 1500", pathLimit)
	}
	// A cached limit larger than the path's (as after an MTU drop) is
	// corrected by the first send quic-go refuses, not a refresh later.
	c.maxDatagram.set(4000)
	err := client.SendDatagram(bytes.Repeat([]byte{1}, 3000))
	wantCode(t, err, wire.DatagramTooLarge)
	if n := client.MaxDatagramSize(); n != pathLimit {
		t.Fatalf("MaxDatagramSize after a refused send = %d, want the path's %d", n, pathLimit)
	}
}

// BenchmarkMaxDatagramSize is the §7.4 check's cost per datagram: asking
// quic-go (what every send did before the cache) against the cached answer.
//
//	go test -run '^$' -bench MaxDatagramSize ./runtime/transport/webtransport/
func BenchmarkMaxDatagramSize(b *testing.B) {
	h := startServer(b, Options{})
	client, _ := h.pair()
	c := client.(*conn)
	b.Run("probe", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if c.probeDatagramLimit() == 0 {
				b.Fatal("no limit")
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if c.MaxDatagramSize() == 0 {
				b.Fatal("no limit")
			}
		}
	})
}
