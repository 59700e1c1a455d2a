package websocket_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
	"github.com/transport-io/tiogen/runtime/wire"
)

// These run the engine (runtime/tio) over the real mapping: a Go client
// dialling Handler on 127.0.0.1.

var (
	evShout = wire.EventID("shout")
	evHeard = wire.EventID("heard")
	evMove  = wire.EventID("move")
	evEcho  = wire.EventID("echo")
)

func engineEvents(fallback tio.Fallback) []tio.Event {
	return []tio.Event{
		{Name: "shout", Lane: wire.Reliable, From: tio.FromClient, Payload: wire.CodecJSON},
		{Name: "heard", Lane: wire.Reliable, From: tio.FromServer, Payload: wire.CodecJSON},
		{Name: "move", Lane: wire.Unreliable, Payload: wire.CodecJSON, Fallback: fallback},
		{Name: "echo", Lane: wire.Reliable, Kind: tio.Returns, Payload: wire.CodecJSON, Result: wire.CodecJSON},
	}
}

// engineServer serves contract over the WebSocket mapping: a peer's shout
// comes back to it as heard, and a move is reported on moves.
func engineServer(t *testing.T, contract *tio.Contract, authorize transport.AuthorizeFunc) (url string, ended chan error, moves chan string) {
	t.Helper()
	srv, err := tio.NewServer(contract, tio.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	moves = make(chan string, 16)
	srv.HandleEmit(evShout, func(_ context.Context, p *tio.Peer, payload []byte) error {
		if err := p.Join("lobby"); err != nil {
			return err
		}
		return srv.Room("lobby").Emit(context.Background(), evHeard, payload)
	})
	srv.HandleEmit(evMove, func(_ context.Context, _ *tio.Peer, payload []byte) error {
		moves <- string(payload)
		return nil
	})
	ended = make(chan error, 4)
	h := &websocket.Handler{
		Path:      "/tio",
		Authorize: authorize,
		OnSession: func(c transport.Conn, _ *transport.Request, data any) { ended <- srv.Serve(c, data) },
	}
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = srv.Close()
		_ = h.Shutdown(context.Background())
		hs.Close()
	})
	return "ws" + strings.TrimPrefix(hs.URL, "http") + "/tio", ended, moves
}

func dialEngine(t *testing.T, url string, contract *tio.Contract) (*tio.Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := websocket.Dial(ctx, url, websocket.DialOptions{})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	return tio.NewClient(ctx, conn, contract, tio.Options{})
}

func TestEngineEmitBothWaysAndCloseOverWebSocket(t *testing.T) {
	contract := tio.MustContract("ws", engineEvents(tio.Newest)...)
	url, ended, moves := engineServer(t, contract, nil)
	cl, err := dialEngine(t, url, contract)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	heard := make(chan string, 16)
	defer cl.On(evHeard, func(b []byte) error { heard <- string(b); return nil })()

	if err := cl.Emit(evShout, []byte(`"hello"`)); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-heard:
		if got != `"hello"` {
			t.Fatalf("heard %s", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server's emit did not arrive")
	}
	// An unreliable event rides the emit lane as a DATAGRAM frame (§3.3).
	if err := cl.SendDatagram(evMove, []byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-moves:
		if got != `{"x":1}` {
			t.Fatalf("move %s", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the datagram did not arrive")
	}
	// A call fails locally and the session stays up (§3.3, §10.3).
	if _, err := cl.Call(context.Background(), evEcho, []byte(`{}`)); wire.CodeOf(err) != wire.LaneUnavailable {
		t.Fatalf("Call: %v, want WT_LANE_UNAVAILABLE", err)
	}
	if err := cl.Emit(evShout, []byte(`"again"`)); err != nil {
		t.Fatal(err)
	}
	<-heard

	if err := cl.Close(tio.ContractMismatch, "bye"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if wire.CodeOf(err) != wire.ContractMismatch || !strings.Contains(err.Error(), "bye") {
			t.Fatalf("the server's session ended with %v, want WT_CONTRACT_MISMATCH \"bye\"", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server's session did not end")
	}
}

func TestEngineRefusalOverWebSocket(t *testing.T) {
	contract := tio.MustContract("ws", engineEvents(tio.Newest)...)
	url, _, _ := engineServer(t, contract, func(context.Context, *transport.Request) (any, error) {
		return nil, transport.Refuse("expired")
	})
	_, err := dialEngine(t, url, contract)
	if wire.CodeOf(err) != wire.Unauthorized || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("NewClient on a refused session: %v, want WT_UNAUTHORIZED \"expired\"", err)
	}
}

func TestSpec2_EngineRefusesReliabilityOverWebSocket(t *testing.T) {
	served := tio.MustContract("ws", engineEvents(tio.Newest)...)
	undeclared := tio.MustContract("ws", engineEvents(tio.NoFallback)...)
	url, _, _ := engineServer(t, served, nil)
	// The client's own contract declares no fallback for move: it refuses
	// the session before the handshake, naming the event (§2, §7.6).
	_, err := dialEngine(t, url, undeclared)
	if wire.CodeOf(err) != wire.ReliabilityRefused || !strings.Contains(err.Error(), "move") {
		t.Fatalf("NewClient: %v, want WT_RELIABILITY_REFUSED naming move", err)
	}
}
