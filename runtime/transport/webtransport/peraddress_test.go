package webtransport

import (
	"strings"
	"testing"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/transport-io/tiogen/internal/scrape"
)

// One remote address cannot hold more than MaxConnectionsPerAddress QUIC
// connections, half-open ones (no request yet) included: the next from the
// same IP, on another source port, is closed H3_EXCESSIVE_LOAD and counted;
// once one ends, the address may connect again.
func TestQUICConnectionsPerAddressAreBounded(t *testing.T) {
	reg := scrape.Serve(t)
	h := startServer(t, Options{MaxConnectionsPerAddress: 2, Metrics: reg.Metrics})
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

// refusals is the scraped tio_refusals_total of the WebTransport mapping
// for reason.
func refusals(t *testing.T, reg *scrape.Endpoint, reason string) float64 {
	t.Helper()
	return reg.Value(t, "tio_refusals_total", "mapping", "webtransport", "reason", reason)
}
