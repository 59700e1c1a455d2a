// Package latch is a one-way signal whose channel exists only while
// something waits on it. A session holds several such signals (its end,
// its handshake, its release) for its whole life, and a channel costs 96
// bytes of heap: made for the first waiter and let go of once fired, an
// idle session whose signals nobody waits on holds none.
package latch

import (
	"sync"
	"sync/atomic"
)

// Latch fires once. Its zero value is ready and not fired; it must not be
// copied after first use.
type Latch struct {
	fired atomic.Bool
	mu    sync.Mutex
	ch    chan struct{} // made by the first Done before Fire; nil after it
}

// closed is the channel Done returns once a latch fired.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Fired reports whether Fire was called, without a lock.
func (l *Latch) Fired() bool { return l.fired.Load() }

// Done returns a channel that is closed once the latch fired.
func (l *Latch) Done() <-chan struct{} {
	if l.fired.Load() {
		return closed
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fired.Load() {
		return closed
	}
	if l.ch == nil {
		l.ch = make(chan struct{})
	}
	return l.ch
}

// Fire fires the latch, closing the channel of every Done before it; it
// reports whether this call fired it.
func (l *Latch) Fire() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fired.Load() {
		return false
	}
	l.fired.Store(true)
	if l.ch != nil {
		close(l.ch)
		l.ch = nil
	}
	return true
}
