// Package memory is the in-process Adapter: New for a single host (ordinal
// 0, nothing to reach), and a Bus that models several nodes in one process,
// each with its own host ordinal, for tests of multi-host behaviour.
//
// Delivery is synchronous: Broadcast calls every receiving node's deliver
// functions on the publisher's goroutine before it returns, so a node's
// messages arrive in publishing order and the package starts no goroutine.
// Every receiver gets the publisher's Message as it is: the same Frame and
// Except backing arrays, never a copy.
package memory

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/wire"
)

// New returns the adapter of a single-host deployment: host ordinal 0
// (§7.3) and no other node to publish to.
func New() adapter.Adapter {
	a, err := NewBus().Node("memory")
	if err != nil {
		panic("memory: the first node of a new bus failed: " + err.Error()) // cannot happen: the bus is empty
	}
	return a
}

// Bus connects the nodes of one process. It issues host ordinals: the
// lowest ordinal neither live nor released within adapter.OrdinalQuarantine
// (§7.3).
type Bus struct {
	clk   clock.Clock
	nodes atomic.Pointer[[]*node] // live nodes; replaced, never changed

	mu       sync.Mutex
	byID     map[string]*node
	live     [adapter.MaxHostOrdinals]bool
	released [adapter.MaxHostOrdinals]time.Time // zero: never released
}

// NewBus returns an empty bus on the real clock.
func NewBus() *Bus { return NewBusWithClock(nil) }

// NewBusWithClock returns an empty bus whose ordinal quarantine runs on c.
func NewBusWithClock(c clock.Clock) *Bus {
	b := &Bus{clk: clock.Or(c), byID: make(map[string]*node)}
	b.nodes.Store(&[]*node{})
	return b
}

// Node joins a new node with the given id, distinct among live nodes, to the
// bus. It fails with WT_TOO_MANY_STREAMS when all 1,024 ordinals are live or
// in quarantine.
func (b *Bus) Node(id string) (adapter.Adapter, error) {
	if id == "" {
		return nil, fmt.Errorf("memory: a node needs a non-empty id")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.byID[id]; ok {
		return nil, fmt.Errorf("memory: node id %q is already live on this bus", id)
	}
	ordinal, ok := b.freeOrdinalLocked()
	if !ok {
		return nil, &wire.Error{
			Code:    wire.TooManyStreams,
			Message: "all 1,024 host ordinals are held by live nodes or quarantined for 300 s after their node left (§7.3)",
			Remedy:  "Run fewer session hosts, or wait for departed hosts' ordinals to leave quarantine.",
		}
	}
	n := &node{bus: b, id: id, ordinal: ordinal, rooms: make(map[string]map[string]struct{})}
	b.live[ordinal] = true
	b.byID[id] = n
	nodes := append(append([]*node(nil), *b.nodes.Load()...), n)
	b.nodes.Store(&nodes)
	return n, nil
}

func (b *Bus) freeOrdinalLocked() (uint16, bool) {
	now := b.clk.Now()
	for i := range b.live {
		if b.live[i] {
			continue
		}
		if r := b.released[i]; r.IsZero() || now.Sub(r) >= adapter.OrdinalQuarantine {
			return uint16(i), true
		}
	}
	return 0, false
}

func (b *Bus) leave(n *node) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.byID, n.id)
	b.live[n.ordinal] = false
	b.released[n.ordinal] = b.clk.Now()
	var nodes []*node
	for _, o := range *b.nodes.Load() {
		if o != n {
			nodes = append(nodes, o)
		}
	}
	b.nodes.Store(&nodes)
}

type node struct {
	bus     *Bus
	id      string
	ordinal uint16
	closed  atomic.Bool
	subs    adapter.Listeners[adapter.Message]

	mu    sync.RWMutex // rooms, and closing
	rooms map[string]map[string]struct{}
}

func (n *node) NodeID() string      { return n.id }
func (n *node) HostOrdinal() uint16 { return n.ordinal }

func (n *node) Join(room, peerID string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed.Load() {
		return adapter.ErrClosed
	}
	peers := n.rooms[room]
	if peers == nil {
		peers = make(map[string]struct{})
		n.rooms[room] = peers
	}
	peers[peerID] = struct{}{}
	return nil
}

func (n *node) Leave(room, peerID string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed.Load() {
		return adapter.ErrClosed
	}
	if peers := n.rooms[room]; peers != nil {
		delete(peers, peerID)
		if len(peers) == 0 {
			delete(n.rooms, room)
		}
	}
	return nil
}

// wants reports whether a broadcast to room reaches this node.
func (n *node) wants(room string) bool {
	if room == "" {
		return true
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	return len(n.rooms[room]) > 0
}

func (n *node) Broadcast(ctx context.Context, m adapter.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if n.closed.Load() {
		return adapter.ErrClosed
	}
	if m.Lane != wire.Reliable && m.Lane != wire.Unreliable {
		return fmt.Errorf("memory: broadcast on lane %q, neither %q nor %q", m.Lane, wire.Reliable, wire.Unreliable)
	}
	if len(m.Frame) == 0 {
		return fmt.Errorf("memory: broadcast of an empty frame")
	}
	m.Node = n.id
	for _, to := range *n.bus.nodes.Load() {
		if to != n && to.wants(m.Room) {
			to.deliver(m)
		}
	}
	return nil
}

func (n *node) deliver(m adapter.Message) { n.subs.Call(m) }

func (n *node) Subscribe(deliver func(adapter.Message)) (unsubscribe func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed.Load() {
		return func() {}
	}
	return n.subs.Add(deliver)
}

// Events never reports anything: a bus in one process cannot be lost, drop
// a broadcast or fence a node.
func (n *node) Events(func(adapter.Event)) (stop func()) { return func() {} }

func (n *node) Close() error {
	n.mu.Lock()
	if n.closed.Swap(true) {
		n.mu.Unlock()
		return nil
	}
	n.rooms = nil
	n.mu.Unlock()
	n.subs.RemoveAll()
	n.bus.leave(n)
	return nil
}
