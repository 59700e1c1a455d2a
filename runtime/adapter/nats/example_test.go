package nats_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/adapter/nats"
	"github.com/transport-io/tiogen/runtime/adapter/nats/natstest"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Two session hosts behind one NATS server: each leases its own host
// ordinal, and a room's broadcast on one reaches the other's members. A
// server uses its adapter through tio.ServerOptions{Adapter: a}; here the
// adapters are driven directly to show what crosses between hosts.
func Example() {
	dir, err := os.MkdirTemp("", "nats-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	srv, err := natstest.New(dir, -1, natstest.MaxPayload) // a real nats-server with JetStream
	if err != nil {
		panic(err)
	}
	defer srv.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hostA, err := nats.New(ctx, nats.Options{URL: srv.URL(), NodeID: "host-a"})
	if err != nil {
		panic(err)
	}
	defer hostA.Close()
	hostB, err := nats.New(ctx, nats.Options{URL: srv.URL(), NodeID: "host-b"})
	if err != nil {
		panic(err)
	}
	defer hostB.Close()
	fmt.Println("distinct ordinals:", hostA.HostOrdinal() != hostB.HostOrdinal())

	got := make(chan adapter.Message, 1)
	stop := hostB.Subscribe(func(m adapter.Message) { got <- m })
	defer stop()
	if err := hostB.Join("lobby", "peer-on-b"); err != nil { // B now has a member in lobby
		panic(err)
	}
	frame := []byte("an encoded EMIT frame") // the engine's bytes, published as they are
	if err := hostA.Broadcast(ctx, adapter.Message{Room: "lobby", Lane: wire.Reliable, Frame: frame}); err != nil {
		panic(err)
	}
	m := <-got
	fmt.Printf("%s got %q in %s from %s\n", hostB.NodeID(), m.Frame, m.Room, m.Node)

	// Output:
	// distinct ordinals: true
	// host-b got "an encoded EMIT frame" in lobby from host-a
}
