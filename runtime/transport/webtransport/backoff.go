package webtransport

import (
	"math/rand/v2"
	"time"

	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Backoff schedules reconnect attempts for a client session layer: each
// step doubles from Min up to Max, and the delay is drawn uniformly from the
// step's upper half, never below Min, so clients dropped together do not
// return together and every delay lies between Min and Max. The zero value
// is off: reconnecting happens only when asked for. Each reconnect is a new
// session (§11): call Dial again.
type Backoff struct {
	Min, Max time.Duration
	// Rand returns a number in [0, 1); default math/rand/v2.
	Rand func() float64

	attempt int
}

// Next returns the delay before the next attempt, or false when the backoff
// is off.
func (b *Backoff) Next() (time.Duration, bool) {
	if b.Min <= 0 || b.Max < b.Min {
		return 0, false
	}
	d := b.Max
	if b.attempt < 62 && b.Min<<b.attempt < b.Max && b.Min<<b.attempt > 0 {
		d = b.Min << b.attempt
	}
	b.attempt++
	r := b.Rand
	if r == nil {
		r = rand.Float64
	}
	lo := max(d/2, b.Min)
	return lo + time.Duration(r()*float64(d-lo)), true
}

// Reset starts the schedule over, after a session that was established.
func (b *Backoff) Reset() { b.attempt = 0 }

// Final reports whether a session that ended this way must not be
// reconnected: WT_UNAUTHORIZED is an answer about the request, and the same
// request would be refused again (§4).
func Final(info transport.CloseInfo) bool {
	return !info.Lost && info.Code == wire.CloseUnauthorized
}
