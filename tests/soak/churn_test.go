package soak

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/transport-io/tiogen/internal/leakcheck"
	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/tio"
)

// Churn: connect, handshake and close, cycle after cycle, on each mapping.
// After a warm-up, the live heap after GC grows by less than 512 bytes per
// cycle, and every goroutine ends. TIO_CHURN sets the cycles per mapping
// (by default, as make test runs it, 100 over WebTransport, whose close
// waits for its capsule's delivery, and 300 over WebSocket).
func TestChurnLeavesNothingBehind(t *testing.T) {
	cycles := map[string]int{"webtransport": 100, "websocket": 300}
	if n, err := strconv.Atoi(os.Getenv("TIO_CHURN")); err == nil && n > 0 {
		cycles = map[string]int{"webtransport": n, "websocket": n}
	}
	leakcheck.Check(t, 10*time.Second)
	cert, err := devcert.Mint(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := tio.NewServer(contract, tio.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	l, err := endpoint.Listen(srv, endpoint.Options{Addr: "127.0.0.1:0", Path: "/churn", Dev: cert})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := l.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	}()
	pin := endpoint.DialOptions{CertHashes: [][32]byte{cert.SHA256}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, mp := range []struct {
		name string
		dial func() (*tio.Client, error)
	}{
		{"webtransport", func() (*tio.Client, error) { return endpoint.Dial(ctx, l.URL(), contract, pin) }},
		{"websocket", func() (*tio.Client, error) { return endpoint.DialWebSocket(ctx, l.WebSocketURL(), contract, pin) }},
	} {
		cycle := func() {
			c, err := mp.dial()
			if err != nil {
				t.Fatalf("%s: %v", mp.name, err)
			}
			if err := c.Close(tio.NoError, "churn"); err != nil {
				t.Fatal(err)
			}
			var end *tio.SessionEnd
			if err := c.Wait(); !errors.As(err, &end) || !end.Normal() {
				t.Fatalf("%s: a session ended %v", mp.name, err)
			}
		}
		for range 50 {
			cycle()
		}
		before := read(time.Now())
		began := time.Now()
		n := cycles[mp.name]
		for range n {
			cycle()
		}
		took := time.Since(began)
		// The server's side of the last session may still be ending.
		var after sample
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			after = read(time.Now())
			if after.goroutines <= before.goroutines || time.Now().After(deadline) {
				break
			}
		}
		perCycle := (float64(after.heap) - float64(before.heap)) / float64(n)
		t.Logf("%s: %d cycles in %v (%v each); live heap %+.0f B per cycle; goroutines %d before, %d after",
			mp.name, n, took.Round(time.Millisecond), (took / time.Duration(n)).Round(time.Microsecond), perCycle, before.goroutines, after.goroutines)
		if perCycle >= 512 {
			t.Errorf("%s: the live heap grew %.0f B per cycle, want under 512", mp.name, perCycle)
		}
		if after.goroutines > before.goroutines {
			t.Errorf("%s: %d goroutines after the cycles, %d before", mp.name, after.goroutines, before.goroutines)
		}
	}
}
