package webtransport

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/transport-io/tiogen/runtime/metrics"
)

// One remote address cannot hold more than MaxConnectionsPerAddress QUIC
// connections, half-open ones (no request yet) included: the next from the
// same IP, on another source port, is closed H3_EXCESSIVE_LOAD and counted;
// once one ends, the address may connect again.
func TestQUICConnectionsPerAddressAreBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	h := startServer(t, Options{MaxConnectionsPerAddress: 2, Metrics: m})
	first := rawQUIC(t, h)
	rawQUIC(t, h)
	waitFor(t, "two connections to be tracked", func() bool { return h.srv.conns.count() == 2 })
	ae := closedBy(t, rawQUIC(t, h))
	if ae.ErrorCode != quic.ApplicationErrorCode(http3.ErrCodeExcessiveLoad) || !strings.Contains(ae.ErrorMessage, "2 connections from this address") {
		t.Fatalf("closed with %#x %q", ae.ErrorCode, ae.ErrorMessage)
	}
	if got := refusals(t, reg, "max_connections_per_address"); got != 1 {
		t.Fatalf("%v refusals counted, want 1", got)
	}
	_ = first.CloseWithError(0, "")
	waitFor(t, "the closed connection to be forgotten", func() bool { return h.srv.conns.count() == 1 })
	again := rawQUIC(t, h)
	waitFor(t, "the new connection to be tracked", func() bool { return h.srv.conns.count() == 2 })
	select {
	case <-again.Context().Done():
		t.Fatalf("the address was refused after one of its connections ended: %v", again.Context().Err())
	default:
	}
}

func refusals(t *testing.T, reg *prometheus.Registry, reason string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "tio_refusals_total" {
			continue
		}
		for _, mt := range f.GetMetric() {
			var mapping, why string
			for _, l := range mt.GetLabel() {
				switch l.GetName() {
				case "mapping":
					mapping = l.GetValue()
				case "reason":
					why = l.GetValue()
				}
			}
			if mapping == "webtransport" && why == reason {
				return mt.GetCounter().GetValue()
			}
		}
	}
	return 0
}
