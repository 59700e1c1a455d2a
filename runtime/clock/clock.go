// Package clock lets the runtime's timers be injected, so tests drive the
// spec's deadlines (5000 ms handshake, 150 ms datagram TTL, 120 s origin
// quarantine, 15 s keepalive, 45 s idle) without waiting for them. The
// defaults everywhere are the real clock and the spec's values.
package clock

import "time"

// Clock is the time source of a runtime component.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed, unless
	// stopped first.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not started; it reports whether it
	// did.
	Stop() bool
	// Reset makes the timer fire d from now, whether or not it had fired or
	// been stopped.
	Reset(d time.Duration) bool
}

// Real is the wall clock.
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Or returns c, or Real when c is nil: options leave the clock unset by default.
func Or(c Clock) Clock {
	if c == nil {
		return Real
	}
	return c
}
