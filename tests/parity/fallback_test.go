package parity

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// quicGiveUp bounds a WebTransport dial that nothing answers over UDP: the
// transport's dial timeout, an option (the spec sets none).
const quicGiveUp = time.Second

// dialWithFallback runs endpoint.Dial from wtURL with the fallback to
// wsURL, the server's certificate trusted on both and session options
// session, and closes the client after the test.
func dialWithFallback(t *testing.T, s *server, wtURL, wsURL string, session tio.Options) (*tio.Client, endpoint.Report, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var rep endpoint.Report
	cl, err := endpoint.Dial(ctx, wtURL, parityContract, endpoint.DialOptions{
		CertHashes: [][32]byte{s.cert.SHA256}, DialTimeout: quicGiveUp, Session: session,
		WebSocketFallback: true, WebSocketURL: wsURL, Report: &rep,
	})
	if cl != nil {
		t.Cleanup(func() {
			_ = cl.Close(tio.NoError, "")
			_ = cl.Wait()
		})
	}
	return cl, rep, err
}

// onWebSocket checks a client that fell back: the emit lane works, a call
// fails locally (§3.3), and the server saw one WebSocket request.
func onWebSocket(t *testing.T, s *server, cl *tio.Client) {
	t.Helper()
	heard := listen(t, cl, evHeard)
	must(t, cl.Emit(evShout, []byte(`"over the fallback"`)))
	if got := next(t, heard, "an emit over the fallback"); got != `"over the fallback"` {
		t.Fatalf("heard %s", got)
	}
	_, err := cl.Call(context.Background(), evEcho, []byte(`{}`))
	wantErr(t, "a call over the fallback", err, wire.LaneUnavailable)
	if n := s.wsRequests.Load(); n != 1 {
		t.Fatalf("the WebSocket mapping saw %d requests, want 1", n)
	}
}

// udpBlockedFront is an origin whose HTTPS side relays to s and whose UDP
// port swallows every datagram: QUIC cannot get through, TCP can.
func udpBlockedFront(t *testing.T, s *server) string {
	t.Helper()
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		hole, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
		if err != nil { // the UDP port is taken: try another
			_ = ln.Close()
			continue
		}
		t.Cleanup(func() { _ = hole.Close() })
		return startTCPProxy(t, ln, s.addr()).addr()
	}
	t.Fatal("no port free on both TCP and UDP")
	return ""
}

// §10.3, §3.3: the QUIC handshake fails while the origin answers over
// HTTPS (WT_UDP_UNREACHABLE): the client dials the WebSocket URL and says
// why.
func TestSpec10_3_FallbackFromUnreachableUDP(t *testing.T) {
	s := startServer(t, serverConfig{})
	s.echoShouts()
	front := udpBlockedFront(t, s)
	cl, rep, err := dialWithFallback(t, s, webtransportMapping.url(front, ""), websocketMapping.url(front, ""), tio.Options{})
	if err != nil {
		t.Fatalf("endpoint.Dial: %v", err)
	}
	if rep.Mapping != transport.WebSocket || !rep.FellBack || wire.CodeOf(rep.Why) != wire.UDPUnreachable {
		t.Fatalf("report %+v, want the WebSocket because of WT_UDP_UNREACHABLE", rep)
	}
	onWebSocket(t, s, cl)
}

// §10.3: nothing answers at the WebTransport URL, over UDP or HTTPS
// (WT_HANDSHAKE_FAILED): the client dials the WebSocket URL.
func TestSpec10_3_FallbackWhenTheWebTransportOriginIsDown(t *testing.T) {
	s := startServer(t, serverConfig{})
	s.echoShouts()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String() // closed again: nothing listens there
	_ = ln.Close()
	cl, rep, err := dialWithFallback(t, s, webtransportMapping.url(down, ""), websocketMapping.url(s.addr(), ""), tio.Options{})
	if err != nil {
		t.Fatalf("endpoint.Dial: %v", err)
	}
	if rep.Mapping != transport.WebSocket || !rep.FellBack || wire.CodeOf(rep.Why) != wire.HandshakeFailed {
		t.Fatalf("report %+v, want the WebSocket because of WT_HANDSHAKE_FAILED", rep)
	}
	onWebSocket(t, s, cl)
}

// §4.1, §10.3: a WebTransport session that is established and never
// carries a handshake ends WT_HANDSHAKE_TIMEOUT, and the client falls back.
// The deadline is shortened through the session options (the default stays
// 5000 ms); the WebSocket session that follows runs with it too, so it is
// not cut to the bone.
func TestSpec4_1_FallbackAfterWebTransportHandshakeTimeout(t *testing.T) {
	s := startServer(t, serverConfig{holdWebTransport: true})
	s.echoShouts()
	cl, rep, err := dialWithFallback(t, s, webtransportMapping.url(s.addr(), ""), websocketMapping.url(s.addr(), ""),
		tio.Options{HandshakeTimeout: time.Second})
	if err != nil {
		t.Fatalf("endpoint.Dial: %v", err)
	}
	if rep.Mapping != transport.WebSocket || !rep.FellBack || wire.CodeOf(rep.Why) != wire.HandshakeTimeout {
		t.Fatalf("report %+v, want the WebSocket because of WT_HANDSHAKE_TIMEOUT", rep)
	}
	onWebSocket(t, s, cl)
}

// §4, §10.2: WT_UNAUTHORIZED is final: a refused client does not try the
// WebSocket, and the refusal reaches the caller with its reason.
func TestSpec4_NoFallbackOnRefusal(t *testing.T) {
	s := startServer(t, serverConfig{authorize: func(context.Context, *transport.Request) (any, error) {
		return nil, transport.Refuse("expired")
	}})
	cl, rep, err := dialWithFallback(t, s, webtransportMapping.url(s.addr(), ""), websocketMapping.url(s.addr(), ""), tio.Options{})
	if cl != nil {
		t.Fatal("a refused client got a session")
	}
	wantErr(t, "endpoint.Dial", err, wire.Unauthorized, "expired")
	if rep != (endpoint.Report{}) {
		t.Fatalf("report %+v, want no fallback", rep)
	}
	if n := s.wsRequests.Load(); n != 0 {
		t.Fatalf("the WebSocket mapping saw %d requests after a refusal, want 0", n)
	}
}

// Both mappings failing: the error says what each said.
func TestSpec10_3_BothMappingsFailing(t *testing.T) {
	s := startServer(t, serverConfig{authorize: func(context.Context, *transport.Request) (any, error) {
		return nil, transport.Refuse("expired")
	}})
	front := udpBlockedFront(t, s)
	_, rep, err := dialWithFallback(t, s, webtransportMapping.url(front, ""), websocketMapping.url(front, ""), tio.Options{})
	wantErr(t, "endpoint.Dial", err, wire.Unauthorized, "WT_UDP_UNREACHABLE", "expired", wire.UDPUnreachable.Remedy())
	if !rep.FellBack || rep.Mapping != 0 || wire.CodeOf(rep.Why) != wire.UDPUnreachable {
		t.Fatalf("report %+v", rep)
	}
	if n := s.wsRequests.Load(); n != 1 {
		t.Fatalf("the WebSocket mapping saw %d requests, want 1", n)
	}
}
