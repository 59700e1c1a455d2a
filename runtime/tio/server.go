package tio

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/adapter/memory"
	"github.com/transport-io/tiogen/runtime/datagram"
	"github.com/transport-io/tiogen/runtime/metrics"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// EmitHandler receives an emit or a datagram from a peer. ctx is the
// session's: it ends when the session ends, so work the handler starts for
// the peer can stop with it. The handler runs on the session's reader, in
// order: return quickly. Returning an *Error with WT_VALIDATION_FAILED
// counts the message as validationDropped.
type EmitHandler func(ctx context.Context, p *Peer, payload []byte) error

// CallHandler answers a returns call (§3.2). An error becomes the
// CALL_ERROR: an *Error keeps its code and message, any other error is
// WT_HANDLER_ERROR with its text (§6.4). ctx ends when the caller cancels
// or the session ends.
type CallHandler func(ctx context.Context, p *Peer, req []byte) ([]byte, error)

// StreamHandler answers a yields call (§3.2) by calling send once per
// element. send waits while the caller's credit is zero (§6.6) and fails
// once the caller cancelled or the session ended; the handler then returns.
// An error returned after elements is sent after them as CALL_ERROR (§6.4).
// send copies the element, so its slice may be reused once send returns;
// elements sent while the previous ones are still being written go out
// together in one stream Write, and all of them before the outcome.
type StreamHandler func(ctx context.Context, p *Peer, req []byte, send func([]byte) error) error

// ServerOptions shape a Server; the zero value is a single host with the
// spec's defaults.
type ServerOptions struct {
	Options
	// Adapter connects this host to the others; nil is a single host
	// (memory adapter, host ordinal 0), which the Server closes on Close.
	Adapter adapter.Adapter
	// OnSession runs once a peer's handshake is accepted, before any later
	// frame of the peer is dispatched: the place to join rooms.
	OnSession func(p *Peer)
	// OnSessionEnd runs once a peer's session has ended and its rooms are
	// left, with how it ended.
	OnSessionEnd func(p *Peer, err error)
	// OnHandlerError receives errors emit handlers return, other than
	// WT_VALIDATION_FAILED, which is counted instead.
	OnHandlerError func(p *Peer, event string, err error)
	// OnAdapterEvent receives what the adapter reports (a lost or regained
	// bus, lost broadcasts, a lost host ordinal) after the server acted on
	// it: the place to log and alert. It must not block.
	OnAdapterEvent func(adapter.Event)
	// MaxRequestBytesTotal bounds the bytes the incoming call requests of
	// all sessions hold together (each session's is MaxRequestBytes); 0
	// means DefaultMaxRequestBytesTotal.
	MaxRequestBytesTotal int
	// Metrics, when set, counts this server's sessions, frames, drops,
	// calls, limit hits and adapter events (runtime/metrics); nil counts
	// nothing. The listeners endpoint.Listen builds count their refusals
	// on the same Metrics.
	Metrics *metrics.Metrics
	// Logger receives the engine's log lines, each of a session with its
	// "session" attribute (Peer.ID); nil is slog.Default(). Query strings
	// and payloads are never logged.
	Logger *slog.Logger
}

// Server serves one contract: it runs a session per Conn (Serve), answers
// calls with its handlers and owns the rooms of this host.
type Server struct {
	contract *Contract
	opts     ServerOptions
	hsFrame  []byte
	adapter  adapter.Adapter
	ownsAdpt bool
	unsub    func()
	unevents func()
	// fenced is set once the adapter can no longer vouch for this host's
	// ordinal (§7.3): no origin is issued after it.
	fenced  atomic.Bool
	origins *datagram.OriginAllocator
	// origin and seq stamp what the server sends as itself (§7.3).
	origin uint32
	seq    datagram.Sequencer
	nextID atomic.Uint64

	// handlers is read once per frame and call by every session's reader
	// without a lock, so sessions on many cores share no written cache
	// line; a registration replaces the whole set under hmu.
	hmu      sync.Mutex
	handlers atomic.Pointer[handlerSet]

	mu     sync.RWMutex
	peers  *peerSet
	rooms  map[string]*peerSet
	closed bool

	// requestBytes bounds the bytes all sessions' call requests hold.
	requestBytes *byteBudget
	metrics      serverMetrics
	log          *slog.Logger

	// encodes counts room broadcasts encoded, so a test can assert each
	// was encoded exactly once whatever the room's size.
	encodes atomic.Int64
}

