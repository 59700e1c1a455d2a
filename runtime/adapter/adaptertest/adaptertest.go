// Package adaptertest is the conformance suite every adapter.Adapter must
// pass: the in-memory adapter runs it, and so does each cross-process
// adapter (NATS next) against a real broker.
package adaptertest

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Timing of the suite. These are not spec timeouts: Arrival bounds how long
// a message may take to cross the adapter under test, and Quiet is how long
// the suite watches for a message that must not arrive. An asynchronous
// adapter delivers well within both on a loaded machine.
const (
	Arrival = 5 * time.Second
	Quiet   = 100 * time.Millisecond
)

// NewCluster returns nodes adapters joined to one fresh bus or broker, each
// a distinct live node. The suite closes every adapter it is given.
type NewCluster func(t *testing.T, nodes int) []adapter.Adapter

// Run runs the conformance suite against the adapters newCluster makes.
func Run(t *testing.T, newCluster NewCluster) {
	t.Run("DeliversToOtherNodes", func(t *testing.T) { testDelivers(t, newCluster) })
	t.Run("NoSelfDelivery", func(t *testing.T) { testNoSelfDelivery(t, newCluster) })
	t.Run("MessageCarriedUnchanged", func(t *testing.T) { testUnchanged(t, newCluster) })
	t.Run("RoomMembershipRoutes", func(t *testing.T) { testMembership(t, newCluster) })
	t.Run("EmptyRoomReachesEveryNode", func(t *testing.T) { testEmptyRoom(t, newCluster) })
	t.Run("ReliableLaneOrderedPerPublisher", func(t *testing.T) { testOrdering(t, newCluster) })
	t.Run("Spec7_3_DistinctHostOrdinals", func(t *testing.T) { testOrdinals(t, newCluster) })
	t.Run("UnsubscribeStopsDelivery", func(t *testing.T) { testUnsubscribe(t, newCluster) })
	t.Run("CanceledContextPublishesNothing", func(t *testing.T) { testCanceled(t, newCluster) })
	t.Run("CloseStopsDeliveryAndGoroutines", func(t *testing.T) { testClose(t, newCluster) })
	t.Run("ConcurrentPublishers", func(t *testing.T) { testConcurrent(t, newCluster) })
}

// cluster makes a cluster and closes it when the test ends.
func cluster(t *testing.T, newCluster NewCluster, n int) []adapter.Adapter {
	t.Helper()
	nodes := newCluster(t, n)
	if len(nodes) != n {
		t.Fatalf("newCluster(%d) returned %d adapters", n, len(nodes))
	}
	t.Cleanup(func() {
		for _, a := range nodes {
			if err := a.Close(); err != nil {
				t.Errorf("Close of node %q: %v", a.NodeID(), err)
			}
		}
	})
	return nodes
}

// inbox collects what one node receives.
type inbox struct {
	mu   sync.Mutex
	msgs []adapter.Message
	more chan struct{}
}

// subscribe collects a's deliveries until the test ends.
func subscribe(t *testing.T, a adapter.Adapter) *inbox {
	t.Helper()
	in, unsubscribe := subscribeUntil(a)
	t.Cleanup(unsubscribe)
	return in
}

// subscribeUntil collects a's deliveries until unsubscribe is called.
func subscribeUntil(a adapter.Adapter) (in *inbox, unsubscribe func()) {
	in = &inbox{more: make(chan struct{}, 1)}
	unsubscribe = a.Subscribe(func(m adapter.Message) {
		in.mu.Lock()
		in.msgs = append(in.msgs, m)
		in.mu.Unlock()
		select {
		case in.more <- struct{}{}:
		default:
		}
	})
	return in, unsubscribe
}

func (in *inbox) snapshot() []adapter.Message {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.msgs)
}

// await waits until the inbox holds n messages and returns them.
func (in *inbox) await(t *testing.T, n int) []adapter.Message {
	t.Helper()
	deadline := time.NewTimer(Arrival)
	defer deadline.Stop()
	for {
		if got := in.snapshot(); len(got) >= n {
			return got
		}
		select {
		case <-in.more:
		case <-deadline.C:
			t.Fatalf("received %d messages within %v, want %d", len(in.snapshot()), Arrival, n)
		}
	}
}

// quiet checks that the inbox still holds exactly n messages after Quiet.
func (in *inbox) quiet(t *testing.T, n int, what string) {
	t.Helper()
	time.Sleep(Quiet)
	if got := in.snapshot(); len(got) != n {
		t.Fatalf("%s: inbox holds %d messages, want %d: %+v", what, len(got), n, got)
	}
}

func publish(t *testing.T, a adapter.Adapter, m adapter.Message) {
	t.Helper()
	if err := a.Broadcast(context.Background(), m); err != nil {
		t.Fatalf("Broadcast from %q: %v", a.NodeID(), err)
	}
}

func join(t *testing.T, a adapter.Adapter, room, peer string) {
	t.Helper()
	if err := a.Join(room, peer); err != nil {
		t.Fatalf("Join(%q, %q) on %q: %v", room, peer, a.NodeID(), err)
	}
}

