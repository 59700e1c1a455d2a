package memory

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/adapter/adaptertest"
	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/wire"
)

func newCluster(t *testing.T, nodes int) []adapter.Adapter {
	bus := NewBus()
	out := make([]adapter.Adapter, nodes)
	for i := range out {
		a, err := bus.Node(fmt.Sprintf("node-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = a
	}
	return out
}

func TestConformance(t *testing.T) { adaptertest.Run(t, newCluster) }

func TestSpec7_3_MemoryAdapterIsHostOrdinalZero(t *testing.T) {
	a := New()
	defer a.Close()
	if a.HostOrdinal() != 0 {
		t.Fatalf("single-host adapter has ordinal %d, want 0 (§7.3)", a.HostOrdinal())
	}
	if err := a.Broadcast(context.Background(), adapter.Message{Lane: wire.Reliable, Frame: []byte{1}}); err != nil {
		t.Fatalf("Broadcast with no other node: %v", err)
	}
}

// The same backing arrays reach every node: the adapter never copies a frame
// per recipient (encode once, §7.3).
func TestBroadcastSharesFrameBytes(t *testing.T) {
	nodes := newCluster(t, 4)
	defer func() {
		for _, a := range nodes {
			a.Close()
		}
	}()
	frame := []byte("encoded once")
	except := []string{"p"}
	var got [][]byte
	var gotExcept [][]string
	for _, a := range nodes[1:] {
		a.Join("r", "x")
		a.Subscribe(func(m adapter.Message) {
			got = append(got, m.Frame)
			gotExcept = append(gotExcept, m.Except)
		})
	}
	if err := nodes[0].Broadcast(context.Background(), adapter.Message{Room: "r", Lane: wire.Reliable, Frame: frame, Except: except}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("delivered to %d nodes, want 3", len(got))
	}
	for i := range got {
		if unsafe.SliceData(got[i]) != unsafe.SliceData(frame) || len(got[i]) != len(frame) {
			t.Fatalf("node %d received a copy of the frame, not the publisher's bytes", i+1)
		}
		if unsafe.SliceData(gotExcept[i]) != unsafe.SliceData(except) {
			t.Fatalf("node %d received a copy of the except list", i+1)
		}
	}
}

func TestSpec7_3_OrdinalQuarantinedBeforeReuse(t *testing.T) {
	clk := clock.NewFake()
	bus := NewBusWithClock(clk)
	node := func(id string) adapter.Adapter {
		t.Helper()
		a, err := bus.Node(id)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a, b := node("a"), node("b")
	if a.HostOrdinal() != 0 || b.HostOrdinal() != 1 {
		t.Fatalf("ordinals %d, %d; want 0, 1", a.HostOrdinal(), b.HostOrdinal())
	}
	a.Close()
	if c := node("c"); c.HostOrdinal() != 2 {
		t.Fatalf("a new node got ordinal %d right after ordinal 0 was released, want 2", c.HostOrdinal())
	}
	clk.Advance(adapter.OrdinalQuarantine - time.Nanosecond)
	if d := node("d"); d.HostOrdinal() != 3 {
		t.Fatalf("ordinal %d issued 1 ns before the 300 s quarantine ended, want 3", d.HostOrdinal())
	}
	clk.Advance(time.Nanosecond)
	if e := node("e"); e.HostOrdinal() != 0 {
		t.Fatalf("after 300 s got ordinal %d, want the released 0", e.HostOrdinal())
	}
	if again := node("a"); again.HostOrdinal() != 4 {
		t.Fatalf("the id of a departed node is reusable; got ordinal %d, want 4", again.HostOrdinal())
	}
}

func TestSpec7_3_OrdinalExhaustionRefuses(t *testing.T) {
	clk := clock.NewFake()
	bus := NewBusWithClock(clk)
	var first adapter.Adapter
	for i := range adapter.MaxHostOrdinals {
		a, err := bus.Node(fmt.Sprint(i))
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		if i == 0 {
			first = a
		}
	}
	_, err := bus.Node("one-too-many")
	if !errors.Is(err, &wire.Error{Code: wire.TooManyStreams}) {
		t.Fatalf("1,025th live node: err = %v, want WT_TOO_MANY_STREAMS", err)
	}
	first.Close()
	if _, err := bus.Node("during-quarantine"); !errors.Is(err, &wire.Error{Code: wire.TooManyStreams}) {
		t.Fatalf("node while the only free ordinal is quarantined: err = %v, want WT_TOO_MANY_STREAMS", err)
	}
	clk.Advance(adapter.OrdinalQuarantine)
	a, err := bus.Node("after-quarantine")
	if err != nil || a.HostOrdinal() != 0 {
		t.Fatalf("after quarantine: ordinal %v, err %v; want 0, nil", a, err)
	}
}

func TestNodeIDsDistinct(t *testing.T) {
	bus := NewBus()
	if _, err := bus.Node("x"); err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Node("x"); err == nil {
		t.Fatal("two live nodes with one id")
	}
	if _, err := bus.Node(""); err == nil {
		t.Fatal("a node with an empty id")
	}
}

func TestBroadcastRejectsMalformedMessage(t *testing.T) {
	a := New()
	defer a.Close()
	if err := a.Broadcast(context.Background(), adapter.Message{Lane: "sideways", Frame: []byte{1}}); err == nil {
		t.Fatal("a broadcast on an unknown lane was accepted")
	}
	if err := a.Broadcast(context.Background(), adapter.Message{Lane: wire.Reliable}); err == nil {
		t.Fatal("a broadcast of an empty frame was accepted")
	}
}

// Unsubscribe waits out a delivery in progress: once it returns, the
// subscriber is not running.
func TestUnsubscribeWaitsForDelivery(t *testing.T) {
	nodes := newCluster(t, 2)
	defer nodes[0].Close()
	defer nodes[1].Close()
	entered, release := make(chan struct{}), make(chan struct{})
	running := false
	unsubscribe := nodes[1].Subscribe(func(adapter.Message) {
		running = true
		close(entered)
		<-release
		running = false
	})
	go nodes[0].Broadcast(context.Background(), adapter.Message{Lane: wire.Reliable, Frame: []byte{1}})
	<-entered
	done := make(chan struct{})
	go func() { unsubscribe(); close(done) }()
	select {
	case <-done:
		t.Fatal("unsubscribe returned while deliver was running")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	<-done
	if running {
		t.Fatal("deliver still running after unsubscribe returned")
	}
}

func BenchmarkBroadcastToThreeNodes(b *testing.B) {
	bus := NewBus()
	var nodes []adapter.Adapter
	for i := range 4 {
		a, _ := bus.Node(fmt.Sprint(i))
		a.Join("r", "p")
		a.Subscribe(func(adapter.Message) {})
		nodes = append(nodes, a)
	}
	m := adapter.Message{Room: "r", Lane: wire.Reliable, Frame: make([]byte, 64)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		nodes[0].Broadcast(ctx, m)
	}
}