// NewServer returns a server for contract c.
func NewServer(c *Contract, opts ServerOptions) (*Server, error) {
	opts.Options = opts.Options.withDefaults()
	if opts.MaxRequestBytesTotal <= 0 {
		opts.MaxRequestBytesTotal = DefaultMaxRequestBytesTotal
	}
	hs, err := handshakeFrame(c, opts.Features)
	if err != nil {
		return nil, err
	}
	srv := &Server{
		contract: c,
		opts:     opts,
		hsFrame:  hs,
		adapter:  opts.Adapter,
		peers:    newPeerSet(),
		rooms:    make(map[string]*peerSet),

		requestBytes: newByteBudget(opts.MaxRequestBytesTotal),
	}
	if srv.adapter == nil {
		srv.adapter, srv.ownsAdpt = memory.New(), true
	}
	if srv.origins, err = datagram.NewOriginAllocator(srv.adapter.HostOrdinal(), opts.Clock); err == nil {
		srv.origin, err = srv.origins.Allocate()
	}
	if err != nil {
		if srv.ownsAdpt {
			_ = srv.adapter.Close()
		}
		return nil, err
	}
	srv.log = newServerLog(opts.Logger)
	srv.metrics = newServerMetrics(srv, opts.Metrics)
	srv.unsub = srv.adapter.Subscribe(srv.remote)
	srv.unevents = srv.adapter.Events(srv.adapterEvent)
	return srv, nil
}

// Contract is the server's contract.
func (srv *Server) Contract() *Contract { return srv.contract }

// Options are the session options every session of this server runs with,
// defaults applied: a listener reads its per-session limits (MaxCalls,
// HandshakeTimeout) from here, so they are configured once.
func (srv *Server) Options() Options { return srv.opts.Options }

func (srv *Server) mustEvent(id uint32, kind Kind) *Event {
	ev, ok := srv.contract.byID[id]
	if !ok {
		panic(fmt.Sprintf("tio: event id %d is not in contract %s", id, srv.contract.name))
	}
	if ev.Kind != kind {
		panic(fmt.Sprintf("tio: event '%s' is a %s event, not %s", ev.Name, ev.Kind, kind))
	}
	if !ev.sentBy(roleClient) {
		panic(fmt.Sprintf("tio: event '%s' is sent by the server only; the server does not receive it", ev.Name))
	}
	return ev
}

// HandleEmit registers the handler of an emit or datagram event the client
// sends. It panics for an event the server cannot receive. The payload is
// the engine's read buffer: valid until the handler returns.
func (srv *Server) HandleEmit(event uint32, h EmitHandler) {
	srv.mustEvent(event, Emit)
	srv.register(func(hs *handlerSet) { hs.emits[event] = h })
}

// HandleCall registers the handler of a returns event. The request is the
// handler's own: it may keep it past its return.
func (srv *Server) HandleCall(event uint32, h CallHandler) {
	srv.mustEvent(event, Returns)
	srv.register(func(hs *handlerSet) { hs.calls[event] = h })
}

// HandleStream registers the handler of a yields event. The request is the
// handler's own, as for HandleCall.
func (srv *Server) HandleStream(event uint32, h StreamHandler) {
	srv.mustEvent(event, Yields)
	srv.register(func(hs *handlerSet) { hs.streams[event] = h })
}

// handlerSet is the server's registered handlers, immutable once
// published.
type handlerSet struct {
	emits   map[uint32]EmitHandler
	calls   map[uint32]CallHandler
	streams map[uint32]StreamHandler
}

// noHandlers is the set before any registration.
var noHandlers handlerSet

// handlerSet returns the handlers registered now.
func (srv *Server) handlerSet() *handlerSet {
	if hs := srv.handlers.Load(); hs != nil {
		return hs
	}
	return &noHandlers
}

// register publishes a copy of the handler set with change applied.
func (srv *Server) register(change func(*handlerSet)) {
	srv.hmu.Lock()
	defer srv.hmu.Unlock()
	old := srv.handlerSet()
	hs := &handlerSet{emits: withRoom(old.emits), calls: withRoom(old.calls), streams: withRoom(old.streams)}
	change(hs)
	srv.handlers.Store(hs)
}

// withRoom is a copy of m that a registration may add to.
func withRoom[M ~map[K]V, K comparable, V any](m M) M {
	c := make(M, len(m)+1)
	maps.Copy(c, m)
	return c
}

