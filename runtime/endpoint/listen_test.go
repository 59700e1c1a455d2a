package endpoint

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// received collects the payloads of one event a client receives.
func received(c *tio.Client, event uint32) <-chan string {
	ch := make(chan string, 16)
	c.On(event, func(b []byte) error {
		ch <- string(b)
		return nil
	})
	return ch
}

func expectPayload(t *testing.T, ch <-chan string, want string) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Fatalf("received %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%q never arrived", want)
	}
}

// §2, §3.3: one Listen serves WebTransport and the WebSocket mapping at the
// same address and path, and sessions of both are peers of one tio.Server:
// they share its rooms.
func TestSpec3_3_ListenServesBothMappingsToOneServer(t *testing.T) {
	srv := newTestServer(t)
	l := listen(t, srv.Server, Options{})
	ctx := testCtx(t)
	if l.WebSocketURL() != "wss://"+l.TCPAddr().String()+"/echo" {
		t.Fatalf("WebSocketURL %q, TCP address %v", l.WebSocketURL(), l.TCPAddr())
	}

	wtc, err := Dial(ctx, l.URL(), contract, DialOptions{CertHashes: [][32]byte{cert(t).SHA256}})
	if err != nil {
		t.Fatal(err)
	}
	wtPeer := srv.peer(t)
	var rep Report
	wsc, err := DialWebSocket(ctx, l.WebSocketURL(), contract, DialOptions{CertHashes: [][32]byte{cert(t).SHA256}, Report: &rep})
	if err != nil {
		t.Fatal(err)
	}
	wsPeer := srv.peer(t)
	if rep != (Report{Mapping: transport.WebSocket}) {
		t.Fatalf("report %+v, want the WebSocket mapping without fallback", rep)
	}
	if wtPeer.ID() == wsPeer.ID() {
		t.Fatalf("two sessions share peer id %s", wtPeer.ID())
	}
	if n := srv.Room("all").Members(); n != 2 {
		t.Fatalf("room has %d members, want both sessions", n)
	}

	wtSaid, wsSaid := received(wtc, evSaid), received(wsc, evSaid)
	if err := wsc.Emit(evSay, []byte("from websocket")); err != nil {
		t.Fatal(err)
	}
	expectPayload(t, wtSaid, "from websocket")
	expectPayload(t, wsSaid, "from websocket")
	if err := wtc.Emit(evSay, []byte("from webtransport")); err != nil {
		t.Fatal(err)
	}
	expectPayload(t, wtSaid, "from webtransport")
	expectPayload(t, wsSaid, "from webtransport")

	// §3.3: a call on the WebSocket mapping fails locally and the session
	// stays up; over WebTransport it is answered.
	if _, err := wsc.Call(ctx, evEcho, []byte("x")); wire.CodeOf(err) != wire.LaneUnavailable {
		t.Fatalf("call over the WebSocket: %v, want WT_LANE_UNAVAILABLE", err)
	}
	if resp, err := wtc.Call(ctx, evEcho, []byte("x")); err != nil || string(resp) != "x" {
		t.Fatalf("call over WebTransport: %q %v", resp, err)
	}
	if err := wsc.Emit(evSay, []byte("still up")); err != nil {
		t.Fatal(err)
	}
	expectPayload(t, wsSaid, "still up")

	// Shutdown closes the sessions of both mappings WT_NO_ERROR.
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := l.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*tio.Client{"webtransport": wtc, "websocket": wsc} {
		err := c.Wait()
		var te *tio.Error
		if !errors.As(err, &te) || te.Code != wire.NoError {
			t.Fatalf("%s session after Shutdown: %v, want WT_NO_ERROR", name, err)
		}
	}
}

// §4: the same Authorize decides both mappings, and a refusal reaches each
// client as WT_UNAUTHORIZED with the application's reason.
func TestSpec4_OneAuthorizeForBothMappings(t *testing.T) {
	srv := newTestServer(t)
	seen := make(chan *transport.Request, 4)
	l := listen(t, srv.Server, Options{Authorize: func(_ context.Context, r *transport.Request) (any, error) {
		seen <- r
		if r.Query.Get("token") != "good" {
			return nil, transport.Refuse("bad-token")
		}
		return "user-1", nil
	}})
	ctx := testCtx(t)
	pin := DialOptions{CertHashes: [][32]byte{cert(t).SHA256}}

	for name, dial := range map[string]func(string) (*tio.Client, error){
		"webtransport": func(q string) (*tio.Client, error) { return Dial(ctx, l.URL()+q, contract, pin) },
		"websocket":    func(q string) (*tio.Client, error) { return DialWebSocket(ctx, l.WebSocketURL()+q, contract, pin) },
	} {
		_, err := dial("?token=bad")
		var te *tio.Error
		if !errors.As(err, &te) || te.Code != wire.Unauthorized || !strings.Contains(te.Error(), "bad-token") {
			t.Fatalf("%s refused: %v, want WT_UNAUTHORIZED bad-token", name, err)
		}
		if r := <-seen; r.Path != "/echo" || r.Query.Get("token") != "bad" {
			t.Fatalf("%s: authorize saw path %q", name, r.Path)
		}
		c, err := dial("?token=good")
		if err != nil {
			t.Fatalf("%s accepted: %v", name, err)
		}
		<-seen
		if p := srv.peer(t); p.Data() != "user-1" {
			t.Fatalf("%s: Peer.Data %v, want what Authorize returned", name, p.Data())
		}
		_ = c.Close(tio.NoError, "done")
		_ = c.Wait()
	}
}

// Close stops both mappings at once: the sessions of each end.
func TestListenerCloseEndsSessionsOfBothMappings(t *testing.T) {
	srv := newTestServer(t)
	l, err := Listen(srv.Server, Options{Addr: "127.0.0.1:0", Path: "/echo", Dev: cert(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	pin := DialOptions{CertHashes: [][32]byte{cert(t).SHA256}}
	wtc, err := Dial(ctx, l.URL(), contract, pin)
	if err != nil {
		t.Fatal(err)
	}
	wsc, err := DialWebSocket(ctx, l.WebSocketURL(), contract, pin)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*tio.Client{"webtransport": wtc, "websocket": wsc} {
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("the %s session outlived Close", name)
		}
		_ = c.Wait()
	}
	if _, err := DialWebSocket(ctx, l.WebSocketURL(), contract, pin); wire.CodeOf(err) != wire.HandshakeFailed {
		t.Fatalf("dial after Close: %v, want WT_HANDSHAKE_FAILED", err)
	}
}
