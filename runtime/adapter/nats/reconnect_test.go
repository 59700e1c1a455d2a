package nats

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/adapter/adaptertest"
	"github.com/transport-io/tiogen/runtime/adapter/nats/natstest"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Reconnected means the restored room subscriptions are live on the
// server: a broadcast another host makes the moment it is reported reaches
// this host (§7.3: rooms span hosts again once the bus is back). nats.go
// reports a reconnection before the restored subscriptions have reached
// the server, so without a confirming round trip such a broadcast can be
// lost.
func TestSpec7_3_ReconnectedMeansSubscriptionsAreLive(t *testing.T) {
	srv := natstest.Start(t)
	o := Options{URL: srv.URL(), Prefix: "live"}
	o.NodeID = "receiver"
	recv := mustNew(t, o)
	if err := recv.Join("r", "p"); err != nil {
		t.Fatal(err)
	}
	o.NodeID = "sender"
	send := mustNew(t, o)
	got := make(chan string, 64)
	defer recv.Subscribe(func(m adapter.Message) { got <- string(m.Frame) })()
	sent := make(chan error, 64)
	var cycle atomic.Int64
	defer recv.Events(func(e adapter.Event) {
		if e.Kind != adapter.Reconnected {
			return
		}
		deadline := time.Now().Add(adaptertest.Arrival)
		for !send.Connected() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		sent <- send.Broadcast(context.Background(), adapter.Message{Room: "r", Lane: wire.Reliable, Frame: fmt.Appendf(nil, "after outage %d", cycle.Load())})
	})()
	for n := int64(1); n <= 20; n++ {
		cycle.Store(n)
		srv.Stop()
		for recv.Connected() || send.Connected() {
			time.Sleep(time.Millisecond)
		}
		srv.Start(t)
		if err := <-sent; err != nil {
			t.Fatalf("outage %d: the broadcast made as the receiver reported Reconnected: %v", n, err)
		}
		select {
		case m := <-got:
			if want := fmt.Sprintf("after outage %d", n); m != want {
				t.Fatalf("received %q, want %q", m, want)
			}
		case <-time.After(adaptertest.Arrival):
			t.Fatalf("outage %d: the broadcast made as the receiver reported Reconnected never arrived", n)
		}
	}
}
