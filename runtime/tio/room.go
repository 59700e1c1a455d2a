package tio

import (
	"context"
	"slices"

	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/datagram"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Room is a handle on a room of this server, on every node of the
// deployment. Membership is the server's (§6.5): Peer.Join and Peer.Leave.
type Room struct {
	srv  *Server
	name string
}

// Room returns the handle of the named room.
func (srv *Server) Room(name string) *Room { return &Room{srv: srv, name: name} }

// Name is the room's name.
func (r *Room) Name() string { return r.name }

// Members counts this node's peers in the room.
func (r *Room) Members() int {
	r.srv.mu.RLock()
	defer r.srv.mu.RUnlock()
	if m := r.srv.rooms[r.name]; m != nil {
		return len(m.list)
	}
	return 0
}

// peerSet is a set of local peers kept dense, so a broadcast walks a slice
// rather than a map, and each entry holds the peer's emit queue, so a push
// reaches it without loading the peer and its session first. Removal
// swaps the last entry into the gap; at says where each peer is.
type peerSet struct {
	list []peerRef
	at   map[*Peer]int
}

type peerRef struct {
	p *Peer
	q *emitQueue
}

func newPeerSet() *peerSet { return &peerSet{at: make(map[*Peer]int)} }

func (s *peerSet) add(p *Peer) {
	if _, in := s.at[p]; in {
		return
	}
	s.at[p] = len(s.list)
	s.list = append(s.list, peerRef{p: p, q: p.q})
}

func (s *peerSet) remove(p *Peer) {
	i, in := s.at[p]
	if !in {
		return
	}
	delete(s.at, p)
	last := len(s.list) - 1
	if i != last {
		s.list[i] = s.list[last]
		s.at[s.list[i].p] = i
	}
	s.list[last] = peerRef{} // no reference left to a session that ended
	s.list = s.list[:last]
}

// all copies the peers out, for work done after the lock is let go.
func (s *peerSet) all() []*Peer {
	out := make([]*Peer, len(s.list))
	for i, m := range s.list {
		out[i] = m.p
	}
	return out
}

func (srv *Server) addMember(room string, p *Peer) {
	srv.mu.Lock()
	m := srv.rooms[room]
	if m == nil {
		m = newPeerSet()
		srv.rooms[room] = m
	}
	m.add(p)
	srv.mu.Unlock()
}

func (srv *Server) removeMember(room string, p *Peer) {
	srv.mu.Lock()
	if m := srv.rooms[room]; m != nil {
		m.remove(p)
		if len(m.list) == 0 {
			delete(srv.rooms, room)
		}
	}
	srv.mu.Unlock()
}

func exceptIDs(except []*Peer) []string {
	if len(except) == 0 {
		return nil
	}
	ids := make([]string, len(except))
	for i, p := range except {
		ids[i] = p.id
	}
	return ids
}

// Emit sends an event to every member of the room on every node, except the
// listed peers. The frame is encoded once, and the same bytes go to every
// local member's queue and to the adapter. A member whose queue is full
// makes Emit wait for its writer, up to EmitStallTimeout for all of them
// together: called from an emit handler, that stops the sender's emit
// stream being read, so a burst is paced by the members' reading instead
// of closing them. A member whose queue is still full then is closed
// WT_PEER_TOO_SLOW (§9); the others still receive the frame.
//
// Local members are reached first, whatever ctx. ctx bounds the hand-off
// to the other nodes: it is passed to [adapter.Adapter.Broadcast], and
// when it ends first Emit returns the adapter's error (wrapping ctx's) and
// other nodes may not receive the event. A handler's ctx (the session's)
// or a context with a timeout are the usual bounds.
func (r *Room) Emit(ctx context.Context, event uint32, payload []byte, except ...*Peer) error {
	ev, ok := r.srv.contract.byID[event]
	if !ok || ev.Kind != Emit || ev.Lane != wire.Reliable || !ev.sentBy(roleServer) {
		return r.srv.refuseSend(event, ok, Emit, wire.Reliable)
	}
	b, err := wire.AppendFrame(nil, wire.FrameEmit, ev.Payload, ev.ID, payload)
	if err != nil {
		return err
	}
	r.srv.encodes.Add(1)
	f := &frame{b: b}
	// Grown only when a queue is full: the members to wait for, and their
	// queues' take counts when the wait began.
	var full []*Peer
	var marks []uint64
	r.srv.fanOut(r.name, func(p *Peer, q *emitQueue) {
		if q.push(f) == pushFull {
			full = append(full, p)
			marks = append(marks, q.taken())
		}
	}, except, nil)
	if len(full) > 0 {
		// Outside the membership lock: joins and leaves go on meanwhile.
		// One deadline for all: members that stopped reading cost the
		// sender one EmitStallTimeout together, not one each.
		st := startStall(r.srv.opts.Clock, r.srv.opts.EmitStallTimeout)
		for i, p := range full {
			_ = p.pushWithin(f, st, marks[i])
		}
		st.stop()
	}
	return r.srv.adapter.Broadcast(ctx, adapter.Message{
		Room: r.name, Lane: wire.Reliable, Frame: b, Except: exceptIDs(except),
	})
}

// SendDatagram sends an unreliable event to every member of the room on
// every node, except the listed peers, stamped with the server's origin
// (§7.3). The datagram is encoded once. A member whose path cannot carry
// it (§7.4) is skipped, and the call reports WT_DATAGRAM_TOO_LARGE. ctx
// bounds the hand-off to the other nodes, as for [Room.Emit].
func (r *Room) SendDatagram(ctx context.Context, event uint32, payload []byte, except ...*Peer) error {
	return r.sendDatagram(ctx, event, payload, r.srv.origin, &r.srv.seq, except)
}

func (r *Room) sendDatagram(ctx context.Context, event uint32, payload []byte, origin uint32, seq *datagram.Sequencer, except []*Peer) error {
	ev, ok := r.srv.contract.byID[event]
	if !ok || ev.Kind != Emit || ev.Lane != wire.Unreliable || !ev.sentBy(roleServer) {
		return r.srv.refuseSend(event, ok, Emit, wire.Unreliable)
	}
	if len(payload) == 0 {
		return Errorf(wire.ProtocolError, "event '%s': a datagram payload cannot be empty (§7.2)", ev.Name)
	}
	if r.srv.fenced.Load() {
		return errFenced // its origins may soon be another host's (§7.3)
	}
	b := wire.AppendDatagram(make([]byte, 0, wire.DatagramHeaderLen+len(payload)),
		wire.Datagram{Codec: ev.Payload, EventID: ev.ID, Origin: origin, Seq: seq.Next(ev.ID), Payload: payload})
	r.srv.encodes.Add(1)
	skipped := 0
	r.srv.fanOut(r.name, func(p *Peer, _ *emitQueue) {
		if len(payload) > wire.MaxDatagramPayload(p.conn.MaxDatagramSize()) {
			skipped++
			return
		}
		_ = p.queueDatagram(b)
	}, except, nil)
	relayed := origin
	if origin == r.srv.origin {
		relayed = 0
	}
	if err := r.srv.adapter.Broadcast(ctx, adapter.Message{
		Room: r.name, Lane: wire.Unreliable, Frame: b, Except: exceptIDs(except), Origin: relayed,
	}); err != nil {
		return err
	}
	if skipped > 0 {
		return Errorf(wire.DatagramTooLarge, "event '%s': payload of %d bytes exceeds the datagram limit of %d members of room '%s'; they were skipped (§7.4)",
			ev.Name, len(payload), skipped, r.name)
	}
	return nil
}

// refuseSend explains why the server cannot send an event this way.
func (srv *Server) refuseSend(event uint32, known bool, kind Kind, lane wire.Lane) error {
	if !known {
		return Errorf(wire.UnknownEvent, "event id %d is not in contract %s", event, srv.contract.name)
	}
	ev := srv.contract.byID[event]
	if ev.Kind != kind || ev.Lane != lane {
		return Errorf(wire.ProtocolError, "event '%s' is a %s %s event, not a %s %s one", ev.Name, ev.Lane, ev.Kind, lane, kind)
	}
	return Errorf(wire.ProtocolError, "event '%s' is not sent by the server (its contract direction)", ev.Name)
}

// fanOut calls send for every local member of room (every local peer for
// room "") not excluded by peer or by id, with the member's emit queue. It
// runs under the read lock, so membership cannot change mid-broadcast;
// send must not block.
func (srv *Server) fanOut(room string, send func(*Peer, *emitQueue), except []*Peer, exceptIDs []string) {
	srv.mu.RLock()
	defer srv.mu.RUnlock()
	members := srv.rooms[room]
	if room == "" {
		members = srv.peers
	}
	if members == nil {
		return
	}
	for _, m := range members.list {
		if (len(except) > 0 && slices.Contains(except, m.p)) || (len(exceptIDs) > 0 && slices.Contains(exceptIDs, m.p.id)) {
			continue
		}
		send(m.p, m.q)
	}
}

// remote fans a broadcast from another node out to the local members
// (§7.3: the bytes as published, never re-encoded).
func (srv *Server) remote(m adapter.Message) {
	switch m.Lane {
	case wire.Reliable:
		f := &frame{b: m.Frame}
		srv.fanOut(m.Room, func(p *Peer, _ *emitQueue) { _ = p.enqueue(f) }, nil, m.Except)
	case wire.Unreliable:
		srv.fanOut(m.Room, func(p *Peer, _ *emitQueue) {
			if len(m.Frame)-wire.DatagramHeaderLen <= wire.MaxDatagramPayload(p.conn.MaxDatagramSize()) {
				_ = p.queueDatagram(m.Frame)
			}
		}, nil, m.Except)
	}
}

// Close reasons of sessions the server ends for the adapter.
const (
	fencedReason = "this host lost its host ordinal lease; reconnect to another host"
	gapReason    = "broadcasts from another host to a room of this session were lost; reconnect to resync"
)

var errFenced = Errorf(wire.SessionClosed, "this host lost its host ordinal lease (§7.3) and accepts no session: restart it once NATS is reachable")

// adapterEvent acts on what the adapter reports, then tells the
// application:
//   - Gap: this host's members of the room missed broadcasts another host
//     made, and nothing can replay them, so their sessions are closed
//     (WT_NO_ERROR, gapReason) and their clients reconnect and resync
//     rather than run on silently diverged state. Room "" means every
//     session.
//   - Fenced: another host may soon be issued this host's ordinal (§7.3),
//     so no origin is issued any more: every session is closed
//     (WT_NO_ERROR, fencedReason) and new ones are refused.
//   - Disconnected, Reconnected: nothing to do; local delivery goes on and
//     failed broadcasts already returned their error.
func (srv *Server) adapterEvent(e adapter.Event) {
	srv.opts.Metrics.AdapterEvent(e.Kind.String())
	srv.logAdapterEvent(e)
	switch e.Kind {
	case adapter.Gap:
		var lost []*Peer
		srv.fanOut(e.Room, func(p *Peer, _ *emitQueue) { lost = append(lost, p) }, nil, nil)
		for _, p := range lost {
			p.closeWith(wire.CloseNoError, gapReason)
		}
	case adapter.Fenced:
		srv.fenced.Store(true)
		srv.mu.RLock()
		peers := srv.peers.all()
		srv.mu.RUnlock()
		for _, p := range peers {
			p.closeWith(wire.CloseNoError, fencedReason)
		}
	}
	if h := srv.opts.OnAdapterEvent; h != nil {
		h(e)
	}
}
