package soak

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/transport-io/tiogen/internal/leakcheck"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/tio"
)

// A session that lives long holds nothing more for its age: on each
// mapping one session makes the soak's iterations (an emit broadcast to
// its room, a datagram relayed to it, and over WebTransport a returns call
// and, every fifth iteration, a 20-element yields call) one after another,
// to a second session in its room that receives them, and after a warm-up the live heap after GC grows by less than
// 64 B per iteration, with the goroutines back at their count before. A
// call's, stream's or frame's state kept until the session ends (a queue,
// map or slice growing with the session's age) keeps more than that.
// TIO_LONG_SESSION sets the iterations per mapping (2,000 by default, as
// make test runs it).
func TestLongSessionHoldsNothingPerIteration(t *testing.T) {
	iterations := 2000
	if n, err := strconv.Atoi(os.Getenv("TIO_LONG_SESSION")); err == nil && n > 0 {
		iterations = n
	}
	const perIteration = 64 // bytes
	leakcheck.Check(t, 10*time.Second)
	srv, err := newRoomServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	l, pin, shutdown := listen(t, srv, endpoint.Options{Path: "/long", Authorize: roomOfQuery})
	defer shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	for _, mp := range []struct {
		name   string
		overWT bool
		dial   func(query string) (*tio.Client, error)
	}{
		{"webtransport", true, func(query string) (*tio.Client, error) { return endpoint.Dial(ctx, l.URL()+query, contract, pin) }},
		{"websocket", false, func(query string) (*tio.Client, error) {
			return endpoint.DialWebSocket(ctx, l.WebSocketURL()+query, contract, pin)
		}},
	} {
		c, err := mp.dial("?room=" + mp.name)
		if err != nil {
			t.Fatalf("%s: %v", mp.name, err)
		}
		member, err := mp.dial("?room=" + mp.name)
		if err != nil {
			t.Fatalf("%s: %v", mp.name, err)
		}
		// The server joins a session to its room after the handshake
		// (OnSession): broadcasts before that miss the member.
		for deadline := time.Now().Add(10 * time.Second); srv.Room(mp.name).Members() < 2; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the sessions never joined their room", mp.name)
			}
		}
		said := make(chan struct{}, 1)
		member.On(evSaid, func([]byte) error { said <- struct{}{}; return nil })
		member.On(evPos, func([]byte) error { return nil })
		payload := make([]byte, 256)
		i := 0
		// run makes n iterations, each once the member received the last's
		// broadcast: paced like a session's life rather than a burst, and
		// none in flight when the heap is read.
		run := func(n int) {
			for range n {
				if err := iterate(ctx, c, mp.overWT, i, payload); err != nil {
					t.Fatalf("%s: %v", mp.name, err)
				}
				i++
				select {
				case <-said:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s: the broadcast of iteration %d never reached the room's other member", mp.name, i)
				}
			}
		}
		run(200) // warm-up: pools, buffers, the streams' credit
		before := read(time.Now())
		began := time.Now()
		run(iterations)
		took := time.Since(began)
		after, grew := grownPer(before, iterations, perIteration)
		t.Logf("%s: %d iterations in %v (%v each) in one session; live heap %+.1f B per iteration; goroutines %d before, %d after",
			mp.name, iterations, took.Round(time.Millisecond), (took / time.Duration(iterations)).Round(time.Microsecond), grew, before.goroutines, after.goroutines)
		if grew >= perIteration {
			t.Errorf("%s: the live heap grew %.1f B per iteration of one session, want under %d", mp.name, grew, perIteration)
		}
		if after.goroutines > before.goroutines {
			t.Errorf("%s: %d goroutines after the iterations, %d before", mp.name, after.goroutines, before.goroutines)
		}
		for _, c := range []*tio.Client{c, member} {
			if err := c.Close(tio.NoError, "done"); err != nil {
				t.Fatal(err)
			}
			var end *tio.SessionEnd
			if err := c.Wait(); !errors.As(err, &end) || !end.Normal() {
				t.Fatalf("%s: a session ended %v", mp.name, err)
			}
		}
	}
}
