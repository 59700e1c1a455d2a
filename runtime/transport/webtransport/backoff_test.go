package webtransport

import (
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

func TestBackoffIsOffUnlessAsked(t *testing.T) {
	var b Backoff
	if _, ok := b.Next(); ok {
		t.Fatal("the zero Backoff schedules a reconnect")
	}
}

func TestBackoffDoublesWithinMinMaxAndJitters(t *testing.T) {
	for _, r := range []float64{0, 0.5, 0.999} {
		b := Backoff{Min: 100 * time.Millisecond, Max: time.Second, Rand: func() float64 { return r }}
		want := []time.Duration{100, 200, 400, 800, 1000, 1000}
		for i, w := range want {
			w *= time.Millisecond
			d, ok := b.Next()
			lo := max(w/2, 100*time.Millisecond)
			if !ok || d < lo || d > w {
				t.Fatalf("rand %v, attempt %d: %v, want within [%v, %v]", r, i, d, lo, w)
			}
		}
		b.Reset()
		if d, _ := b.Next(); d > 100*time.Millisecond {
			t.Fatalf("after Reset: %v", d)
		}
	}
	// Jitter spreads clients: two draws differ.
	lo := Backoff{Min: time.Second, Max: 4 * time.Second, Rand: func() float64 { return 0 }}
	hi := Backoff{Min: time.Second, Max: 4 * time.Second, Rand: func() float64 { return 0.9 }}
	lo.Next()
	hi.Next()
	a, _ := lo.Next()
	c, _ := hi.Next()
	if a == c {
		t.Fatal("no jitter")
	}
	// Many attempts never overflow past Max.
	b := Backoff{Min: time.Millisecond, Max: time.Hour}
	for range 200 {
		if d, _ := b.Next(); d <= 0 || d > time.Hour {
			t.Fatalf("delay %v", d)
		}
	}
}

// §4: a client that reconnects on its own stops on WT_UNAUTHORIZED.
func TestSpec4_NoReconnectAfterUnauthorized(t *testing.T) {
	if !Final(transport.CloseInfo{Code: wire.CloseUnauthorized, Reason: "bad-token", Remote: true}) {
		t.Fatal("WT_UNAUTHORIZED is not final")
	}
	for _, info := range []transport.CloseInfo{{Lost: true}, {Code: wire.CloseNoError, Reason: transport.AuthorizeFailedReason, Remote: true}, {Code: wire.CloseIdleTimeout, Remote: true}} {
		if Final(info) {
			t.Fatalf("%+v is final", info)
		}
	}
}
