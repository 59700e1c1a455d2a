package typed

import (
	"context"

	"github.com/transport-io/tiogen/runtime/tio"
)

// The bases of the generated Client, Peer, Room and Server. A generated
// type embeds its base and adds the contract's typed methods; the base
// holds the runtime value unexported and forwards a fixed set of its
// methods, the way connect-go's generated clients hold theirs. So the typed
// API is the whole API, and the untyped one (Emit, Call, Stream, On by
// event id) is reached only through Runtime: a server's peer never shows a
// Call it cannot make (§3.2). The generator reserves these method names
// (gen/golang), so a contract name never shadows one.

// ClientBase is what every generated Client embeds: the session methods of
// a runtime client.
type ClientBase struct{ rt *tio.Client }

// NewClientBase wraps c.
func NewClientBase(c *tio.Client) ClientBase { return ClientBase{c} }

// Close ends the session with a close code and reason: [tio.Client.Close].
func (b ClientBase) Close(code tio.Code, reason string) error { return b.rt.Close(code, reason) }

// Done is closed once the session has ended: [tio.Client.Done].
func (b ClientBase) Done() <-chan struct{} { return b.rt.Done() }

// Wait blocks until the session has ended and its goroutines have returned,
// then reports how it ended: [tio.Client.Wait].
func (b ClientBase) Wait() error { return b.rt.Wait() }

// Err reports how the session ended, nil while it runs: [tio.Client.Err].
func (b ClientBase) Err() error { return b.rt.Err() }

// Rooms lists the rooms of this session: [tio.Client.Rooms].
func (b ClientBase) Rooms() []string { return b.rt.Rooms() }

// Stats returns the session's counters now: [tio.Client.Stats].
func (b ClientBase) Stats() tio.Stats { return b.rt.Stats() }

// WaitEmit waits while the emit queue is above its low-water mark:
// [tio.Client.WaitEmit].
func (b ClientBase) WaitEmit(ctx context.Context) error { return b.rt.WaitEmit(ctx) }

// Runtime is the runtime client, for the rare code that sends or receives
// by event id: [tio.Client].
func (b ClientBase) Runtime() *tio.Client { return b.rt }

// PeerBase is what every generated Peer embeds: the session methods of a
// server's peer.
type PeerBase struct{ rt *tio.Peer }

// NewPeerBase wraps p.
func NewPeerBase(p *tio.Peer) PeerBase { return PeerBase{p} }

// ID names the peer, distinct across the nodes of a deployment:
// [tio.Peer.ID].
func (b PeerBase) ID() string { return b.rt.ID() }

// Data is what the listener's authorize attached to the peer:
// [tio.Peer.Data].
func (b PeerBase) Data() any { return b.rt.Data() }

// Join puts the peer in a room: [tio.Peer.Join].
func (b PeerBase) Join(room string) error { return b.rt.Join(room) }

// Leave takes the peer out of a room: [tio.Peer.Leave].
func (b PeerBase) Leave(room string) error { return b.rt.Leave(room) }

// Rooms lists the rooms of this session: [tio.Peer.Rooms].
func (b PeerBase) Rooms() []string { return b.rt.Rooms() }

// InRoom reports whether the peer is in room: [tio.Peer.InRoom].
func (b PeerBase) InRoom(room string) bool { return b.rt.InRoom(room) }

// Close ends the session with a close code and reason: [tio.Peer.Close].
func (b PeerBase) Close(code tio.Code, reason string) error { return b.rt.Close(code, reason) }

// Done is closed once the session has ended: [tio.Peer.Done].
func (b PeerBase) Done() <-chan struct{} { return b.rt.Done() }

// Err reports how the session ended, nil while it runs: [tio.Peer.Err].
func (b PeerBase) Err() error { return b.rt.Err() }

// Stats returns the session's counters now: [tio.Peer.Stats].
func (b PeerBase) Stats() tio.Stats { return b.rt.Stats() }

// WaitEmit waits while the emit queue is above its low-water mark:
// [tio.Peer.WaitEmit].
func (b PeerBase) WaitEmit(ctx context.Context) error { return b.rt.WaitEmit(ctx) }

// Runtime is the runtime peer, for the rare code that sends by event id:
// [tio.Peer].
func (b PeerBase) Runtime() *tio.Peer { return b.rt }

// RoomBase is what every generated Room embeds.
type RoomBase struct{ rt *tio.Room }

// NewRoomBase wraps r.
func NewRoomBase(r *tio.Room) RoomBase { return RoomBase{r} }

// Name is the room's name: [tio.Room.Name].
func (b RoomBase) Name() string { return b.rt.Name() }

// Members counts this node's peers in the room: [tio.Room.Members].
func (b RoomBase) Members() int { return b.rt.Members() }

// Runtime is the runtime room, for the rare code that broadcasts by event
// id: [tio.Room].
func (b RoomBase) Runtime() *tio.Room { return b.rt }

// ServerBase is what every generated Server embeds.
type ServerBase struct{ rt *tio.Server }

// NewServerBase wraps s.
func NewServerBase(s *tio.Server) ServerBase { return ServerBase{s} }

// Close stops the server: [tio.Server.Close].
func (b ServerBase) Close() error { return b.rt.Close() }

// Runtime is the runtime server: what a listener serves
// (endpoint.Listen(srv.Runtime(), ...)), and the way to send by event id:
// [tio.Server].
func (b ServerBase) Runtime() *tio.Server { return b.rt }
