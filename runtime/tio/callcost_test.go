package tio

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Heap allocations of one returns call, both ends, over loopback: the
// loopback transport's own (its pipes, stream values and buffered writes,
// 11), the handler's context (context.WithCancelCause, 2), the goroutine
// the responder starts (1), and the request's and the response's copies (2),
// each handed to code that may keep it. The §8 stop watch, the request
// deadline and the call's state cost none once their pools are warm, for a
// handler that returns within stopWatchDelay. A caller's context that can
// end costs nothing more when its calls reuse it (the session's callWatch
// registers with it once; it cost context.AfterFunc's two per call before);
// a new one per call adds what context.WithCancel makes (two),
// context.AfterFunc's own two and the map of children the registration
// makes in the new context (three), as before.
const (
	allocsPerCall           = 17
	allocsPerCancelableCall = allocsPerCall
	allocsPerNewContextCall = allocsPerCall + 2 + 2 + 3
)

func TestSpec3_2_ReturnsCallAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops one Put in four; make test-runtime runs this test without it")
	}
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	req := []byte(`{"text":"hello"}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		max  float64
	}{
		{"context that never ends", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }, allocsPerCall},
		{"cancelable context, reused", func() (context.Context, context.CancelFunc) { return ctx, func() {} }, allocsPerCancelableCall},
		{"a new cancelable context per call", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, allocsPerNewContextCall},
	} {
		call := func() {
			ctx, cancel := tc.ctx()
			defer cancel()
			if _, err := p.client.Call(ctx, evEcho, req); err != nil {
				t.Fatal(err)
			}
		}
		for range 100 {
			call() // warm the pools
		}
		n := testing.AllocsPerRun(2000, call)
		t.Logf("%s: %.2f allocations per call", tc.name, n)
		if n > tc.max {
			t.Errorf("%s: %.2f allocations per call, want at most %v", tc.name, n, tc.max)
		}
	}
}

// A returns call in flight costs the responder one goroutine, the one
// that runs its handler, and the initiator none beside its caller's: the
// §8 stop watch and the request deadline are callbacks, not goroutines.
func TestSpec8_ReturnsCallInFlightCostsOneResponderGoroutine(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	const calls = 32
	settle := func() int {
		// Counted once the figure holds still for a while: the stop watch's
		// timer runs its registration on a goroutine of its own, briefly.
		n := runtime.NumGoroutine()
		for stable := 0; stable < 20; {
			time.Sleep(5 * time.Millisecond)
			if m := runtime.NumGoroutine(); m == n {
				stable++
			} else {
				n, stable = m, 0
			}
		}
		return n
	}
	before := settle()
	errs := make(chan error, calls)
	for range calls {
		go func() {
			_, err := p.client.Call(context.Background(), evHang, []byte(`1`))
			errs <- err
		}()
	}
	for range calls {
		<-p.srv.hangs
	}
	// Past stopWatchDelay every call's stop watch is registered.
	time.Sleep(10 * stopWatchDelay)
	if got := settle() - before; got != 2*calls {
		t.Errorf("%d goroutines for %d calls in flight, want %d: each caller's and one responder goroutine per call", got, calls, 2*calls)
	}
	close(p.srv.release)
	for range calls {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// A stop that reaches the responder before its stop watch is registered is
// not lost: the watch is registered once the handler has run for
// stopWatchDelay on the session's clock, finds the stream stopped and
// cancels the handler then (§8).
func TestSpec8_StopBeforeTheStopWatchCancelsOnceItIsRegistered(t *testing.T) {
	fake := clock.NewFake()
	ts := newTestServer(t, ServerOptions{Options: Options{Clock: fake}})
	cconn, sconn, link := newStopPair()
	served := make(chan error, 1)
	go func() { served <- ts.Serve(sconn, nil) }()
	c, err := NewClient(context.Background(), cconn, testContract, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(NoError, ""); _ = c.Wait(); <-served }()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, evHang, []byte(`1`))
		errc <- err
	}()
	ns := <-link.accepted
	hctx := <-ts.hangs
	<-ns.eof
	cancel()
	wantCode(t, <-errc, Aborted)
	<-ns.stopped.ended.Done() // the initiator's stop has reached the responder's stream
	select {
	case <-hctx.Done():
		t.Fatalf("cancelled (%v) before the stop watch was registered", context.Cause(hctx))
	case <-time.After(50 * time.Millisecond):
	}
	fake.Advance(stopWatchDelay)
	select {
	case <-hctx.Done():
		if context.Cause(hctx) != errCallerStopped {
			t.Fatalf("cause %v", context.Cause(hctx))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the responder never abandoned the cancelled call")
	}
}

// The session's one call timer keeps every request's own deadline
// (RequestTimeout from when its stream is read, §6.2's request arriving
// whole): a request that started later is not cut short by an earlier
// one's, nor kept past its own, and the timer is stopped once the session
// ends.
func TestSpec6_2_EachRequestKeepsItsOwnDeadline(t *testing.T) {
	fake := clock.NewFake()
	ts, raw := handshakenWith(t, ServerOptions{Options: Options{Clock: fake}})
	armed := fake.Pending()
	_, first := raw.partialCall(wire.MaxCallPayload, 100)
	waitFor(t, "the first request's deadline to be set", func() bool { return fake.Pending() > armed })
	waitFor(t, "the first request to be read", func() bool { return onlyPeer(ts).activeCallsNow() == 1 })
	fake.Advance(DefaultRequestTimeout / 2)
	_, second := raw.partialCall(wire.MaxCallPayload, 100)
	waitFor(t, "the second request to be read", func() bool { return onlyPeer(ts).activeCallsNow() == 2 })
	time.Sleep(10 * time.Millisecond) // let its reader queue its deadline
	fake.Advance(DefaultRequestTimeout / 2)
	wantCallError(t, first, wire.Aborted, "120000 ms")
	waitFor(t, "the first call to end", func() bool { return onlyPeer(ts).activeCallsNow() == 1 })
	fake.Advance(DefaultRequestTimeout/2 - time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	if onlyPeer(ts).activeCallsNow() != 1 {
		t.Fatal("the second call ended before its deadline")
	}
	fake.Advance(time.Millisecond)
	wantCallError(t, second, wire.Aborted, "120000 ms")
	// A deadline still set when the session ends is stopped with it.
	before := fake.Pending()
	raw.partialCall(wire.MaxCallPayload, 100)
	waitFor(t, "the third request's deadline to be set", func() bool { return fake.Pending() > before })
	raw.conn.Close(0, "")
	waitFor(t, "the session's timers to be stopped", func() bool { return fake.Pending() == 0 })
}
