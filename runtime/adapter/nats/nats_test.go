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

// newCluster joins nodes adapters to srv. The suite's cases run one after
// the other and close their nodes, so they share one Prefix and one
// ordinal bucket, made first: the server's goroutines for it then exist
// before any case counts goroutines.
func newCluster(t *testing.T, srv *natstest.Server, opts Options) adaptertest.NewCluster {
	opts.URL = srv.URL()
	opts.Prefix = fmt.Sprintf("c%d", prefixes.Add(1))
	first, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	return func(t *testing.T, nodes int) []adapter.Adapter {
		t.Helper()
		o := opts
		out := make([]adapter.Adapter, nodes)
		for i := range out {
			o.NodeID = fmt.Sprintf("node-%d", i)
			a, err := New(context.Background(), o)
			if err != nil {
				for _, made := range out[:i] {
					made.Close()
				}
				t.Fatalf("node %d: %v", i, err)
			}
			out[i] = a
		}
		return out
	}
}

// The suite runs against a real nats-server with JetStream, embedded; the
// server outlives each case, so the goroutine check counts the adapters'
// goroutines only.
var prefixes atomic.Int64

func TestConformance(t *testing.T) {
	srv := natstest.Start(t)
	adaptertest.Run(t, newCluster(t, srv, Options{}))
}

func TestOutages(t *testing.T) {
	srv := natstest.Start(t)
	adaptertest.RunOutages(t, newCluster(t, srv, Options{}), srv)
}

// A host restarted under the same node id starts a new sequence stream: its
// broadcasts are delivered, not dropped as already seen.
func TestRestartedHostWithSameNodeIDDelivered(t *testing.T) {
	srv := natstest.Start(t)
	o := Options{URL: srv.URL(), Prefix: "restart"}
	o.NodeID = "receiver"
	recv := mustNew(t, o)
	if err := recv.Join("r", "p"); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 16)
	defer recv.Subscribe(func(m adapter.Message) { got <- string(m.Frame) })()
	o.NodeID = "sender"
	for life, frames := range [][]string{{"first life 1", "first life 2"}, {"second life"}} {
		a, err := New(context.Background(), o) // the same id, a new process
		if err != nil {
			t.Fatal(err)
		}
		for _, frame := range frames {
			if err := a.Broadcast(context.Background(), adapter.Message{Room: "r", Lane: wire.Reliable, Frame: []byte(frame)}); err != nil {
				t.Fatal(err)
			}
			select {
			case m := <-got:
				if m != frame {
					t.Fatalf("received %q, want %q", m, frame)
				}
			case <-time.After(adaptertest.Arrival):
				t.Fatalf("life %d: %q never arrived", life+1, frame)
			}
		}
		a.Close()
	}
}