func emit(room string, frame string) adapter.Message {
	return adapter.Message{Room: room, Lane: wire.Reliable, Frame: []byte(frame)}
}

func testDelivers(t *testing.T, newCluster NewCluster) {
	nodes := cluster(t, newCluster, 3)
	inboxes := make([]*inbox, len(nodes))
	for i, a := range nodes {
		join(t, a, "lobby", fmt.Sprintf("peer-%d", i))
		inboxes[i] = subscribe(t, a)
	}
	publish(t, nodes[0], emit("lobby", "hello"))
	for i := 1; i < len(nodes); i++ {
		got := inboxes[i].await(t, 1)
		if string(got[0].Frame) != "hello" || got[0].Room != "lobby" || got[0].Node != nodes[0].NodeID() {
			t.Fatalf("node %d received %+v, want frame \"hello\" in \"lobby\" from %q", i, got[0], nodes[0].NodeID())
		}
	}
	for i := 1; i < len(nodes); i++ {
		inboxes[i].quiet(t, 1, fmt.Sprintf("node %d after one broadcast", i))
	}
}

func testNoSelfDelivery(t *testing.T, newCluster NewCluster) {
	nodes := cluster(t, newCluster, 2)
	join(t, nodes[0], "lobby", "a")
	join(t, nodes[1], "lobby", "b")
	self, other := subscribe(t, nodes[0]), subscribe(t, nodes[1])
	publish(t, nodes[0], emit("lobby", "mine"))
	other.await(t, 1)
	self.quiet(t, 0, "the publishing node received its own broadcast")
}

func testUnchanged(t *testing.T, newCluster NewCluster) {
	nodes := cluster(t, newCluster, 2)
	join(t, nodes[0], "r", "a")
	join(t, nodes[1], "r", "b")
	in := subscribe(t, nodes[1])
	binary := make([]byte, 64<<10)
	for i := range binary {
		binary[i] = byte(i * 7)
	}
	sent := []adapter.Message{
		{Room: "r", Lane: wire.Reliable, Frame: []byte{0, 0, 0, 10, 2, 1, 0, 0, 0x31, 0xe0, 0x6f, 0x7d, 0xaa, 0xbb}},
		{Room: "r", Lane: wire.Unreliable, Frame: []byte{1, 0, 0, 0, 1, 0x00, 0x40, 0x00, 0x01, 0, 0, 0, 7, 0}, Origin: 0x00400001, Except: []string{"b", "c"}},
		{Room: "r", Lane: wire.Reliable, Frame: binary, Except: []string{"x"}},
	}
	want := make([]adapter.Message, len(sent))
	for i, m := range sent {
		want[i] = m
		want[i].Frame = bytes.Clone(m.Frame)
		want[i].Except = slices.Clone(m.Except)
		want[i].Node = nodes[0].NodeID()
		publish(t, nodes[0], m)
	}
	got := in.await(t, len(sent))
	for i := range want {
		g, w := got[i], want[i]
		if g.Room != w.Room || g.Lane != w.Lane || g.Origin != w.Origin || g.Node != w.Node ||
			!bytes.Equal(g.Frame, w.Frame) || !slices.Equal(g.Except, w.Except) {
			t.Fatalf("message %d arrived as {Room:%q Lane:%q Origin:%#x Node:%q Except:%q Frame:%d bytes}, "+
				"sent {Room:%q Lane:%q Origin:%#x Node:%q Except:%q Frame:%d bytes}",
				i, g.Room, g.Lane, g.Origin, g.Node, g.Except, len(g.Frame), w.Room, w.Lane, w.Origin, w.Node, w.Except, len(w.Frame))
		}
	}
	if !bytes.Equal(sent[2].Frame, binary) {
		t.Fatal("Broadcast changed the publisher's frame")
	}
}

func testMembership(t *testing.T, newCluster NewCluster) {
	nodes := cluster(t, newCluster, 2)
	join(t, nodes[0], "r", "a")
	in := subscribe(t, nodes[1])
	publish(t, nodes[0], emit("r", "before-join"))
	in.quiet(t, 0, "a node with no member in the room received its broadcast")

	join(t, nodes[1], "r", "b1")
	join(t, nodes[1], "r", "b2")
	publish(t, nodes[0], emit("r", "joined"))
	if got := in.await(t, 1); string(got[0].Frame) != "joined" {
		t.Fatalf("after Join received %q, want \"joined\"", got[0].Frame)
	}
	if err := nodes[1].Leave("r", "b1"); err != nil {
		t.Fatal(err)
	}
	publish(t, nodes[0], emit("r", "one-left"))
	if got := in.await(t, 2); string(got[1].Frame) != "one-left" {
		t.Fatalf("with one member left received %q, want \"one-left\"", got[1].Frame)
	}
	if err := nodes[1].Leave("r", "b2"); err != nil {
		t.Fatal(err)
	}
	if err := nodes[1].Leave("r", "never-joined"); err != nil {
		t.Fatalf("Leave of a peer not in the room: %v", err)
	}
	publish(t, nodes[0], emit("r", "all-left"))
	in.quiet(t, 2, "a node whose members all left the room received its broadcast")
}

