package tio

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

// hangCalls starts n calls of evHang with ctx and waits for their handlers;
// it returns the handlers' contexts and the calls' errors as they end.
func hangCalls(t *testing.T, p *pairT, ctx context.Context, n int) ([]context.Context, chan error) {
	t.Helper()
	errc := make(chan error, n)
	for range n {
		go func() {
			_, err := p.client.Call(ctx, evHang, []byte(`1`))
			errc <- err
		}()
	}
	hctxs := make([]context.Context, n)
	for i := range hctxs {
		hctxs[i] = <-p.srv.hangs
	}
	return hctxs, errc
}

// wantAborted waits for n calls to end WT_ABORTED by the caller's
// cancellation, and for the handlers' contexts to end: the streams were
// abandoned (§8).
func wantAborted(t *testing.T, hctxs []context.Context, errc chan error) {
	t.Helper()
	for range hctxs {
		var err error
		select {
		case err = <-errc:
		case <-time.After(5 * time.Second):
			t.Fatal("a call went on after its caller cancelled")
		}
		wantCode(t, err, wire.Aborted)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%v does not wrap context.Canceled", err)
		}
	}
	for _, h := range hctxs {
		select {
		case <-h.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("a handler's context did not end after its caller cancelled")
		}
	}
}

// Calls in flight with the same context share one watch of it; cancelling
// it abandons every one of them (§8).
func TestSpec8_CallsSharingAContextAreAllAbandoned(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	hctxs, errc := hangCalls(t, p, ctx, 8)
	cancel()
	wantAborted(t, hctxs, errc)
}

// A context reused call after call stays watched between them, and a
// second context takes its place once the first has no call in flight: a
// cancel reaches the calls of whichever context it ends, and only those.
func TestSpec8_ReusedAndSuccessiveContextsAreWatched(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	first, cancelFirst := context.WithCancel(context.Background())
	for range 3 {
		if _, err := p.client.Call(first, evEcho, []byte(`1`)); err != nil {
			t.Fatal(err)
		}
	}
	hctxs, errc := hangCalls(t, p, first, 2)
	cancelFirst()
	wantAborted(t, hctxs, errc)

	// A call after its context ended fails at once, and the context's
	// end reaches no later call.
	if _, err := p.client.Call(first, evEcho, []byte(`1`)); err == nil {
		t.Fatal("a call with an ended context succeeded")
	}
	second, cancelSecond := context.WithCancel(context.Background())
	if _, err := p.client.Call(second, evEcho, []byte(`1`)); err != nil {
		t.Fatal(err)
	}
	hctxs, errc = hangCalls(t, p, second, 1)
	cancelSecond()
	wantAborted(t, hctxs, errc)
}

// A call whose context differs from the one whose calls are in flight is
// watched on its own: each cancel ends its own calls alone.
func TestSpec8_CallsWithDifferentContextsAreAbandonedApart(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	a, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	b, cancelB := context.WithCancel(context.Background())
	hctxA, errA := hangCalls(t, p, a, 2)
	hctxB, errB := hangCalls(t, p, b, 2)
	cancelB()
	wantAborted(t, hctxB, errB)
	for _, h := range hctxA {
		if h.Err() != nil {
			t.Fatal("cancelling one context ended a call made with another")
		}
	}
	cancelA()
	wantAborted(t, hctxA, errA)
}

// A context still watched when the session ends is let go of: cancelling
// it afterwards reaches nothing, and nothing of the session is left
// running (the leak check after the tests).
func TestSpec8_SessionEndLetsTheWatchedContextGo(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 2 {
		if _, err := p.client.Call(ctx, evEcho, []byte(`1`)); err != nil {
			t.Fatal(err)
		}
	}
	w := p.client.callWatch.Load()
	w.mu.Lock()
	watching := w.stop != nil
	w.mu.Unlock()
	if !watching {
		t.Fatal("a context reused by a second call is not watched between calls")
	}
	_ = p.client.Close(NoError, "test over")
	waitFor(t, "the watch to let the context go", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.ended && w.stop == nil && w.ctx == nil
	})
	cancel()
}