// Serve runs one session on conn until it ends and returns how it ended:
// an *Error with the close code, WT_NO_ERROR for a lost connection (§11:
// no code was received; its SessionEnd says Lost), wrapping a *SessionEnd.
// data is what the listener's authorize attached (Peer.Data). It matches
// transport.SessionHandler: func(c, r, d) { srv.Serve(c, d) }.
func (srv *Server) Serve(conn transport.Conn, data any) error {
	p := &Peer{srv: srv, data: data} // rooms is made by the first join
	p.id = fmt.Sprintf("%s/%d", srv.adapter.NodeID(), srv.nextID.Add(1))
	if srv.fenced.Load() {
		_ = conn.Close(wire.CloseNoError, fencedReason)
		return errFenced
	}
	// §7.3: the peer's origin is allocated at establishment, before any
	// datagram; at exhaustion the session is refused, never wrapped.
	origin, err := srv.origins.Allocate()
	if err != nil {
		_ = conn.Close(wire.CloseNoError, wire.CutReason(err.Error(), wire.MaxWebSocketReason))
		return err
	}
	defer srv.origins.Release(origin)
	p.origin = origin
	p.session = newSession(roleServer, conn, srv.contract, &srv.opts.Options, &srv.hsFrame, p, srv.origin, &srv.seq)
	p.session.metrics = srv.opts.Metrics
	srv.mu.Lock()
	// fenced is read under the lock that Fenced's closing takes, so a
	// session either sees it here or is among those closed.
	closed, fenced := srv.closed, srv.fenced.Load()
	if !closed && !fenced {
		srv.peers.add(p)
	}
	srv.mu.Unlock()
	if closed {
		_ = conn.Close(wire.CloseNoError, ShutdownReason)
		return Errorf(wire.SessionClosed, "the server is closed")
	}
	if fenced {
		_ = conn.Close(wire.CloseNoError, fencedReason)
		return errFenced
	}
	srv.opts.Metrics.Started(metricsMapping(p.mapping))
	began := p.opts.Clock.Now()
	p.logAt(slog.LevelDebug, "session started")
	if p.start(true) {
		p.acceptCalls()
	}
	<-p.ended.Done()
	p.wg.Wait()
	srv.opts.Metrics.Ended(metricsMapping(p.mapping), endCode(p.err), &p.traffic, p.drops(), func() {
		srv.mu.Lock()
		srv.peers.remove(p)
		srv.mu.Unlock()
	})
	p.logEnd(began)
	p.leaveAll()
	if srv.opts.OnSessionEnd != nil {
		srv.opts.OnSessionEnd(p, p.err)
	}
	return p.err
}

// Close closes every session with WT_NO_ERROR and ShutdownReason, refuses new ones and leaves
// the adapter (closing it if the server made it). Serve calls return as
// their sessions end.
func (srv *Server) Close() error {
	srv.mu.Lock()
	if srv.closed {
		srv.mu.Unlock()
		return nil
	}
	srv.closed = true
	peers := srv.peers.all()
	srv.mu.Unlock()
	for _, p := range peers {
		p.closeWith(wire.CloseNoError, ShutdownReason)
	}
	srv.unsub()
	srv.unevents()
	srv.metrics.remove()
	if srv.ownsAdpt {
		return srv.adapter.Close()
	}
	return nil
}

// Peer is the server's side of one session.
type Peer struct {
	*session
	srv    *Server
	id     string
	data   any
	origin uint32
	// seq numbers the datagrams relayed under this peer's origin.
	seq datagram.Sequencer

	mu    sync.Mutex
	rooms map[string]struct{}
	left  bool // set once the session ended and its rooms were left
}

// ID names the peer, distinct across the nodes of a deployment.
func (p *Peer) ID() string { return p.id }

// Data is what the listener's authorize attached to this peer.
func (p *Peer) Data() any { return p.data }

// Origin is the datagram origin allocated to this peer (§7.3).
func (p *Peer) Origin() uint32 { return p.origin }

func (p *Peer) established() {
	if h := p.srv.opts.OnSession; h != nil {
		h(p)
	}
}

func (p *Peer) roomFrame(string, bool) {} // a client-sent JOIN closes the session before this

func (p *Peer) deliver(ev *Event, payload []byte) error {
	h := p.srv.handlerSet().emits[ev.ID]
	if h == nil {
		return nil
	}
	err := p.runEmitHandler(h, ev, payload)
	if err != nil && wire.CodeOf(err) != wire.ValidationFailed {
		p.srv.opts.Metrics.HandlerError(ev.Name)
		if p.srv.opts.OnHandlerError != nil {
			p.srv.opts.OnHandlerError(p, ev.Name, err)
		}
	}
	return err
}

