package endpoint

import (
	"context"
	"sync"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Session is what Run needs of a client session. *tio.Client has it, and so
// does every generated Client, through the typed.ClientBase it embeds.
type Session interface {
	Done() <-chan struct{}
	Err() error
	Close(code tio.Code, reason string) error
	Wait() error
}

// Reconnect says whether and when Run dials again after a session ended or
// a dial failed. The zero value is off: Run returns instead.
type Reconnect struct {
	// Min and Max bound the backoff: each step doubles from Min up to Max
	// and the wait is drawn uniformly from the upper half of that step,
	// never below Min nor above Max, so clients dropped together do not
	// return together (webtransport.Backoff). The schedule starts over once a
	// session was established. Min 0, or Max below Min, turns reconnecting
	// off.
	Min, Max time.Duration
	// Rand returns a number in [0, 1) for the jitter; nil is math/rand/v2.
	Rand func() float64
	// Clock runs the waits; nil is the wall clock.
	Clock clock.Clock
	// OnRetry, when set, is told each wait before it starts and the error
	// it follows: the dial's, or how the last session ended.
	OnRetry func(wait time.Duration, after error)
}

// ClosedByApplication is the reason of the WT_NO_ERROR close Run sends when
// ctx ends or session returns an error while the session is up.
const ClosedByApplication = "closed by the application"

// Run keeps a client connected. It dials a session, hands it to session,
// and once the session has ended dials a new one after a backoff when
// reconnect is on. Every reconnect is a new session: nothing is resumed
// (§11) — rooms are not rejoined, calls pending on the old session failed
// with WT_SESSION_CLOSED, subscriptions were on the old client — so session
// re-establishes the application's state on each one.
//
// session runs with a context that ends with the session. It may return at
// once after setting up (Run then waits for the session to end) or block
// for the session's life. An error it returns while the session is still
// up stops Run: the session is closed WT_NO_ERROR and the error returned.
//
// Run never dials again after WT_UNAUTHORIZED, from a dial or a session's
// close (final, §4). It returns that error, the last dial error or how the
// last session ended when reconnecting is off, or ctx's error once ctx
// ends (an open session is then closed WT_NO_ERROR).
func Run[S Session](ctx context.Context, dial func(context.Context) (S, error), session func(context.Context, S) error, reconnect Reconnect) error {
	backoff := webtransport.Backoff{Min: reconnect.Min, Max: reconnect.Max, Rand: reconnect.Rand}
	clk := clock.Or(reconnect.Clock)
	for {
		s, err := dial(ctx)
		if err == nil {
			backoff.Reset()
			var stop bool
			if err, stop = serve(ctx, s, session); stop {
				return err
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if wire.CodeOf(err) == wire.Unauthorized {
			return err
		}
		wait, ok := backoff.Next()
		if !ok {
			return err
		}
		if reconnect.OnRetry != nil {
			reconnect.OnRetry(wait, err)
		}
		if !sleep(ctx, clk, wait) {
			return ctx.Err()
		}
	}
}

// serve runs session on s until s has ended and returns how it ended, or
// stop with the error Run returns.
func serve[S Session](ctx context.Context, s S, session func(context.Context, S) error) (ended error, stop bool) {
	sctx, cancel := context.WithCancel(ctx)
	var watch sync.WaitGroup
	watch.Go(func() {
		select {
		case <-s.Done():
			cancel()
		case <-sctx.Done():
		}
	})
	defer watch.Wait()
	defer cancel()

	err := session(sctx, s)
	if err != nil && !hasEnded(s) {
		_ = s.Close(tio.NoError, ClosedByApplication)
		_ = s.Wait()
		if ctx.Err() != nil {
			return ctx.Err(), true
		}
		return err, true
	}
	select {
	case <-s.Done():
	case <-ctx.Done():
		_ = s.Close(tio.NoError, ClosedByApplication)
	}
	_ = s.Wait()
	if ctx.Err() != nil {
		return ctx.Err(), true
	}
	return s.Err(), false
}

func hasEnded(s Session) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

// sleep waits d on clk; false when ctx ended first.
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	fired := make(chan struct{})
	t := clk.AfterFunc(d, func() { close(fired) })
	select {
	case <-fired:
		return true
	case <-ctx.Done():
		t.Stop()
		return false
	}
}
