package endpoint

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// §2, §10.3: the UDP path is blocked (nothing serves UDP at the address)
// while the HTTPS origin answers: WebTransport fails WT_UDP_UNREACHABLE, the
// client falls back to the WebSocket URL derived from the session URL, and
// the report says why.
func TestSpec10_3_FallbackFromUnreachableUDPToWebSocket(t *testing.T) {
	srv := newTestServer(t)
	l := listen(t, srv.Server, Options{})
	proxy := newTCPProxy(t, l.TCPAddr().String()) // TCP only: its UDP port is dead
	ctx := testCtx(t)

	var rep Report
	c, err := Dial(ctx, "https://"+proxy.addr()+"/echo?token=t", contract,
		DialOptions{CertHashes: [][32]byte{cert(t).SHA256}, DialTimeout: 500 * time.Millisecond, WebSocketFallback: true, Report: &rep})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Wait()
	defer c.Close(tio.NoError, "done")
	if rep.Mapping != transport.WebSocket || !rep.FellBack || wire.CodeOf(rep.Why) != wire.UDPUnreachable {
		t.Fatalf("report %+v, want the WebSocket after WT_UDP_UNREACHABLE", rep)
	}
	p := srv.peer(t)
	said := received(c, evSaid)
	if err := c.Emit(evSay, []byte("over the fallback")); err != nil {
		t.Fatal(err)
	}
	expectPayload(t, said, "over the fallback")
	if _, err := c.Call(ctx, evEcho, nil); wire.CodeOf(err) != wire.LaneUnavailable {
		t.Fatalf("call after the fallback: %v, want WT_LANE_UNAVAILABLE", err)
	}
	if p.Err() != nil {
		t.Fatalf("the session ended after a call on the WebSocket: %v", p.Err())
	}
}

// §4, §10.3: a refusal (1007) over WebTransport is the server's answer; the
// WebSocket is not tried.
func TestSpec4_NoFallbackOnRefusal(t *testing.T) {
	srv := newTestServer(t)
	var asked atomic.Int32
	l := listen(t, srv.Server, Options{Authorize: func(context.Context, *transport.Request) (any, error) {
		asked.Add(1)
		return nil, transport.Refuse("expired")
	}})
	ctx := testCtx(t)

	rep := Report{Mapping: transport.WebTransport} // Dial must overwrite it
	_, err := Dial(ctx, l.URL(), contract, DialOptions{CertHashes: [][32]byte{cert(t).SHA256}, WebSocketFallback: true, Report: &rep})
	var te *tio.Error
	if !errors.As(err, &te) || te.Code != wire.Unauthorized {
		t.Fatalf("refused dial: %v, want WT_UNAUTHORIZED", err)
	}
	if rep != (Report{}) {
		t.Fatalf("report %+v, want no mapping and no fallback", rep)
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("authorize asked %d times: the WebSocket was tried after a refusal", n)
	}
}

// Without WebSocketFallback a WebTransport failure is returned as it
// is, even one the fallback would cover.
func TestSpec10_3_NoFallbackUnlessAsked(t *testing.T) {
	srv := newTestServer(t)
	l := listen(t, srv.Server, Options{})
	proxy := newTCPProxy(t, l.TCPAddr().String())
	ctx := testCtx(t)
	var rep Report
	_, err := Dial(ctx, "https://"+proxy.addr()+"/echo", contract,
		DialOptions{CertHashes: [][32]byte{cert(t).SHA256}, DialTimeout: 500 * time.Millisecond, Report: &rep})
	if wire.CodeOf(err) != wire.UDPUnreachable || rep != (Report{}) {
		t.Fatalf("dial: %v, report %+v; want WT_UDP_UNREACHABLE and no fallback", err, rep)
	}
	select {
	case p := <-srv.peers:
		t.Fatalf("a session reached the server: %s", p.ID())
	default:
	}
}

// §10.3: DialOptions.DevCertificate pins a local development server from its
// manifest, over either mapping, with no hash given; away from loopback it
// is WT_DEV_ONLY before anything is dialled.
func TestSpec10_3_DevCertificatePinsFromTheManifest(t *testing.T) {
	srv := newTestServer(t)
	l := listen(t, srv.Server, Options{})
	ctx := testCtx(t)
	c, err := Dial(ctx, l.URL(), contract, DialOptions{DevCertificate: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.peer(t)
	_ = c.Close(tio.NoError, "done")
	ws, err := DialWebSocket(ctx, l.WebSocketURL(), contract, DialOptions{DevCertificate: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.peer(t)
	_ = ws.Close(tio.NoError, "done")
	if _, err := Dial(ctx, "https://192.0.2.7:4433/echo", contract, DialOptions{DevCertificate: true}); wire.CodeOf(err) != wire.DevOnly {
		t.Fatalf("a dev pin from a non-loopback host: %v, want WT_DEV_ONLY", err)
	}
}
