package endpoint

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// fakeSession is a Session whose end the test decides.
type fakeSession struct {
	done   chan struct{}
	once   sync.Once
	err    error
	closed atomic.Pointer[string]
}

func newFakeSession() *fakeSession { return &fakeSession{done: make(chan struct{})} }

func (s *fakeSession) end(err error) {
	s.once.Do(func() {
		s.err = err
		close(s.done)
	})
}

func (s *fakeSession) Done() <-chan struct{} { return s.done }

func (s *fakeSession) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

func (s *fakeSession) Close(code tio.Code, reason string) error {
	s.closed.CompareAndSwap(nil, &reason)
	s.end(wire.Errorf(code, "%s", reason))
	return nil
}

func (s *fakeSession) Wait() error { <-s.done; return s.err }

// instantClock fires every wait at once and records its length: backoff
// without real waits.
type instantClock struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (c *instantClock) Now() time.Time { return time.Time{} }

func (c *instantClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	go f()
	return stoppedTimer{}
}

func (c *instantClock) recorded() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

type stoppedTimer struct{}

func (stoppedTimer) Stop() bool               { return false }
func (stoppedTimer) Reset(time.Duration) bool { return false }

var (
	errHandshake = wire.Errorf(wire.HandshakeFailed, "no route")
	errLost      = wire.Errorf(wire.NoError, "the connection was lost") // how a lost session ends (§11)
	errRefused   = wire.Errorf(wire.Unauthorized, "bad-token")
)

// script is a dial function that plays one outcome per call: an error, or
// a session that ends with the given error as soon as it is handed over.
type script struct {
	outcomes []error // nil: a session that is ended with errLost
	dials    int
	sessions []*fakeSession
}

func (sc *script) dial(context.Context) (*fakeSession, error) {
	i := sc.dials
	sc.dials++
	if i >= len(sc.outcomes) {
		return nil, errors.New("the script ran out")
	}
	if err := sc.outcomes[i]; err != nil {
		return nil, err
	}
	s := newFakeSession()
	sc.sessions = append(sc.sessions, s)
	return s, nil
}

// endAtOnce is a session function whose session is lost right away.
func endAtOnce(_ context.Context, s *fakeSession) error {
	s.end(errLost)
	return nil
}

func TestRunReconnectIsOffUnlessAsked(t *testing.T) {
	sc := &script{outcomes: []error{errHandshake, nil}}
	if err := Run(context.Background(), sc.dial, endAtOnce, Reconnect{}); err != errHandshake || sc.dials != 1 {
		t.Fatalf("dial failure: Run returned %v after %d dials, want the dial's error after 1", err, sc.dials)
	}
	sc = &script{outcomes: []error{nil, nil}}
	if err := Run(context.Background(), sc.dial, endAtOnce, Reconnect{}); err != errLost || sc.dials != 1 {
		t.Fatalf("lost session: Run returned %v after %d dials, want how the session ended after 1", err, sc.dials)
	}
}

// Jittered exponential backoff between a minimum and a maximum,
// starting over once a session was established.
func TestRunBackoffIsBoundedAndResetsAfterASession(t *testing.T) {
	const lo, hi = 100 * time.Millisecond, 800 * time.Millisecond
	for _, r := range []float64{0, 0.5, 0.999} {
		clk := &instantClock{}
		sc := &script{outcomes: []error{errHandshake, errHandshake, errHandshake, errHandshake, errHandshake, nil, errHandshake, errRefused}}
		var told []error
		err := Run(context.Background(), sc.dial, endAtOnce, Reconnect{Min: lo, Max: hi, Rand: func() float64 { return r }, Clock: clk,
			OnRetry: func(_ time.Duration, after error) { told = append(told, after) }})
		if err != errRefused {
			t.Fatalf("Run returned %v, want the final refusal", err)
		}
		// Steps 100, 200, 400, 800, 800 ms; after the session, 100 ms again.
		steps := []time.Duration{lo, 2 * lo, 4 * lo, hi, hi, lo, 2 * lo}
		waits := clk.recorded()
		if len(waits) != len(steps) {
			t.Fatalf("rand %v: %d waits %v, want %d", r, len(waits), waits, len(steps))
		}
		for i, w := range waits {
			if low := max(steps[i]/2, lo); w < low || w > steps[i] || w > hi {
				t.Fatalf("rand %v: wait %d is %v, want within [%v, %v]", r, i, w, low, steps[i])
			}
		}
		if told[5] != errLost || told[0] != errHandshake {
			t.Fatalf("OnRetry was told %v", told)
		}
	}
}

