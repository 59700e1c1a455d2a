package nodego

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
	"github.com/transport-io/tiogen/runtime/wire"
)

// roomsContract lets a client join and leave rooms with emits, so the
// rooms view (§6.5) can be driven over the WebSocket mapping, where the
// conformance contract's enter and exit, being calls, are unavailable
// (§3.3). runtime/ts/test/node-go/rooms.test.ts declares the same events.
func roomsContract() (*tio.Contract, error) {
	emit := func(name string, from tio.Direction) tio.Event {
		return tio.Event{Name: name, Lane: wire.Reliable, From: from, Kind: tio.Emit, Payload: wire.CodecJSON}
	}
	return tio.NewContract("rooms", emit("join", tio.FromClient), emit("leave", tio.FromClient), emit("say", tio.FromClient), emit("said", tio.FromServer))
}

type roomMsg struct {
	Room string `json:"room"`
	Text string `json:"text"`
}

// startRoomsServer serves roomsContract over the WebSocket mapping on
// 127.0.0.1 (a free port) and returns its ws:// URL: join and leave change
// the sender's rooms (JOIN and LEAVE frames follow on its emit lane), say
// broadcasts said to every room the sender is in.
func startRoomsServer(t *testing.T) string {
	t.Helper()
	c, err := roomsContract()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := tio.NewServer(c, tio.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := func(name string) uint32 {
		ev, _ := c.EventByName(name)
		return ev.ID
	}
	said := id("said")
	membership := func(change func(p *tio.Peer, room string) error) tio.EmitHandler {
		return func(_ context.Context, p *tio.Peer, payload []byte) error {
			var m roomMsg
			if err := json.Unmarshal(payload, &m); err != nil || m.Room == "" {
				return tio.Errorf(wire.ValidationFailed, "a room name is required")
			}
			return change(p, m.Room)
		}
	}
	srv.HandleEmit(id("join"), membership((*tio.Peer).Join))
	srv.HandleEmit(id("leave"), membership((*tio.Peer).Leave))
	srv.HandleEmit(id("say"), func(ctx context.Context, p *tio.Peer, payload []byte) error {
		for _, room := range p.Rooms() {
			if err := srv.Room(room).Emit(ctx, said, payload); err != nil {
				return err
			}
		}
		return nil
	})
	h := &websocket.Handler{
		Path:      "/rooms",
		OnSession: func(conn transport.Conn, _ *transport.Request, data any) { _ = srv.Serve(conn, data) },
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := errors.Join(h.Shutdown(ctx), hs.Shutdown(ctx), srv.Close()); err != nil {
			t.Errorf("rooms server shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("rooms server: %v", err)
		}
	})
	return fmt.Sprintf("ws://%s/rooms", ln.Addr())
}
