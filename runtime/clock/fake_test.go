package clock

import (
	"sync/atomic"
	"testing"
	"time"
)

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestFakeFiresOnlyWhenDue(t *testing.T) {
	c := NewFake()
	var fired atomic.Int32
	c.AfterFunc(5*time.Second, func() { fired.Add(1) })
	c.Advance(4999 * time.Millisecond)
	if fired.Load() != 0 || c.Pending() != 1 {
		t.Fatalf("fired early: fired=%d pending=%d", fired.Load(), c.Pending())
	}
	c.Advance(time.Millisecond)
	waitFor(t, func() bool { return fired.Load() == 1 })
	if c.Pending() != 0 {
		t.Fatalf("pending after fire: %d", c.Pending())
	}
}

func TestFakeStopAndReset(t *testing.T) {
	c := NewFake()
	var fired atomic.Int32
	tm := c.AfterFunc(time.Second, func() { fired.Add(1) })
	if !tm.Stop() {
		t.Fatal("Stop of an active timer reported false")
	}
	c.Advance(2 * time.Second)
	if tm.Stop() {
		t.Fatal("Stop of a stopped timer reported true")
	}
	tm.Reset(time.Second)
	c.Advance(999 * time.Millisecond)
	if fired.Load() != 0 {
		t.Fatal("reset timer fired early")
	}
	c.Advance(time.Millisecond)
	waitFor(t, func() bool { return fired.Load() == 1 })
}

func TestOrDefaultsToReal(t *testing.T) {
	if Or(nil) != Real {
		t.Fatal("Or(nil) is not the real clock")
	}
	f := NewFake()
	if Or(f) != f {
		t.Fatal("Or(f) did not return f")
	}
}

// A timer armed for a deadline already reached fires at once, as
// time.AfterFunc's does, not at the next Advance.
func TestFakeTimerDueAtArmingFiresAtOnce(t *testing.T) {
	c := NewFake()
	var fired atomic.Int32
	c.AfterFunc(0, func() { fired.Add(1) })
	waitFor(t, func() bool { return fired.Load() == 1 })
	tm := c.AfterFunc(time.Hour, func() { fired.Add(1) })
	if was := tm.Reset(-time.Second); !was {
		t.Fatal("Reset of an active timer reported false")
	}
	waitFor(t, func() bool { return fired.Load() == 2 })
	if c.Pending() != 0 || tm.Stop() {
		t.Fatalf("a fired timer is still pending: %d", c.Pending())
	}
}
