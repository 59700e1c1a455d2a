package tio

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/adapter/memory"
	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

// member is one client of a multi-client room test.
type member struct {
	c     *Client
	peer  *Peer
	said  *recorder
	moved *recorder
}

// connect runs n sessions on srv and returns their clients.
func connect(t *testing.T, srv *Server, n int) []*member {
	t.Helper()
	peers := make(chan *Peer, n)
	prev := srv.opts.OnSession
	srv.opts.OnSession = func(p *Peer) { peers <- p }
	defer func() { srv.opts.OnSession = prev }()
	out := make([]*member, n)
	for i := range out {
		cconn, sconn, _ := loopback.Pair(loopback.Options{})
		served := make(chan error, 1)
		go func() { served <- srv.Serve(sconn, nil) }()
		c, err := NewClient(context.Background(), cconn, testContract, Options{})
		if err != nil {
			t.Fatal(err)
		}
		m := &member{c: c, peer: <-peers, said: newRecorder(), moved: newRecorder()}
		c.On(evSaid, func(b []byte) error { m.said.add(string(b)); return nil })
		c.On(evMove, func(b []byte) error { m.moved.add(string(b)); return nil })
		out[i] = m
		t.Cleanup(func() { _ = c.Close(NoError, ""); _ = c.Wait(); <-served })
	}
	return out
}

func TestSpec6_5_JoinLeaveFramesKeepClientView(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{OnSession: func(p *Peer) { _ = p.Join("lobby") }}, Options{})
	waitFor(t, "the JOIN", func() bool { return slices.Equal(p.client.Rooms(), []string{"lobby"}) })
	if err := p.peer.Join("game"); err != nil {
		t.Fatal(err)
	}
	if err := p.peer.Join("game"); err != nil { // already in: nothing sent
		t.Fatal(err)
	}
	if err := p.peer.Leave("lobby"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the LEAVE", func() bool { return slices.Equal(p.client.Rooms(), []string{"game"}) })
	if got := p.peer.Rooms(); !slices.Equal(got, []string{"game"}) {
		t.Fatalf("server view %v", got)
	}
}

func TestSpec6_5_JoinAndLeaveFramesOnTheWire(t *testing.T) {
	ts, raw := handshaken(t)
	p := onlyPeer(ts)
	_ = p.Join("lobby")
	_ = p.Leave("lobby")
	raw.mustFrame() // handshake
	for _, want := range []wire.FrameType{wire.FrameJoin, wire.FrameLeave} {
		f := raw.mustFrame()
		room, err := wire.ParseRoom(f.Payload)
		if f.Type != want || f.Codec != wire.CodecJSON || f.EventID != 0 || err != nil || room != "lobby" {
			t.Fatalf("frame %s %s %d %q %v", f.Type, f.Codec, f.EventID, f.Payload, err)
		}
	}
}

func TestSpec10_3_BroadcastWithoutJoiningIsRoomNotJoined(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	wantCode(t, p.peer.Broadcast(context.Background(), "lobby", evSaid, []byte(`1`)), wire.RoomNotJoined)
	wantCode(t, p.peer.BroadcastDatagram(context.Background(), "lobby", evMove, []byte(`1`)), wire.RoomNotJoined)
	_ = p.peer.Join("lobby")
	if err := p.peer.Broadcast(context.Background(), "lobby", evSaid, []byte(`1`)); err != nil {
		t.Fatal(err)
	}
}

// recordingAdapter keeps what crosses the adapter boundary.
type recordingAdapter struct {
	adapter.Adapter
	sent chan adapter.Message
}

func (r *recordingAdapter) Broadcast(ctx context.Context, m adapter.Message) error {
	r.sent <- m
	return r.Adapter.Broadcast(ctx, m)
}

