// Package adapter is the boundary between session hosts: how a broadcast
// made on one host reaches the members of its room on the others, and how
// each host learns its ordinal in the origin space (§7.3).
//
// An Adapter moves bytes, never decoded messages: a broadcast is encoded
// once, and the same immutable bytes go to every local member and, through
// the adapter, to every other host (§7.3, encode once).
package adapter

import (
	"context"
	"errors"
	"time"

	"github.com/transport-io/tiogen/runtime/wire"
)

// OrdinalQuarantine is how long a departed host's ordinal waits before it
// is issued to another host (§7.3): longer than the 120 s origin
// quarantine, because a host's departure is detected later than a session's
// close.
const OrdinalQuarantine = 300 * time.Second

// MaxHostOrdinals is the number of host ordinals, the stated limit of 1,024
// concurrent session hosts (§7.3).
const MaxHostOrdinals = 1024

// ErrClosed is returned by the methods of an Adapter after Close.
var ErrClosed = errors.New("adapter: closed")

// ErrUnreachable is wrapped by the error of a Broadcast that could not be
// handed to the bus (it is unreachable, or this node is reconnecting): the
// other nodes' members did not receive it, and they learn of the loss as a
// Gap. Local delivery is the engine's and is unaffected.
var ErrUnreachable = errors.New("adapter: the bus is unreachable")

// EventKind says what an Event reports.
type EventKind int

const (
	// Disconnected: this node lost the bus. Broadcasts fail with
	// ErrUnreachable and no remote broadcast arrives until Reconnected.
	Disconnected EventKind = iota + 1
	// Reconnected: the bus is back and every room subscription of this
	// node is restored.
	Reconnected
	// Gap: broadcasts that Node published to Room did not arrive here (a
	// publish failed during an outage, or the bus dropped them). This
	// node's members of Room missed them; the engine closes their sessions
	// so their clients reconnect and resync. Room "" means every member.
	Gap
	// Fenced: this node can no longer prove it holds its host ordinal
	// (§7.3), so another host may soon be issued it. The engine stops
	// issuing origins and closes every session; the adapter stays fenced
	// until it is closed.
	Fenced
)

func (k EventKind) String() string {
	switch k {
	case Disconnected:
		return "disconnected"
	case Reconnected:
		return "reconnected"
	case Gap:
		return "gap"
	case Fenced:
		return "fenced"
	}
	return "unknown"
}

// Event is what an adapter tells the engine about the bus.
type Event struct {
	Kind EventKind
	// Room and Node name the room and the publishing node of a Gap.
	Room, Node string
	// Err is the cause, when there is one.
	Err error
}

// Message is one broadcast crossing the adapter.
type Message struct {
	// Room is the room broadcast to. An empty Room reaches every other
	// node, whatever its members.
	Room string
	// Lane says what Frame is: for wire.Reliable an encoded EMIT frame (§5),
	// for wire.Unreliable an encoded datagram (§7.1).
	Lane wire.Lane
	// Frame is the encoded bytes, immutable once published: the adapter
	// and every receiver share them and none may change them.
	Frame []byte
	// Except lists peer ids the broadcast skips, on every node.
	Except []string
	// Origin is the datagram origin of the peer that produced the message
	// (§7.3), or 0 when the server produced it.
	Origin uint32
	// Node is the publishing node's id; Broadcast sets it.
	Node string
}

// Adapter connects one session host to the others.
type Adapter interface {
	// NodeID names this node, distinct among the live nodes.
	NodeID() string
	// HostOrdinal is this node's 10-bit host ordinal (§7.3), below
	// MaxHostOrdinals: 0 for a single-host adapter; for a cross-process
	// adapter distinct among live hosts and quarantined for
	// OrdinalQuarantine before reuse.
	HostOrdinal() uint16

	// Join records that a local peer is in a room, so that broadcasts to
	// the room from other nodes reach this node: those published after
	// Join returned nil. Join is bounded: while the bus is unreachable it
	// keeps the membership (to be restored on reconnection) and returns an
	// error wrapping ErrUnreachable within the adapter's timeout.
	Join(room, peerID string) error
	// Leave records that a local peer left a room. Once no local peer is
	// in it, broadcasts to the room from other nodes stop reaching this
	// node. Leave never waits for the bus.
	Leave(room, peerID string) error

	// Broadcast publishes m to the other nodes, with m.Node set to NodeID.
	// It never delivers to this node: the engine delivers to local members
	// itself. An adapter whose medium echoes a publisher's messages back
	// drops the echo by Node before delivery. Messages one node publishes
	// on the reliable lane arrive at each other node in publishing order.
	//
	// ctx is the bound of one publish: the caller's context, as given to
	// tio.Room.Emit, Room.SendDatagram, Peer.Broadcast and
	// Peer.BroadcastDatagram, after the engine has already delivered to
	// this node's members. A networked adapter must not block past it: it
	// returns an error wrapping ctx.Err() once ctx ends (at once for a
	// context already ended), and the message may then reach some other
	// nodes or none. A nil return means the message was handed to the
	// medium, not that every node received it.
	Broadcast(ctx context.Context, m Message) error
	// Subscribe registers deliver for messages other nodes broadcast to
	// rooms this node has members in (and to Room ""). deliver must not
	// block, must not retain a changed copy of m, and must not call the
	// unsubscribe function it was given or Close. unsubscribe stops
	// delivery: once it returns, deliver is not running and is not called
	// again.
	Subscribe(deliver func(Message)) (unsubscribe func())

	// Events registers on for what the adapter reports about the bus
	// (Disconnected, Reconnected, Gap, Fenced). on must not block and must
	// not call stop or Close. Once stop returns, on is not running and is
	// not called again. An adapter with no bus to lose never calls it.
	Events(on func(Event)) (stop func())

	// Close leaves the bus: delivery stops, the node's ordinal goes into
	// quarantine, and every goroutine the adapter started has ended when
	// Close returns. Later calls return nil.
	Close() error
}
