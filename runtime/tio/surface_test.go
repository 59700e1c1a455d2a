package tio

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/adapter/memory"
	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

// TestSpec3_2_APeerHasNoCallsToMake: calls are the client's to make (§3.2),
// so a server's Peer has no Call or Stream, and neither side shows the
// engine's methods beyond its own documented set.
func TestSpec3_2_APeerHasNoCallsToMake(t *testing.T) {
	methods := func(v any) []string {
		var out []string
		typ := reflect.TypeOf(v)
		for i := range typ.NumMethod() {
			out = append(out, typ.Method(i).Name)
		}
		return out
	}
	peer := []string{"Broadcast", "BroadcastDatagram", "Close", "Data", "Done", "Emit", "Err", "Features", "ID", "InRoom",
		"Join", "Leave", "Origin", "Rooms", "SendDatagram", "Stats", "WaitEmit"}
	client := []string{"Call", "Close", "Done", "Emit", "Err", "Features", "On", "Rooms", "SendDatagram", "Stats",
		"Stream", "Wait", "WaitEmit"}
	if got := methods(&Peer{}); !slices.Equal(got, peer) {
		t.Errorf("*Peer methods %v, want %v", got, peer)
	}
	if got := methods(&Client{}); !slices.Equal(got, client) {
		t.Errorf("*Client methods %v, want %v", got, client)
	}
}

// TestSpec11_EmitHandlerContextEndsWithTheSession: an emit handler gets the
// session's context, which ends when the session does (§11), as a call
// handler's does.
func TestSpec11_EmitHandlerContextEndsWithTheSession(t *testing.T) {
	ctxs := make(chan context.Context, 1)
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	p.srv.HandleEmit(evPing, func(ctx context.Context, _ *Peer, _ []byte) error {
		ctxs <- ctx
		return nil
	})
	if err := p.client.Emit(evPing, []byte(`1`)); err != nil {
		t.Fatal(err)
	}
	ctx := <-ctxs
	if ctx.Err() != nil {
		t.Fatalf("the handler's context ended while the session runs: %v", ctx.Err())
	}
	_ = p.client.Close(NoError, "done")
	<-p.peer.Done()
	<-ctx.Done()
}

// blockingAdapter is a networked adapter whose medium never takes a
// message: Broadcast waits until its ctx ends.
type blockingAdapter struct {
	adapter.Adapter
}

func (blockingAdapter) Broadcast(ctx context.Context, _ adapter.Message) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestSpec6_5_RoomBroadcastIsBoundedByItsContext: local members receive a
// room broadcast at once; the hand-off to other nodes is bounded by the
// caller's ctx, and its end is reported.
func TestSpec6_5_RoomBroadcastIsBoundedByItsContext(t *testing.T) {
	bus := blockingAdapter{memory.New()}
	defer bus.Close()
	srv, err := NewServer(testContract, ServerOptions{Adapter: bus})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ms := connect(t, srv, 2)
	for _, m := range ms {
		_ = m.peer.Join("lobby")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = srv.Room("lobby").Emit(ctx, evSaid, []byte(`"local"`))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Emit with an ended context: %v, want context.Canceled from the adapter", err)
	}
	for _, m := range ms {
		if got := m.said.next(t); got != `"local"` {
			t.Fatalf("a local member got %q", got)
		}
	}
	err = ms[0].peer.BroadcastDatagram(ctx, "lobby", evMove, []byte(`{"x":1}`))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("BroadcastDatagram with an ended context: %v", err)
	}
	wantCode(t, ms[0].peer.Broadcast(ctx, "nowhere", evSaid, []byte(`1`)), wire.RoomNotJoined)
}
