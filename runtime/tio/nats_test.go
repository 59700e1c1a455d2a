package tio

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/adapter/nats"
	"github.com/transport-io/tiogen/runtime/adapter/nats/natstest"
	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

// natsHosts runs n servers, each with its own NATS adapter on srv.
func natsHosts(t *testing.T, srv *natstest.Server, n int, opts nats.Options) []*Server {
	t.Helper()
	opts.URL = srv.URL()
	out := make([]*Server, n)
	for i := range out {
		opts.NodeID = fmt.Sprintf("host%d", i)
		a, err := nats.New(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewServer(testContract, ServerOptions{Adapter: a})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close(); _ = a.Close() })
		out[i] = s
	}
	return out
}

// §7.3 over a real NATS server: a room spread over hosts gets every
// broadcast once, except lists hold on every host, and origins are
// distinct across hosts.
func TestSpec7_3_RoomAcrossNATSHosts(t *testing.T) {
	srv := natstest.Start(t)
	hosts := natsHosts(t, srv, 2, nats.Options{})
	a, b := connect(t, hosts[0], 2), connect(t, hosts[1], 2)
	for _, m := range append(append([]*member{}, a...), b...) {
		if err := m.peer.Join("arena"); err != nil {
			t.Fatal(err)
		}
	}
	if hosts[0].adapter.HostOrdinal() == hosts[1].adapter.HostOrdinal() {
		t.Fatalf("both hosts hold ordinal %d", hosts[0].adapter.HostOrdinal())
	}
	origins := map[uint32]bool{}
	for _, m := range append(append([]*member{}, a...), b...) {
		if origins[m.peer.Origin()] {
			t.Fatalf("origin %#x issued twice across hosts", m.peer.Origin())
		}
		origins[m.peer.Origin()] = true
	}
	if err := hosts[0].Room("arena").Emit(context.Background(), evSaid, []byte(`"one"`), b[1].peer); err != nil {
		t.Fatal(err)
	}
	if err := hosts[0].Room("arena").Emit(context.Background(), evSaid, []byte(`"two"`)); err != nil {
		t.Fatal(err)
	}
	for i, m := range []*member{a[0], a[1], b[0]} {
		if got := m.said.next(t); got != `"one"` {
			t.Fatalf("member %d got %s first, want \"one\"", i, got)
		}
	}
	for i, m := range []*member{a[0], a[1], b[0], b[1]} {
		if got := m.said.next(t); got != `"two"` {
			t.Fatalf("member %d got %s, want \"two\" (once, in order; the excluded member skipped \"one\")", i, got)
		}
	}
	if err := b[0].peer.BroadcastDatagram(context.Background(), "arena", evMove, []byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*member{a[0], a[1], b[1]} {
		if got := m.moved.next(t); got != `{"x":1}` {
			t.Fatalf("got %q", got)
		}
	}
	time.Sleep(50 * time.Millisecond)
	for _, m := range append(append([]*member{}, a...), b...) {
		if n := len(m.said.all()); n > 2 {
			t.Fatalf("a member received %d emits for 2 broadcasts", n)
		}
	}
	if got := b[0].moved.all(); len(got) != 0 {
		t.Fatalf("the sender received its own datagram: %v", got)
	}
}

// While NATS is down a broadcast still reaches local members and fails
// loudly for the others; when NATS is back, the other host's members of
// that room, which missed it, are closed so their clients resync, and
// members of other rooms are not.
func TestSpec7_3_LostBroadcastClosesRemoteRoomMembers(t *testing.T) {
	srv := natstest.Start(t)
	events := make(chan adapter.Event, 16)
	hosts := natsHosts(t, srv, 2, nats.Options{})
	hosts[1].opts.OnAdapterEvent = func(e adapter.Event) { events <- e }
	local, remote, elsewhere := connect(t, hosts[0], 1)[0], connect(t, hosts[1], 1)[0], connect(t, hosts[1], 1)[0]
	for _, m := range []*member{local, remote} {
		if err := m.peer.Join("arena"); err != nil {
			t.Fatal(err)
		}
	}
	if err := elsewhere.peer.Join("quiet"); err != nil {
		t.Fatal(err)
	}
	_ = hosts[0].Room("arena").Emit(context.Background(), evSaid, []byte(`"before"`))
	remote.said.next(t)

	srv.Stop()
	waitFor(t, "host 0 to notice the outage", func() bool { return !hosts[0].adapter.(*nats.Adapter).Connected() })
	err := hosts[0].Room("arena").Emit(context.Background(), evSaid, []byte(`"during"`))
	if !errors.Is(err, adapter.ErrUnreachable) {
		t.Fatalf("Emit while NATS is down: %v, want adapter.ErrUnreachable", err)
	}
	if got := local.said.next(t); got != `"before"` {
		t.Fatalf("local member got %s", got)
	}
	if got := local.said.next(t); got != `"during"` {
		t.Fatalf("the local member did not get the broadcast made during the outage: %s", got)
	}
	srv.Start(t)
	deadline := time.Now().Add(5 * time.Second)
	for !remote.c.isEnded() {
		if time.Now().After(deadline) {
			t.Fatal("the remote member that missed a broadcast was not closed")
		}
		_ = hosts[0].Room("arena").Emit(context.Background(), evSaid, []byte(`"after"`))
		time.Sleep(20 * time.Millisecond)
	}
	wantClose(t, remote.c.conn, wire.CloseNoError, "resync")
	for _, s := range remote.said.all() {
		if s == `"during"` {
			t.Fatal("the broadcast that failed reached the remote member")
		}
	}
	if elsewhere.c.isEnded() {
		t.Fatal("a member of another room was closed")
	}
	for {
		select {
		case ev := <-events:
			if ev.Kind == adapter.Gap && ev.Room == "arena" {
				return
			}
		case <-time.After(5 * time.Second):
			t.Fatal("OnAdapterEvent saw no Gap for the room")
		}
	}
}

// §7.3: a host that cannot renew its ordinal lease closes every session
// and accepts none, rather than risk an origin another host is issued.
func TestSpec7_3_FencedHostClosesSessions(t *testing.T) {
	srv := natstest.Start(t)
	hosts := natsHosts(t, srv, 1, nats.Options{Prefix: "fenced", LeaseTTL: time.Second, Quarantine: 2 * time.Second, ShortQuarantineForTests: true})
	m := connect(t, hosts[0], 1)[0]
	srv.Stop()
	wantClose(t, m.c.conn, wire.CloseNoError, "lost its host ordinal lease")
	srv.Start(t)
	if err := hosts[0].Room("arena").SendDatagram(context.Background(), evMove, []byte(`{"x":1}`)); wire.CodeOf(err) != SessionClosed {
		t.Fatalf("a fenced host sent a datagram under its origin: %v", err)
	}
	_, sconn, _ := loopback.Pair(loopback.Options{})
	wantCode(t, hosts[0].Serve(sconn, nil), SessionClosed)
	wantClose(t, sconn, wire.CloseNoError, "lost its host ordinal lease")
}