func testEmptyRoom(t *testing.T, newCluster NewCluster) {
	nodes := cluster(t, newCluster, 3)
	a, b := subscribe(t, nodes[1]), subscribe(t, nodes[2])
	publish(t, nodes[0], emit("", "everyone"))
	a.await(t, 1)
	b.await(t, 1)
}

func testOrdering(t *testing.T, newCluster NewCluster) {
	const n = 2000
	nodes := cluster(t, newCluster, 2)
	join(t, nodes[0], "r", "a")
	join(t, nodes[1], "r", "b")
	in := subscribe(t, nodes[1])
	for i := range n {
		publish(t, nodes[0], emit("r", fmt.Sprint(i)))
	}
	for i, m := range in.await(t, n) {
		if string(m.Frame) != fmt.Sprint(i) {
			t.Fatalf("message %d arrived as %q: the reliable lane is out of publishing order", i, m.Frame)
		}
	}
}

func testOrdinals(t *testing.T, newCluster NewCluster) {
	nodes := cluster(t, newCluster, 8)
	ids, ordinals := map[string]bool{}, map[uint16]bool{}
	for _, a := range nodes {
		if a.HostOrdinal() >= adapter.MaxHostOrdinals {
			t.Fatalf("node %q has host ordinal %d, outside 0..%d (§7.3)", a.NodeID(), a.HostOrdinal(), adapter.MaxHostOrdinals-1)
		}
		if ordinals[a.HostOrdinal()] {
			t.Fatalf("host ordinal %d is held by two live nodes (§7.3)", a.HostOrdinal())
		}
		if a.NodeID() == "" || ids[a.NodeID()] {
			t.Fatalf("node id %q is empty or held by two live nodes", a.NodeID())
		}
		ordinals[a.HostOrdinal()], ids[a.NodeID()] = true, true
	}
}

func testUnsubscribe(t *testing.T, newCluster NewCluster) {
	nodes := cluster(t, newCluster, 2)
	join(t, nodes[1], "r", "b")
	kept := subscribe(t, nodes[1])
	dropped, unsubscribe := subscribeUntil(nodes[1])
	publish(t, nodes[0], emit("r", "both"))
	kept.await(t, 1)
	dropped.await(t, 1)
	unsubscribe()
	unsubscribe() // a second call does nothing
	publish(t, nodes[0], emit("r", "kept-only"))
	kept.await(t, 2)
	dropped.quiet(t, 1, "delivery after unsubscribe")
}

func testCanceled(t *testing.T, newCluster NewCluster) {
	nodes := cluster(t, newCluster, 2)
	in := subscribe(t, nodes[1])
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := nodes[0].Broadcast(ctx, emit("", "canceled")); err == nil {
		t.Fatal("Broadcast with a canceled context returned nil")
	}
	in.quiet(t, 0, "a broadcast with a canceled context was delivered")
}

func testClose(t *testing.T, newCluster NewCluster) {
	before := runtime.NumGoroutine()
	nodes := newCluster(t, 3)
	t.Cleanup(func() {
		for _, a := range nodes {
			a.Close()
		}
	})
	for i, a := range nodes {
		join(t, a, "r", fmt.Sprintf("p%d", i))
	}
	survivor, closed := subscribe(t, nodes[1]), subscribe(t, nodes[2])
	publish(t, nodes[0], emit("r", "all"))
	survivor.await(t, 1)
	closed.await(t, 1)

	if err := nodes[2].Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := nodes[2].Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := nodes[2].Broadcast(context.Background(), emit("r", "from-closed")); err == nil {
		t.Fatal("Broadcast on a closed adapter returned nil")
	}
	if err := nodes[2].Join("r", "late"); err == nil {
		t.Fatal("Join on a closed adapter returned nil")
	}
	publish(t, nodes[0], emit("r", "after-close"))
	survivor.await(t, 2)
	closed.quiet(t, 1, "a closed node received a broadcast")

	for _, a := range nodes[:2] {
		if err := a.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	deadline := time.Now().Add(Arrival)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before the cluster, %d after closing it:\n%s",
				before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func testConcurrent(t *testing.T, newCluster NewCluster) {
	const publishers, each = 4, 200
	nodes := cluster(t, newCluster, publishers+1)
	sink := nodes[publishers]
	join(t, sink, "r", "sink")
	in := subscribe(t, sink)
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			for i := range each {
				if err := nodes[p].Broadcast(context.Background(), emit("r", fmt.Sprintf("%d/%d", p, i))); err != nil {
					t.Errorf("Broadcast: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	next := make(map[string]int)
	for _, m := range in.await(t, publishers*each) {
		var p, i int
		if _, err := fmt.Sscanf(string(m.Frame), "%d/%d", &p, &i); err != nil {
			t.Fatalf("unexpected frame %q", m.Frame)
		}
		if i != next[m.Node] {
			t.Fatalf("from %q message %d arrived when %d was due", m.Node, i, next[m.Node])
		}
		next[m.Node]++
	}
	in.quiet(t, publishers*each, "after concurrent publishing")
}
