package endpoint

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/adapter/nats"
	"github.com/transport-io/tiogen/runtime/adapter/nats/natstest"
	"github.com/transport-io/tiogen/runtime/tio"
)

// natsHost is one server with its NATS adapter, listening on both
// mappings and counting on its own metrics endpoint; every session joins
// "arena".
type natsHost struct {
	*tio.Server
	reg *metricsEndpoint
	l   *Listener
}

func startNATSHost(t *testing.T, opts nats.Options) *natsHost {
	t.Helper()
	a, err := nats.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	h := &natsHost{reg: serveMetrics(t)}
	srv, err := tio.NewServer(contract, tio.ServerOptions{Adapter: a, Metrics: h.reg.Metrics, OnSession: func(p *tio.Peer) { _ = p.Join("arena") }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(); _ = a.Close() })
	h.Server = srv
	h.l = listen(t, srv, Options{})
	return h
}

func (h *natsHost) member(t *testing.T) *tio.Client {
	t.Helper()
	c, err := DialWebSocket(testCtx(t), h.l.WebSocketURL(), contract, DialOptions{CertHashes: [][32]byte{cert(t).SHA256}})
	if err != nil {
		t.Fatal(err)
	}
	c.On(evSaid, func([]byte) error { return nil })
	t.Cleanup(func() { _ = c.Close(tio.NoError, "done") })
	return c
}

func (h *natsHost) events(t *testing.T, kind string) float64 {
	t.Helper()
	return value(t, h.reg, "tio_adapter_events_total", "kind", kind)
}

// §7.3 over a real NATS server and real sessions: the adapter's events are
// counted by kind. An outage is a disconnected and a reconnected on each
// host; a broadcast host 0 made during it is a gap on host 1 (whose member
// is closed to resync); a host that cannot renew its ordinal lease is
// fenced.
func TestSpec7_3_MetricsCountTheAdaptersEvents(t *testing.T) {
	bus := natstest.Start(t)
	var hosts [2]*natsHost
	for i := range hosts {
		hosts[i] = startNATSHost(t, nats.Options{URL: bus.URL(), NodeID: fmt.Sprintf("host%d", i)})
	}
	hosts[0].member(t)
	remote := hosts[1].member(t)
	waitFor(t, "both members joined", func() bool {
		return hosts[0].Room("arena").Members() == 1 && hosts[1].Room("arena").Members() == 1
	})

	bus.Stop()
	for i, h := range hosts {
		waitFor(t, fmt.Sprintf("host %d's disconnection counted", i), func() bool { return h.events(t, "disconnected") == 1 })
	}
	if err := hosts[0].Room("arena").Emit(context.Background(), evSaid, []byte("during")); !errors.Is(err, adapter.ErrUnreachable) {
		t.Fatalf("a broadcast during the outage: %v, want adapter.ErrUnreachable", err)
	}
	bus.Start(t)
	for i, h := range hosts {
		waitFor(t, fmt.Sprintf("host %d's reconnection counted", i), func() bool { return h.events(t, "reconnected") == 1 })
	}
	for deadline := time.Now().Add(10 * time.Second); hosts[1].events(t, "gap") == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("host 1 counted no gap")
		}
		_ = hosts[0].Room("arena").Emit(context.Background(), evSaid, []byte("after"))
	}
	<-remote.Done()
	for i, h := range hosts {
		got := h.reg.Scrape(t)
		for kind, want := range map[string]float64{"disconnected": 1, "reconnected": 1, "gap": float64(i), "fenced": 0} {
			if v := got.Get("tio_adapter_events_total", "kind", kind); v != want {
				t.Errorf("host %d: %s events %v, want %v", i, kind, v, want)
			}
		}
	}

	fencedBus := natstest.Start(t)
	fenced := startNATSHost(t, nats.Options{URL: fencedBus.URL(), NodeID: "fenced", Prefix: "fenced",
		LeaseTTL: time.Second, Quarantine: 2 * time.Second, ShortQuarantineForTests: true})
	member := fenced.member(t)
	fencedBus.Stop()
	<-member.Done()
	waitFor(t, "the fenced host counted", func() bool { return fenced.events(t, "fenced") == 1 })
}
