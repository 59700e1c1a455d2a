package latch

import (
	"sync"
	"testing"
	"time"
)

func closedNow(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// A Done taken before Fire is closed by it, one taken after is closed at
// once, and only the first Fire fires.
func TestDoneBeforeAndAfterFire(t *testing.T) {
	var l Latch
	if l.Fired() {
		t.Fatal("a zero latch reports fired")
	}
	before := l.Done()
	if closedNow(before) {
		t.Fatal("Done is closed before Fire")
	}
	if l.Done() != before {
		t.Fatal("two waiters before Fire got different channels")
	}
	if !l.Fire() {
		t.Fatal("the first Fire reports it did not fire")
	}
	if l.Fire() {
		t.Fatal("a second Fire reports it fired")
	}
	if !l.Fired() || !closedNow(before) || !closedNow(l.Done()) {
		t.Fatal("after Fire: not fired, or a channel still open")
	}
	if l.ch != nil {
		t.Fatal("a fired latch still holds its channel")
	}
}

// A latch nobody waited on makes no channel.
func TestFireWithoutWaiterMakesNoChannel(t *testing.T) {
	var l Latch
	l.Fire()
	if l.ch != nil || !closedNow(l.Done()) || l.ch != nil {
		t.Fatal("a latch fired without a waiter made a channel")
	}
}

// Waiters and fires racing (run under -race): every waiter wakes, one
// Fire fires.
func TestConcurrentWaitersAndFires(t *testing.T) {
	for range 100 {
		var l Latch
		var wg sync.WaitGroup
		var fired sync.Map
		for i := range 8 {
			wg.Go(func() {
				select {
				case <-l.Done():
				case <-time.After(5 * time.Second):
					t.Error("a waiter was not woken")
				}
			})
			wg.Go(func() {
				if l.Fire() {
					fired.Store(i, true)
				}
			})
		}
		wg.Wait()
		n := 0
		fired.Range(func(any, any) bool { n++; return true })
		if n != 1 {
			t.Fatalf("%d fires fired, want 1", n)
		}
	}
}
