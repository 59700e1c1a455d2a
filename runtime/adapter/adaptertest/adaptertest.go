// Package adaptertest is the conformance suite every adapter.Adapter must
// pass: the in-memory adapter runs Run, and each cross-process adapter
// (runtime/adapter/nats) runs Run and RunOutages against a real broker.
package adaptertest

import (
	"bytes"
	"context"
	"errors"
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
	t.Run("OrderAcrossRoomsPerPublisher", func(t *testing.T) { testOrderAcrossRooms(t, newCluster) })
	t.Run("EventsStopIsFinal", func(t *testing.T) { testEventsStop(t, newCluster) })
}

// Broker is the bus of a cross-process adapter, which the outage suite takes
// down and brings back: Stop makes it unreachable until Start.
type Broker interface {
	Stop()
	Start(t testing.TB)
}

// Outage timing: how long a node may take to notice the bus is gone, and to
// be back once it returned. Not spec timeouts: bounds a healthy adapter
// meets with room to spare on a loaded machine.
const (
	NoticeOutage = 5 * time.Second
	Recover      = 5 * time.Second
)

// RunOutages runs what a cross-process adapter must do when its bus goes
// away and comes back: report it, fail broadcasts loudly instead of losing
// them in silence, keep Join bounded, restore every subscription, report
// the broadcasts a receiver missed as a Gap, and deliver nothing twice.
// Each case takes broker down once and brings it back.
func RunOutages(t *testing.T, newCluster NewCluster, broker Broker) {
	t.Run("OutageReportedAndSubscriptionsRestored", func(t *testing.T) { testOutage(t, newCluster, broker) })
	t.Run("GapReportedAfterLostBroadcasts", func(t *testing.T) { testGap(t, newCluster, broker, true) })
	t.Run("GapReportedForSenderNotYetHeard", func(t *testing.T) { testGap(t, newCluster, broker, false) })
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

// testOrderAcrossRooms: what one node publishes to several rooms arrives
// at another node in publishing order, as the emit lane needs (§3.1: one
// emit stream per peer, across rooms).
func testOrderAcrossRooms(t *testing.T, newCluster NewCluster) {
	const n = 1500
	nodes := cluster(t, newCluster, 2)
	rooms := []string{"a", "b", "c"}
	for _, r := range rooms {
		join(t, nodes[1], r, "member-"+r)
	}
	in := subscribe(t, nodes[1])
	for i := range n {
		publish(t, nodes[0], emit(rooms[i%len(rooms)], fmt.Sprint(i)))
	}
	for i, m := range in.await(t, n) {
		if string(m.Frame) != fmt.Sprint(i) || m.Room != rooms[i%len(rooms)] {
			t.Fatalf("message %d arrived as %q in room %q: order across rooms from one publisher is lost", i, m.Frame, m.Room)
		}
	}
}

func testEventsStop(t *testing.T, newCluster NewCluster) {
	nodes := cluster(t, newCluster, 1)
	stop := nodes[0].Events(func(adapter.Event) {})
	stop()
	stop() // a second call does nothing
}

// events collects what a node reports.
type events struct {
	mu   sync.Mutex
	list []adapter.Event
	more chan struct{}
}

func watch(t *testing.T, a adapter.Adapter) *events {
	ev := &events{more: make(chan struct{}, 1)}
	t.Cleanup(a.Events(func(e adapter.Event) {
		ev.mu.Lock()
		ev.list = append(ev.list, e)
		ev.mu.Unlock()
		select {
		case ev.more <- struct{}{}:
		default:
		}
	}))
	return ev
}

func (ev *events) snapshot() []adapter.Event {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return slices.Clone(ev.list)
}

// await waits for an event of kind after the first skip events and returns
// its index.
func (ev *events) await(t *testing.T, kind adapter.EventKind, skip int, within time.Duration) int {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		for i, e := range ev.snapshot() {
			if i >= skip && e.Kind == kind {
				return i
			}
		}
		select {
		case <-ev.more:
		case <-deadline.C:
			t.Fatalf("no %v event within %v; events: %+v", kind, within, ev.snapshot())
		}
	}
}