// runEmitHandler calls h, and recovers its panic as net/http recovers a
// handler's: one peer's payload that trips a bug must not end the process
// and every other session with it. The panic is logged at Error and
// reported as a WT_HANDLER_ERROR handler error; the session reads on.
func (p *Peer) runEmitHandler(h EmitHandler, ev *Event, payload []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			p.logEmitPanic(ev, r)
			err = wire.Errorf(wire.HandlerError, "the handler of '%s' panicked: %v", ev.Name, r)
		}
	}()
	return h(p.ctx, p, payload)
}

func (p *Peer) serveReturns(ctx context.Context, ev *Event, req []byte) ([]byte, bool, error) {
	h := p.srv.handlerSet().calls[ev.ID]
	if h == nil {
		return nil, false, nil
	}
	resp, err := h(ctx, p, req)
	return resp, true, err
}

func (p *Peer) serveYields(ctx context.Context, ev *Event, req []byte, send func([]byte) error) (bool, error) {
	h := p.srv.handlerSet().streams[ev.ID]
	if h == nil {
		return false, nil
	}
	return true, h(ctx, p, req, send)
}

// Join puts the peer in a room and sends it a JOIN frame (§6.5). Joining a
// room it is in does nothing.
func (p *Peer) Join(room string) error {
	return p.membership(room, true)
}

// Leave takes the peer out of a room and sends it a LEAVE frame (§6.5).
// Leaving a room it is not in does nothing.
func (p *Peer) Leave(room string) error {
	return p.membership(room, false)
}

func (p *Peer) membership(room string, in bool) error {
	if room == "" {
		return Errorf(wire.ProtocolError, "a room name cannot be empty (§6.5)")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.left || p.isEnded() {
		return p.closedError()
	}
	if _, member := p.rooms[room]; member == in {
		return nil
	}
	t := wire.FrameLeave
	if in {
		t = wire.FrameJoin
	}
	f := getFrame()
	var err error
	if f.b, err = wire.AppendFrame(f.b[:0], t, wire.CodecJSON, 0, wire.AppendRoom(nil, room)); err != nil {
		f.release()
		return err
	}
	if in {
		if p.rooms == nil {
			p.rooms = make(map[string]struct{})
		}
		p.rooms[room] = struct{}{}
		p.srv.addMember(room, p)
		err = p.srv.adapter.Join(room, p.id)
	} else {
		delete(p.rooms, room)
		p.srv.removeMember(room, p)
		err = p.srv.adapter.Leave(room, p.id)
	}
	if qerr := p.enqueue(f); qerr != nil {
		return qerr
	}
	return err
}

// Rooms lists the rooms the peer is in, sorted.
func (p *Peer) Rooms() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.rooms))
	for r := range p.rooms {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// InRoom reports whether the peer is in room.
func (p *Peer) InRoom(room string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.rooms[room]
	return ok
}

// leaveAll leaves every room once the session has ended (§11: membership
// is not resumed).
func (p *Peer) leaveAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.left = true
	for room := range p.rooms {
		p.srv.removeMember(room, p)
		_ = p.srv.adapter.Leave(room, p.id)
	}
	clear(p.rooms)
}

// Broadcast emits an event to every other member of a room the peer is in,
// on every node; ctx bounds the hand-off to the adapter, as for
// [Room.Emit]. A peer not in the room gets WT_ROOM_NOT_JOINED (§10.3).
func (p *Peer) Broadcast(ctx context.Context, room string, event uint32, payload []byte) error {
	if !p.InRoom(room) {
		return Errorf(wire.RoomNotJoined, "peer %s broadcast to room '%s' without being in it", p.id, room)
	}
	return p.srv.Room(room).Emit(ctx, event, payload, p)
}

// BroadcastDatagram sends an unreliable event to every other member of a
// room the peer is in, stamped with this peer's origin and sequence (§7.3).
// A peer not in the room gets WT_ROOM_NOT_JOINED (§10.3). ctx bounds the
// hand-off to the adapter, as for [Room.Emit].
func (p *Peer) BroadcastDatagram(ctx context.Context, room string, event uint32, payload []byte) error {
	if !p.InRoom(room) {
		return Errorf(wire.RoomNotJoined, "peer %s broadcast to room '%s' without being in it", p.id, room)
	}
	return p.srv.Room(room).sendDatagram(ctx, event, payload, p.origin, &p.seq, []*Peer{p})
}
