package tio

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/metrics"
	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

func newMetrics(t *testing.T) (*metrics.Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

// limitHits is tio_limit_hits_total{limit} as gathered.
func limitHits(t *testing.T, reg *prometheus.Registry, limit string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "tio_limit_hits_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == limit {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no series for limit %s", limit)
	return 0
}

// §4.1: the handshake deadline's hit is counted.
func TestSpec4_1_MetricsCountTheHandshakeDeadline(t *testing.T) {
	m, reg := newMetrics(t)
	fake := clock.NewFake()
	_, raw, _ := serveRaw(t, loopback.Options{}, ServerOptions{Metrics: m, Options: Options{Clock: fake}})
	raw.mustFrame()
	fake.Advance(DefaultHandshakeTimeout)
	wantClose(t, raw.conn, wire.CloseHandshakeTimeout, "5000 ms")
	if got := limitHits(t, reg, "handshake_timeout"); got != 1 {
		t.Fatalf("handshake_timeout hits %v, want 1", got)
	}
}

// §10.1: a call stream over MaxCalls is counted as it is reset.
func TestSpec10_1_MetricsCountTheCallLimit(t *testing.T) {
	m, reg := newMetrics(t)
	p := newPair(t, loopback.Options{}, ServerOptions{Metrics: m, Options: Options{MaxCalls: 1}}, Options{})
	errc := make(chan error, 1)
	go func() { _, err := p.client.Call(context.Background(), evHang, []byte(`1`)); errc <- err }()
	<-p.srv.hangs
	_, err := p.client.Call(context.Background(), evEcho, []byte(`1`))
	wantCode(t, err, wire.TooManyStreams)
	close(p.srv.release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if got := limitHits(t, reg, "max_calls"); got != 1 {
		t.Fatalf("max_calls hits %v, want 1", got)
	}
}

// §5.1: the per-session and per-server request byte bounds and the
// request deadline are counted when a request meets them.
func TestSpec5_1_MetricsCountTheRequestBounds(t *testing.T) {
	m, reg := newMetrics(t)
	ts, raw := handshakenWith(t, ServerOptions{Metrics: m, Options: Options{MaxRequestBytes: 4 << 20}})
	raw.partialCall(wire.MaxCallPayload, 3<<19)
	waitFor(t, "the first request to be buffered", func() bool { return ts.requestBytes.held.Load() >= 3<<19 })
	_, rd := raw.partialCall(wire.MaxCallPayload, 3<<19)
	wantCallError(t, rd, wire.PayloadTooLarge, "4194304 bytes")
	if got := limitHits(t, reg, "request_bytes"); got != 1 {
		t.Fatalf("request_bytes hits %v, want 1", got)
	}

	m2, reg2 := newMetrics(t)
	fake := clock.NewFake()
	_, raw2 := handshakenWith(t, ServerOptions{Metrics: m2, Options: Options{Clock: fake}})
	armed := fake.Pending()
	_, rd2 := raw2.partialCall(1024, 100)
	waitFor(t, "the request deadline to be armed", func() bool { return fake.Pending() > armed })
	fake.Advance(DefaultRequestTimeout + time.Millisecond)
	wantCallError(t, rd2, wire.Aborted, "did not arrive whole")
	if got := limitHits(t, reg2, "request_timeout"); got != 1 {
		t.Fatalf("request_timeout hits %v, want 1", got)
	}
}