func TestSpec6_5_RoomBroadcastEncodedOnceWithExcept(t *testing.T) {
	rec := &recordingAdapter{Adapter: memory.New(), sent: make(chan adapter.Message, 8)}
	defer rec.Close()
	srv, err := NewServer(testContract, ServerOptions{Adapter: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ms := connect(t, srv, 20)
	for _, m := range ms {
		_ = m.peer.Join("lobby")
	}
	if err := srv.Room("lobby").Emit(context.Background(), evSaid, []byte(`"hello"`), ms[0].peer); err != nil {
		t.Fatal(err)
	}
	if n := srv.encodes.Load(); n != 1 {
		t.Fatalf("encoded %d times for %d members", n, len(ms))
	}
	m := <-rec.sent
	want, _ := wire.AppendFrame(nil, wire.FrameEmit, wire.CodecJSON, evSaid, []byte(`"hello"`))
	if string(m.Frame) != string(want) || m.Room != "lobby" || m.Lane != wire.Reliable || !slices.Equal(m.Except, []string{ms[0].peer.ID()}) {
		t.Fatalf("adapter got %+v", m)
	}
	for _, m := range ms[1:] {
		if got := m.said.next(t); got != `"hello"` {
			t.Fatalf("got %q", got)
		}
	}
	// The excluded peer got nothing: a later broadcast is its first.
	_ = srv.Room("lobby").Emit(context.Background(), evSaid, []byte(`"second"`))
	if got := ms[0].said.next(t); got != `"second"` {
		t.Fatalf("excluded peer got %q", got)
	}
}

func TestSpec7_3_BroadcastAcrossNodesKeepsBytesAndOrigin(t *testing.T) {
	bus := memory.NewBus()
	var servers [2]*Server
	var rec *recordingAdapter
	for i := range servers {
		node, err := bus.Node(fmt.Sprintf("node%d", i))
		if err != nil {
			t.Fatal(err)
		}
		defer node.Close()
		if i == 0 {
			rec = &recordingAdapter{Adapter: node, sent: make(chan adapter.Message, 8)}
			node = rec
		}
		if servers[i], err = NewServer(testContract, ServerOptions{Adapter: node}); err != nil {
			t.Fatal(err)
		}
		defer servers[i].Close()
	}
	a, b := connect(t, servers[0], 2), connect(t, servers[1], 2)
	for _, m := range append(append([]*member{}, a...), b...) {
		_ = m.peer.Join("arena")
	}
	// A reliable broadcast from node 0, except one peer on node 1.
	if err := servers[0].Room("arena").Emit(context.Background(), evSaid, []byte(`"all"`), b[1].peer); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*member{a[0], a[1], b[0]} {
		if got := m.said.next(t); got != `"all"` {
			t.Fatalf("got %q", got)
		}
	}
	<-rec.sent
	// A peer's datagram relayed to its room: every other member, on both
	// nodes, gets it under the peer's own origin, as one encoding.
	if err := a[0].peer.BroadcastDatagram(context.Background(), "arena", evMove, []byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	m := <-rec.sent
	d, ok, err := wire.ParseDatagram(m.Frame)
	if !ok || err != nil || d.Origin != a[0].peer.Origin() || m.Origin != d.Origin || d.Seq != 1 || m.Lane != wire.Unreliable {
		t.Fatalf("relayed %+v as %+v (%v)", m, d, err)
	}
	for _, m := range []*member{a[1], b[0], b[1]} {
		if got := m.moved.next(t); got != `{"x":1}` {
			t.Fatalf("got %q", got)
		}
	}
	if got := a[0].moved.all(); len(got) != 0 {
		t.Fatalf("the sender received its own relay: %v", got)
	}
	// The excluded peer on the other node got nothing: a later broadcast
	// is the first it sees.
	_ = servers[0].Room("arena").Emit(context.Background(), evSaid, []byte(`"second"`))
	if got := b[1].said.next(t); got != `"second"` {
		t.Fatalf("the excluded peer got %q", got)
	}
}

// TestPeerSetStaysDenseThroughRemovals: a removal moves the last member
// into the gap and says where it went, so the set walks exactly its
// members, each once, whatever order they leave in, and holds no
// reference past its length to a peer that left.
func TestPeerSetStaysDenseThroughRemovals(t *testing.T) {
	peers := make([]*Peer, 8)
	for i := range peers {
		peers[i] = &Peer{session: &session{q: newEmitQueue(1, 0)}}
	}
	s := newPeerSet()
	for _, p := range peers {
		s.add(p)
	}
	s.add(peers[3]) // already in: no second entry
	in := map[*Peer]bool{}
	for _, p := range peers {
		in[p] = true
	}
	for _, i := range []int{2, 7, 0, 5, 5, 1, 6, 3, 4} {
		s.remove(peers[i])
		delete(in, peers[i])
		if len(s.list) != len(in) || len(s.at) != len(in) {
			t.Fatalf("after removing %d: %d entries, %d indexed, want %d", i, len(s.list), len(s.at), len(in))
		}
		for j, m := range s.list {
			if !in[m.p] || s.at[m.p] != j || m.q != m.p.q {
				t.Fatalf("after removing %d: entry %d is %p (index %d, in %v)", i, j, m.p, s.at[m.p], in[m.p])
			}
		}
		for _, m := range s.list[len(s.list):cap(s.list)] {
			if m.p != nil || m.q != nil {
				t.Fatalf("after removing %d: a removed entry is still referenced", i)
			}
		}
	}
}

// TestSpec6_5_BroadcastReachesMembersAfterLeaves: members leaving from the
// middle, the end and the start of the room, and one joining again, leave
// a broadcast reaching exactly the members, each once.
func TestSpec6_5_BroadcastReachesMembersAfterLeaves(t *testing.T) {
	srv, err := NewServer(testContract, ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if n := srv.Room("lobby").Members(); n != 0 {
		t.Fatalf("%d members before any joined", n)
	}
	ms := connect(t, srv, 6)
	for _, m := range ms {
		_ = m.peer.Join("lobby")
	}
	for _, i := range []int{2, 5, 0, 3} {
		_ = ms[i].peer.Leave("lobby")
	}
	_ = ms[3].peer.Join("lobby")
	if n := srv.Room("lobby").Members(); n != 3 {
		t.Fatalf("%d members, want 3", n)
	}
	if err := srv.Room("lobby").Emit(context.Background(), evSaid, []byte(`"one"`)); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{1, 3, 4} {
		if got := ms[i].said.next(t); got != `"one"` {
			t.Fatalf("member %d got %q", i, got)
		}
	}
	// Those who left join another room: its broadcast is the first thing
	// they receive, so none of them got "one".
	for _, i := range []int{0, 2, 5} {
		_ = ms[i].peer.Join("later")
	}
	_ = srv.Room("later").Emit(context.Background(), evSaid, []byte(`"two"`))
	for _, i := range []int{0, 2, 5} {
		if got := ms[i].said.next(t); got != `"two"` {
			t.Fatalf("former member %d got %q", i, got)
		}
	}
	// The members' next is the next broadcast: none got "one" twice.
	_ = srv.Room("lobby").Emit(context.Background(), evSaid, []byte(`"three"`))
	for _, i := range []int{1, 3, 4} {
		if got := ms[i].said.next(t); got != `"three"` {
			t.Fatalf("member %d got %q", i, got)
		}
	}
}