func (ev *events) count(kind adapter.EventKind) int {
	n := 0
	for _, e := range ev.snapshot() {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// probe publishes distinct frames from a until in holds one of them (a
// restored subscription is live) and returns how many messages in held.
func probe(t *testing.T, from adapter.Adapter, room string, in *inbox) int {
	t.Helper()
	deadline := time.Now().Add(Recover)
	for i := 0; ; i++ {
		if err := from.Broadcast(context.Background(), emit(room, fmt.Sprintf("probe-%d", i))); err == nil {
			time.Sleep(10 * time.Millisecond)
		} else {
			time.Sleep(ReconnectPoll)
		}
		for _, m := range in.snapshot() {
			if bytes.HasPrefix(m.Frame, []byte("probe-")) {
				return len(in.snapshot())
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no broadcast from %q to room %q arrived within %v of the bus's return", from.NodeID(), room, Recover)
		}
	}
}

// ReconnectPoll is how often the suite retries while a node reconnects.
const ReconnectPoll = 20 * time.Millisecond

func noDuplicates(t *testing.T, msgs []adapter.Message) {
	t.Helper()
	seen := map[string]bool{}
	for _, m := range msgs {
		k := m.Node + "\x00" + m.Room + "\x00" + string(m.Frame)
		if seen[k] {
			t.Fatalf("frame %q from %q in room %q delivered twice", m.Frame, m.Node, m.Room)
		}
		seen[k] = true
	}
}

func testOutage(t *testing.T, newCluster NewCluster, broker Broker) {
	nodes := cluster(t, newCluster, 2)
	join(t, nodes[0], "r", "a")
	join(t, nodes[1], "r", "b")
	ev0, ev1 := watch(t, nodes[0]), watch(t, nodes[1])
	in0, in1 := subscribe(t, nodes[0]), subscribe(t, nodes[1])
	publish(t, nodes[0], emit("r", "before"))
	in1.await(t, 1)

	broker.Stop()
	stopped := true
	t.Cleanup(func() {
		if stopped {
			broker.Start(t)
		}
	})
	ev0.await(t, adapter.Disconnected, 0, NoticeOutage)
	ev1.await(t, adapter.Disconnected, 0, NoticeOutage)
	err := nodes[0].Broadcast(context.Background(), emit("r", "during"))
	if !errors.Is(err, adapter.ErrUnreachable) {
		t.Fatalf("Broadcast while the bus is down returned %v, want an error wrapping adapter.ErrUnreachable (never buffered and lost)", err)
	}
	began := time.Now()
	err = nodes[1].Join("joined-during", "b2")
	if took := time.Since(began); took > NoticeOutage {
		t.Fatalf("Join while the bus is down took %v: it must be bounded", took)
	}
	if !errors.Is(err, adapter.ErrUnreachable) {
		t.Fatalf("Join while the bus is down returned %v, want an error wrapping adapter.ErrUnreachable", err)
	}
	if err := nodes[1].Leave("r", "never-joined"); err != nil {
		t.Fatalf("Leave while the bus is down: %v", err)
	}

	broker.Start(t)
	stopped = false
	ev0.await(t, adapter.Reconnected, 0, Recover)
	ev1.await(t, adapter.Reconnected, 0, Recover)
	// A later member of the room joined during the outage joins cleanly.
	join(t, nodes[1], "joined-during", "b3")
	// Both subscriptions come back: the one held before the outage and the
	// one made during it.
	probe(t, nodes[0], "r", in1)
	probe(t, nodes[0], "joined-during", in1)
	probe(t, nodes[1], "r", in0)
	for _, m := range in1.snapshot() {
		if string(m.Frame) == "during" {
			t.Fatal("a broadcast that failed was delivered after all")
		}
	}
	noDuplicates(t, in1.snapshot())
	noDuplicates(t, in0.snapshot())
}

// testGap: a broadcast lost to a receiver is reported there as one Gap,
// whether the receiver had heard from the sender before (heard) or the
// lost broadcast was the sender's first in the room.
func testGap(t *testing.T, newCluster NewCluster, broker Broker, heard bool) {
	nodes := cluster(t, newCluster, 2)
	join(t, nodes[0], "r", "a")
	join(t, nodes[1], "r", "b")
	ev0, ev1 := watch(t, nodes[0]), watch(t, nodes[1])
	in1 := subscribe(t, nodes[1])
	if heard {
		publish(t, nodes[0], emit("r", "1"))
		in1.await(t, 1)
	}
	if n := ev1.count(adapter.Gap); n != 0 {
		t.Fatalf("%d Gap events before anything was lost", n)
	}

	broker.Stop()
	stopped := true
	t.Cleanup(func() {
		if stopped {
			broker.Start(t)
		}
	})
	ev0.await(t, adapter.Disconnected, 0, NoticeOutage)
	if err := nodes[0].Broadcast(context.Background(), emit("r", "lost")); err == nil {
		t.Fatal("Broadcast while the bus is down returned nil")
	}
	broker.Start(t)
	stopped = false
	ev0.await(t, adapter.Reconnected, 0, Recover)
	ev1.await(t, adapter.Reconnected, 0, Recover)
	first := probe(t, nodes[0], "r", in1)
	i := ev1.await(t, adapter.Gap, 0, Arrival)
	if e := ev1.snapshot()[i]; e.Room != "r" || e.Node != nodes[0].NodeID() {
		t.Fatalf("Gap event names room %q and node %q, want %q and %q", e.Room, e.Node, "r", nodes[0].NodeID())
	}
	if n := ev1.count(adapter.Gap); n != 1 {
		t.Fatalf("%d Gap events for one lost broadcast, want 1", n)
	}
	for _, m := range in1.snapshot()[:first] {
		if string(m.Frame) == "lost" {
			t.Fatal("the broadcast that failed was delivered")
		}
	}
}
