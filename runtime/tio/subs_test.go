package tio

import (
	"slices"
	"sync"
	"testing"
)

// On's handlers run in subscription order, each event's alone; an
// unsubscribe removes its own handler only, once however often it is
// called, and a handler added after it is a new one.
func TestOnAndUnsubscribeKeepTheOthers(t *testing.T) {
	c := &Client{session: &session{contract: testContract}}
	var got []string
	on := func(event uint32, name string) func() {
		return c.On(event, func(b []byte) error { got = append(got, name+":"+string(b)); return nil })
	}
	deliver := func(event uint32, payload string) []string {
		t.Helper()
		got = nil
		ev, ok := testContract.Event(event)
		if !ok {
			t.Fatalf("no event %d", event)
		}
		if err := c.deliver(ev, []byte(payload)); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if g := deliver(evHeard, "0"); len(g) != 0 {
		t.Fatalf("no subscription yet: %v", g)
	}
	offA := on(evHeard, "a")
	offB := on(evHeard, "b")
	on(evSaid, "s")
	offA2 := on(evHeard, "a") // the same handler twice is two subscriptions
	if g := deliver(evHeard, "1"); !slices.Equal(g, []string{"a:1", "b:1", "a:1"}) {
		t.Fatalf("heard: %v", g)
	}
	if g := deliver(evSaid, "2"); !slices.Equal(g, []string{"s:2"}) {
		t.Fatalf("said: %v", g)
	}
	offA()
	offA()
	if g := deliver(evHeard, "3"); !slices.Equal(g, []string{"b:3", "a:3"}) {
		t.Fatalf("heard after one unsubscribe, called twice: %v", g)
	}
	offB()
	offA2()
	on(evHeard, "c")
	if g := deliver(evHeard, "4"); !slices.Equal(g, []string{"c:4"}) {
		t.Fatalf("heard after every earlier one left: %v", g)
	}
	if g := deliver(evSaid, "5"); !slices.Equal(g, []string{"s:5"}) {
		t.Fatalf("said, untouched: %v", g)
	}
}

// A delivery reads the subscriptions without a lock while On and its
// unsubscribe replace them: run under -race.
func TestDeliverWhileSubscribing(t *testing.T) {
	c := &Client{session: &session{contract: testContract}}
	ev, _ := testContract.Event(evHeard)
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 1000 {
			off := c.On(evHeard, func([]byte) error { return nil })
			c.On(evSaid, func([]byte) error { return nil })()
			off()
		}
	})
	for range 1000 {
		if err := c.deliver(ev, []byte("1")); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}