// §4: WT_UNAUTHORIZED is final, from a dial or as a session's close.
func TestSpec4_RunNeverReconnectsAfterUnauthorized(t *testing.T) {
	clk := &instantClock{}
	on := Reconnect{Min: time.Millisecond, Max: time.Second, Clock: clk}
	sc := &script{outcomes: []error{errRefused, nil}}
	if err := Run(context.Background(), sc.dial, endAtOnce, on); err != errRefused || sc.dials != 1 {
		t.Fatalf("refused dial: %v after %d dials", err, sc.dials)
	}
	sc = &script{outcomes: []error{nil, nil}}
	refusedLater := func(_ context.Context, s *fakeSession) error { s.end(errRefused); return nil }
	if err := Run(context.Background(), sc.dial, refusedLater, on); err != errRefused || sc.dials != 1 {
		t.Fatalf("session closed WT_UNAUTHORIZED: %v after %d dials", err, sc.dials)
	}
	if w := clk.recorded(); len(w) != 0 {
		t.Fatalf("waited %v before giving up", w)
	}
}

// The session function's context ends with its session; an error it
// returns while the session is up stops Run and closes the session.
func TestRunSessionContextAndApplicationStop(t *testing.T) {
	sc := &script{outcomes: []error{nil, nil}}
	clk := &instantClock{}
	appErr := errors.New("the application gave up")
	var calls int
	err := Run(context.Background(), sc.dial, func(ctx context.Context, s *fakeSession) error {
		calls++
		if calls == 1 {
			s.end(errLost)
			<-ctx.Done() // ends because the session ended
			return ctx.Err()
		}
		return appErr
	}, Reconnect{Min: time.Millisecond, Max: time.Millisecond, Clock: clk})
	if err != appErr || sc.dials != 2 {
		t.Fatalf("Run returned %v after %d dials, want the application's error after 2", err, sc.dials)
	}
	if r := sc.sessions[1].closed.Load(); r == nil || *r != ClosedByApplication || wire.CodeOf(sc.sessions[1].Err()) != wire.NoError {
		t.Fatalf("the second session was not closed WT_NO_ERROR by Run: %v", sc.sessions[1].Err())
	}
}

// Cancelling Run's context closes the open session and returns; a cancel
// during a backoff wait returns without another dial.
func TestRunStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	sc := &script{outcomes: []error{nil}}
	up := make(chan struct{})
	go func() { <-up; cancel() }()
	err := Run(ctx, sc.dial, func(context.Context, *fakeSession) error { close(up); return nil }, Reconnect{Min: time.Second, Max: time.Second})
	if !errors.Is(err, context.Canceled) || sc.sessions[0].closed.Load() == nil {
		t.Fatalf("Run returned %v; session closed: %v", err, sc.sessions[0].closed.Load() != nil)
	}

	ctx, cancel = context.WithCancel(context.Background())
	fake := clock.NewFake()
	sc = &script{outcomes: []error{errHandshake, errHandshake}}
	err = Run(ctx, sc.dial, endAtOnce, Reconnect{Min: time.Hour, Max: time.Hour, Clock: fake,
		OnRetry: func(time.Duration, error) { cancel() }})
	if !errors.Is(err, context.Canceled) || sc.dials != 1 {
		t.Fatalf("cancelled during the wait: %v after %d dials", err, sc.dials)
	}
}

