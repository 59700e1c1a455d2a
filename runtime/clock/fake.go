package clock

import (
	"sort"
	"sync"
	"time"
)

// Fake is a manual clock for tests: time moves only when Advance is called,
// and timers due by then fire in deadline order.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	seq    uint64
}

// NewFake returns a fake clock starting at a fixed instant.
func NewFake() *Fake {
	return &Fake{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Now returns the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f for d after the fake now.
func (c *Fake) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, f: f}
	c.scheduleLocked(t, d)
	return t
}

// scheduleLocked sets t to fire d after now. A timer already due fires at
// once, as time.AfterFunc's does, rather than at the next Advance: code that
// arms a timer for a deadline the clock has reached must not wait for a
// test to move time again. c.mu is held.
func (c *Fake) scheduleLocked(t *fakeTimer, d time.Duration) {
	c.seq++
	t.when, t.seq = c.now.Add(d), c.seq
	if d <= 0 {
		t.active = false
		go t.f()
		return
	}
	t.active = true
	c.timers = append(c.timers, t)
}

// Advance moves time forward by d and runs, each in its own goroutine as
// time.AfterFunc would, every timer due by then. It returns once they have
// all been started; use Settle-style waits in the test for their effects.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	keep := c.timers[:0]
	for _, t := range c.timers {
		if t.active && !t.when.After(c.now) {
			t.active = false
			due = append(due, t)
		} else if t.active {
			keep = append(keep, t)
		}
	}
	c.timers = keep
	c.mu.Unlock()
	sort.Slice(due, func(i, j int) bool {
		if !due[i].when.Equal(due[j].when) {
			return due[i].when.Before(due[j].when)
		}
		return due[i].seq < due[j].seq
	})
	for _, t := range due {
		go t.f()
	}
}

// Pending reports how many timers are waiting to fire.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

type fakeTimer struct {
	c      *Fake
	f      func()
	when   time.Time
	seq    uint64
	active bool
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.active = false
	t.c.remove(t)
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.c.remove(t)
	t.c.scheduleLocked(t, d)
	return was
}

// remove drops t from the pending list; c.mu is held.
func (c *Fake) remove(t *fakeTimer) {
	for i, p := range c.timers {
		if p == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			return
		}
	}
}
