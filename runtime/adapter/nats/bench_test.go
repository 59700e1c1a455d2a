package nats

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	natsgo "github.com/nats-io/nats.go"

	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/adapter/nats/natstest"
	"github.com/transport-io/tiogen/runtime/wire"
)

// BenchmarkCrossHostBroadcast is one broadcast from one host reaching two
// others, one at a time (the paced pattern: each waits for both
// deliveries), through the adapter and, as the baseline, raw nats.go
// publish/subscribe on the same server; allocations are the whole
// process's, both ends.
func BenchmarkCrossHostBroadcast(b *testing.B) {
	srv := natstest.Start(b)
	frame := make([]byte, 100)
	b.Run("adapter", func(b *testing.B) {
		hosts := make([]*Adapter, 3)
		for i := range hosts {
			a, err := New(context.Background(), Options{URL: srv.URL(), NodeID: fmt.Sprintf("bench-%d", i), Prefix: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			hosts[i] = a
		}
		got := make(chan struct{}, 2)
		for i, a := range hosts[1:] {
			if err := a.Join("room", fmt.Sprintf("member-%d", i)); err != nil {
				b.Fatal(err)
			}
			defer a.Subscribe(func(adapter.Message) { got <- struct{}{} })()
		}
		m := adapter.Message{Room: "room", Lane: wire.Reliable, Frame: frame}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if err := hosts[0].Broadcast(context.Background(), m); err != nil {
				b.Fatal(err)
			}
			<-got
			<-got
		}
	})
	b.Run("raw", func(b *testing.B) {
		conns := make([]*natsgo.Conn, 3)
		for i := range conns {
			nc, err := natsgo.Connect(srv.URL())
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			conns[i] = nc
		}
		var n atomic.Int64
		got := make(chan struct{}, 2)
		for _, nc := range conns[1:] {
			if _, err := nc.Subscribe("raw", func(*natsgo.Msg) { n.Add(1); got <- struct{}{} }); err != nil {
				b.Fatal(err)
			}
			if err := nc.Flush(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if err := conns[0].Publish("raw", frame); err != nil {
				b.Fatal(err)
			}
			<-got
			<-got
		}
	})
}
