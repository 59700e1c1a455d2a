package webtransport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/transport-io/tiogen/internal/scrape"
	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/devcert"
)

// rawQUIC completes QUIC and HTTP/3's ALPN with the listener and sends no
// request at all: QUIC keeps it alive with pings.
func rawQUIC(t *testing.T, h *harness) *quic.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	qc, err := quic.DialAddr(ctx, h.srv.UDPAddr().String(), pinnedTLS(h.cert, http3.NextProtoH3),
		&quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true, KeepAlivePeriod: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = qc.CloseWithError(0, "") })
	return qc
}

func closedBy(t *testing.T, qc *quic.Conn) *quic.ApplicationError {
	t.Helper()
	select {
	case <-qc.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the listener did not close the connection")
	}
	var ae *quic.ApplicationError
	if err := context.Cause(qc.Context()); !errors.As(err, &ae) || !ae.Remote {
		t.Fatalf("closed with %v, want the listener's application close", err)
	}
	return ae
}

// A QUIC connection that never sends a whole HTTP/3 request is closed
// after RequestTimeout (10 s, injected clock), as the HTTPS side closes a
// half-open TCP connection, and counted; one that opened a session stays.
func TestQUICConnectionWithoutARequestIsClosed(t *testing.T) {
	fake := clock.NewFake()
	reg := scrape.Serve(t)
	h := startServer(t, Options{Clock: fake, Metrics: reg.Metrics})
	idle := rawQUIC(t, h)
	client, _ := h.pair()
	waitFor(t, "both connections to be tracked", func() bool { return h.srv.conns.count() == 2 })
	fake.Advance(DefaultRequestTimeout - time.Millisecond)
	select {
	case <-idle.Context().Done():
		t.Fatal("closed before the deadline")
	case <-time.After(20 * time.Millisecond):
	}
	fake.Advance(time.Millisecond)
	ae := closedBy(t, idle)
	if ae.ErrorCode != quic.ApplicationErrorCode(http3.ErrCodeNoError) || !strings.Contains(ae.ErrorMessage, "no request within 10000 ms") {
		t.Fatalf("closed with %#x %q", ae.ErrorCode, ae.ErrorMessage)
	}
	if got := refusals(t, reg, "no_request"); got != 1 {
		t.Fatalf("%v no_request refusals counted, want 1", got)
	}
	select {
	case <-client.Done():
		t.Fatalf("the session's connection was closed too: %+v", client.CloseInfo())
	case <-time.After(20 * time.Millisecond):
	}
	waitFor(t, "the closed connection to be forgotten", func() bool { return h.srv.conns.count() == 1 })
}

// A silent QUIC connection ends after the listener's IdleTimeout: the
// client asks for 30 s and sends no keep-alive, so only the listener's
// 300 ms (QUIC's own timer, not a spec deadline) can have ended it. The
// request deadline runs on the fake clock and never fires here.
func TestListenerIdleTimeoutEndsASilentConnection(t *testing.T) {
	h := startServer(t, Options{Clock: clock.NewFake(), IdleTimeout: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	qc, err := quic.DialAddr(ctx, h.srv.UDPAddr().String(), pinnedTLS(h.cert, http3.NextProtoH3),
		&quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true, MaxIdleTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer qc.CloseWithError(0, "")
	waitFor(t, "the connection to be tracked", func() bool { return h.srv.conns.count() == 1 })
	// waitFor gives up after 5 s, long before the default 30 s would end it.
	waitFor(t, "the silent connection to be dropped", func() bool { return h.srv.conns.count() == 0 })
}

// QUIC connections are bounded whether or not they carry sessions: past
// MaxConnections the next is closed H3_EXCESSIVE_LOAD at once, and counted.
func TestQUICConnectionLimit(t *testing.T) {
	reg := scrape.Serve(t)
	h := startServer(t, Options{MaxConnections: 2, Metrics: reg.Metrics})
	rawQUIC(t, h)
	rawQUIC(t, h)
	waitFor(t, "two connections to be tracked", func() bool { return h.srv.conns.count() == 2 })
	ae := closedBy(t, rawQUIC(t, h))
	if ae.ErrorCode != quic.ApplicationErrorCode(http3.ErrCodeExcessiveLoad) || !strings.Contains(ae.ErrorMessage, "2 connections") {
		t.Fatalf("closed with %#x %q", ae.ErrorCode, ae.ErrorMessage)
	}
	if got := refusals(t, reg, "max_connections"); got != 1 {
		t.Fatalf("%v max_connections refusals counted, want 1", got)
	}
}

func pinnedTLS(cert *devcert.Cert, protos ...string) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	return &tls.Config{RootCAs: pool, NextProtos: protos}
}

// waitFor polls cond for up to 5 s of wall time; it waits for goroutines,
// never for a deadline of the listener's (those run on the fake clock).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