// §11 over real transports: a lost connection ends the session, and Run
// reconnects with a new session — a new peer on the server, nothing
// resumed — which the session function sets up again.
func TestSpec11_RunReconnectsAfterALostConnectionWithANewSession(t *testing.T) {
	srv := newTestServer(t)
	l := listen(t, srv.Server, Options{})
	proxy := newTCPProxy(t, l.TCPAddr().String())
	ctx, cancel := context.WithCancel(testCtx(t))
	wsURL := "wss://" + proxy.addr() + "/echo"

	type setup struct {
		c    *tio.Client
		said <-chan string
	}
	sessions := make(chan setup)
	var after []error
	done := make(chan error)
	go func() {
		done <- Run(ctx, func(ctx context.Context) (*tio.Client, error) {
			return DialWebSocket(ctx, wsURL, contract, DialOptions{CertHashes: [][32]byte{cert(t).SHA256}})
		}, func(ctx context.Context, c *tio.Client) error {
			// Per-session state: subscriptions live on this client only.
			sessions <- setup{c, received(c, evSaid)}
			return nil
		}, Reconnect{Min: time.Second, Max: 30 * time.Second, Clock: &instantClock{},
			OnRetry: func(_ time.Duration, err error) { after = append(after, err) }})
	}()

	first := <-sessions
	p1 := srv.peer(t)
	proxy.cut()
	var end *tio.SessionEnd
	if err := first.c.Wait(); wire.CodeOf(err) != wire.NoError || !errors.As(err, &end) || !end.Lost {
		t.Fatalf("the lost session ended %v, want WT_NO_ERROR, lost (§11)", err)
	}
	second := <-sessions
	p2 := srv.peer(t)
	if p1.ID() == p2.ID() || first.c == second.c {
		t.Fatalf("the reconnect reused the session: peers %s and %s", p1.ID(), p2.ID())
	}
	<-p1.Done()
	if n := srv.Room("all").Members(); n != 1 {
		t.Fatalf("room has %d members after the reconnect, want only the new session", n)
	}
	if err := second.c.Emit(evSay, []byte("again")); err != nil {
		t.Fatal(err)
	}
	expectPayload(t, second.said, "again")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
	if len(after) != 1 || after[0] != first.c.Wait() {
		t.Fatalf("OnRetry was told %v, want the lost session's end", after)
	}
	if err := second.c.Err(); wire.CodeOf(err) != wire.NoError || !strings.Contains(err.Error(), ClosedByApplication) {
		t.Fatalf("the last session ended %v, want Run's WT_NO_ERROR close", err)
	}
}

// §4, §11 over WebTransport: a server close ends the session, pending calls
// reject WT_SESSION_CLOSED, Run reconnects, and the next refusal is final.
func TestSpec4_RunOverWebTransportStopsOnUnauthorized(t *testing.T) {
	srv := newTestServer(t)
	var asked atomic.Int32
	l := listen(t, srv.Server, Options{Authorize: func(context.Context, *transport.Request) (any, error) {
		if asked.Add(1) > 2 {
			return nil, transport.Refuse("revoked")
		}
		return nil, nil
	}})
	hanging := make(chan struct{}, 4)
	srv.HandleCall(evHang, func(ctx context.Context, _ *tio.Peer, _ []byte) ([]byte, error) {
		hanging <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ctx := testCtx(t)
	clk := &instantClock{}
	pending := make(chan error, 4)
	var dials atomic.Int32
	err := Run(ctx, func(ctx context.Context) (*tio.Client, error) {
		dials.Add(1)
		return Dial(ctx, l.URL(), contract, DialOptions{CertHashes: [][32]byte{cert(t).SHA256}})
	}, func(ctx context.Context, c *tio.Client) error {
		if resp, err := c.Call(ctx, evEcho, []byte("hi")); err != nil || string(resp) != "hi" {
			return err
		}
		call := make(chan error, 1)
		go func() {
			_, err := c.Call(ctx, evHang, []byte("wait"))
			call <- err
		}()
		select {
		case <-hanging:
		case err := <-call:
			return fmt.Errorf("the hang call returned before the close: %w", err)
		}
		srv.peer(t).Close(tio.NoError, "moving you")
		pending <- <-call
		return nil
	}, Reconnect{Min: time.Second, Max: time.Minute, Clock: clk})
	var te *tio.Error
	if !errors.As(err, &te) || te.Code != wire.Unauthorized || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("Run returned %v, want the final WT_UNAUTHORIZED", err)
	}
	if dials.Load() != 3 || len(clk.recorded()) != 2 {
		t.Fatalf("%d dials, waits %v; want 3 dials, 2 waits", dials.Load(), clk.recorded())
	}
	for range 2 {
		if err := <-pending; wire.CodeOf(err) != wire.SessionClosed {
			t.Fatalf("a call pending when the session closed: %v, want WT_SESSION_CLOSED (§11)", err)
		}
	}
}
