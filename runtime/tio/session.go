package tio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/datagram"
	"github.com/transport-io/tiogen/runtime/internal/latch"
	"github.com/transport-io/tiogen/runtime/metrics"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// owner is the role-specific side of a session: the server's Peer or the
// Client. The session calls it from its reader goroutines.
type owner interface {
	// deliver hands an emit's or a datagram's payload to the application.
	// A *Error with WT_VALIDATION_FAILED is counted as validationDropped.
	deliver(ev *Event, payload []byte) error
	// established runs once the peer's handshake is accepted, before any
	// later frame of the peer is dispatched.
	established()
	// roomFrame applies a JOIN (in) or LEAVE frame to the room view.
	roomFrame(room string, in bool)
	// serveReturns and serveYields run a call's handler; ok is false when
	// this side has none for ev.
	serveReturns(ctx context.Context, ev *Event, req []byte) (resp []byte, ok bool, err error)
	serveYields(ctx context.Context, ev *Event, req []byte, send func([]byte) error) (ok bool, err error)
}

type hsState uint8

const (
	hsPending hsState = iota
	hsAccepted
	hsFailed
)

// session is one transport-io session, either role. Its goroutines: the
// close watcher (a callback instead where the transport offers one), the
// emit reader, and the emit writer while there is something to write (it
// writes the handshake, then runs only from a push onto an empty queue
// until the queue stays empty, see writeRun); on WebTransport also the
// datagram receiver, the call acceptor (on a server, the goroutine of
// Serve; on a client's connection, which lets the server open no call, it
// returns at once), and the datagram sender once a datagram is queued;
// plus one per call being answered (its handler's), a
// second (the stream watcher) for a streaming call or a returns request
// whose FIN had not arrived with it, and a third, the response writer, for
// a streaming call once it sends. All of them end once the Conn's Done
// fires.
type session struct {
	// The small fields share one word: every byte of an idle session's
	// structure counts, a thousand times over (its size class is 416 B).
	role    role
	mapping transport.Mapping
	hsState hsState // under mu
	// hsSent says this side's handshake was written, or could not be;
	// hsSentWait, made only for a close that waits for it, is closed then
	// (both under mu).
	hsSent bool

	conn     transport.Conn
	contract *Contract
	// opts, defaults applied, are shared by every session of a server;
	// opts.Clock drives every timer of the session.
	opts *Options
	// hsFrame is this side's handshake until it is written: a server's,
	// shared by its sessions, or a client's own. By pointer, as features
	// below, so the session takes 416 B.
	hsFrame *[]byte
	owner   owner

	// ctx ends when the session ends; every handler context derives from
	// it. It is the transport's own where it offers one
	// (transport.ContextConn), and cancel then does nothing.
	ctx    context.Context
	cancel context.CancelFunc

	q *emitQueue
	// emitStream is this side's emit stream once its handshake is written;
	// the writer of the moment (writeRun) writes on it, and linger is its
	// timer, made on the first run past the handshake.
	emitStream transport.SendStream
	linger     *time.Timer

	// mu guards the handshake's state and the datagram lane's start,
	// probe and shutdown.
	mu         sync.Mutex
	hsDone     latch.Latch // fired once the peer's handshake is accepted
	hsSentWait chan struct{}
	hsTimer    clock.Timer
	// features are those agreed with the peer (§4.4), nil for none.
	features *[]string

	// ended fires once the session ended and err is set. Neither latch
	// holds a channel unless something waits on it.
	ended latch.Latch
	err   *Error

	// answers is the state of the calls this side answers, made by the
	// first it accepts (answerState); callWatch, which abandons this side's
	// calls once their context ends, is made by the first it makes
	// (callWatcher). A session that makes or answers none, as a server
	// makes none, holds neither.
	answers   atomic.Pointer[answering]
	callWatch atomic.Pointer[callWatch]
	// stats is made by the first message dropped and counted (counted).
	stats atomic.Pointer[counters]
	dg    datagramLane
	// traffic counts frames and bytes per lane; metrics, on a server with
	// ServerOptions.Metrics, counts limit hits (nil counts nothing).
	traffic metrics.Traffic
	metrics *metrics.Metrics

	wg sync.WaitGroup
}

// counted is the session's counters, made by the first message it counts.
func (s *session) counted() *counters {
	if c := s.stats.Load(); c != nil {
		return c
	}
	s.stats.CompareAndSwap(nil, new(counters))
	return s.stats.Load()
}

// counters are a session's §9 and per-message counters.
type counters struct {
	earlyDiscarded    atomic.Int64
	staleReceived     atomic.Int64
	unknownDropped    atomic.Int64
	validationDropped atomic.Int64
	directionDropped  atomic.Int64
	malformedDropped  atomic.Int64
}

// Stats are one session's counters.
type Stats struct {
	// EmitQueueDepth is the frames waiting in the emit queue now (§9).
	EmitQueueDepth int
	// OverflowDropped counts unreliable frames dropped oldest-first from the
	// full send ring; StaleDropped those dropped at dequeue past their TTL
	// (§9). They are counted separately on purpose.
	OverflowDropped int64
	StaleDropped    int64
	// StaleReceived counts datagrams discarded by last-write-wins (§7.3).
	StaleReceived int64
	// UnknownDropped, ValidationDropped and DirectionDropped count emits and
	// datagrams dropped for an unknown event id (§5.4), a payload the
	// handler rejected with WT_VALIDATION_FAILED, and an event the sender's
	// side does not send.
	UnknownDropped    int64
	ValidationDropped int64
	DirectionDropped  int64
	// MalformedDropped counts datagrams with a reserved codec, event id 0 or
	// an empty payload (§7.2), which are discarded.
	MalformedDropped int64
	// EarlyDiscarded counts datagrams discarded because they arrived before
	// the peer's handshake (§7.5).
	EarlyDiscarded int64
}

// newSession prepares a session with opts, whose defaults are applied
// (Options.withDefaults) and which nothing changes after; origin and seq
// stamp the datagrams this side sends as itself (§7.3).
func newSession(r role, conn transport.Conn, c *Contract, opts *Options, hsFrame *[]byte, o owner, origin uint32, seq *datagram.Sequencer) *session {
	s := &session{
		role:     r,
		conn:     conn,
		mapping:  conn.Mapping(),
		contract: c,
		opts:     opts,
		hsFrame:  hsFrame,
		owner:    o,
		q:        newEmitQueue(EmitQueueFrames, opts.EmitFlushDelay),
	}
	if cc, ok := conn.(transport.ContextConn); ok {
		// The transport's context already ends with the session: a
		// context of the engine's own would cost every idle session one,
		// its cancel and the done channel its blocked calls make.
		s.ctx, s.cancel = cc.Context(), func() {}
	} else {
		s.ctx, s.cancel = context.WithCancel(context.Background())
	}
	s.dg = newDatagramLane(s, origin, seq)
	return s
}

// handshakeFrame encodes frame 0 for a contract and feature set (§4.1). It
// fails only for a table and feature list over the 1 MiB frame cap (§5.1).
func handshakeFrame(c *Contract, features []string) ([]byte, error) {
	payload := wire.AppendHandshake(nil, wire.Handshake{V: wire.ProtocolVersion, Feat: features, Events: c.table})
	b, err := wire.AppendFrame(nil, wire.FrameHandshake, wire.CodecJSON, 0, payload)
	if err != nil {
		return nil, fmt.Errorf("contract %s: the handshake does not fit a frame: %w", c.name, err)
	}
	return b, nil
}

// start runs the session's goroutines. It returns at once. With
// acceptHere, which only a server's Serve passes, the call acceptor is
// left to the caller's goroutine: start reports whether the caller then
// runs acceptCalls (over WebTransport), so the goroutine that serves the
// session is not one more that waits for its end.
func (s *session) start(acceptHere bool) (accept bool) {
	// The watcher starts last, once every field it tears down is set.
	s.wg.Add(1)
	defer s.startWatch()
	// §2, §7.6: on the WebSocket mapping a contract with an undeclared
	// unreliable event has no session, refused before the handshake.
	if s.mapping == transport.WebSocket && s.contract.firstUndeclared != "" {
		s.closeWith(wire.CloseReliabilityRefused, fmt.Sprintf(
			"'%s' is unreliable with no fallback", s.contract.firstUndeclared))
		return false
	}
	s.mu.Lock()
	s.hsTimer = s.opts.Clock.AfterFunc(s.opts.HandshakeTimeout, s.handshakeExpired)
	s.mu.Unlock()
	s.wg.Add(2)
	go s.writeLoop()
	go s.readLoop()
	if s.mapping == transport.WebTransport {
		s.wg.Add(1)
		go s.receiveDatagrams()
		// Calls are the client's to make, but a client still answers a
		// call the server opens (a CALL_ERROR), rather than leaving it,
		// where its transport lets the server open one; a WebTransport
		// client's grants none, and its acceptor returns at once
		// (transport.ErrNoInboundCalls). The acceptor is no watcher:
		// AcceptCall on WebTransport returns with its context, which the
		// watcher ends, and not always once Done fires.
		s.wg.Add(1)
		if acceptHere {
			return true
		}
		go s.acceptCalls()
	}
	return false
}

// startWatch runs watch once the transport's Done fires: as the
// transport's callback where it offers one (transport.DoneNotifier), so an
// idle session has no goroutine waiting for its end, else on a goroutine
// of its own.
func (s *session) startWatch() {
	if n, ok := s.conn.(transport.DoneNotifier); ok {
		n.AfterDone(s.watch)
		return
	}
	go s.watch()
}

// watch ends the session once the transport reports it over, for whatever
// reason (§11): a close from either side or a lost connection.
func (s *session) watch() {
	defer s.wg.Done()
	<-s.conn.Done()
	info := s.conn.CloseInfo()
	s.err = closeError(info.Code, info.Reason, info.Remote, info.Lost)
	s.cancel()
	s.q.shutdown()
	s.dg.shutdown()
	// A handshake already read off the stream when the close arrived is
	// still accepted: it came first on the wire, and the server's
	// OnSession then precedes its OnSessionEnd for a peer that did
	// handshake. Only the deadline fails the handshake.
	s.mu.Lock()
	if s.hsTimer != nil {
		s.hsTimer.Stop()
	}
	s.mu.Unlock()
	s.ended.Fire()
}

func (s *session) handshakeExpired() {
	s.mu.Lock()
	expired := s.hsState == hsPending
	if expired {
		s.hsState = hsFailed
	}
	s.mu.Unlock()
	if expired {
		s.metrics.Hit(metrics.LimitHandshakeTimeout)
		s.closeWith(wire.CloseHandshakeTimeout, fmt.Sprintf("no handshake in %d ms", s.opts.HandshakeTimeout.Milliseconds()))
	}
}

// closeWith closes the session with a §10.2 code; the first close wins.
func (s *session) closeWith(code uint32, reason string) {
	_ = s.conn.Close(code, wire.CutReason(reason, wire.MaxCloseReason))
}

// protocolError closes the session for a fault on the emit lane or the
// datagram lane (§5.5): the error's own §10.2 code, else WT_PROTOCOL_ERROR.
func (s *session) protocolError(err error) {
	code := wire.CloseProtocolError
	if n, ok := wire.CodeOf(err).SessionCode(); ok {
		code = n
	}
	msg := err.Error()
	var e *Error
	if errors.As(err, &e) {
		msg = e.Message
	}
	s.closeWith(code, msg)
}

// closeSession is Client.Close and Peer.Close.
func (s *session) closeSession(code Code, reason string) error {
	n, ok := code.SessionCode()
	if !ok {
		return Errorf(ProtocolError, "%s is not a session close code (§10.2)", code)
	}
	s.awaitHandshakeSent()
	s.closeWith(n, reason)
	<-s.conn.Released()
	return nil
}

// awaitHandshakeSent waits until the writer has handed this side's
// handshake to the transport, the session ended, or handshakeSendBound
// passed: a handshake stuck behind flow control never holds a close for
// longer. The bound is no spec timer, so it runs on the wall clock, and a
// test's fake clock cannot hold a close for ever.
func (s *session) awaitHandshakeSent() {
	s.mu.Lock()
	if s.hsSent {
		s.mu.Unlock()
		return
	}
	if s.hsSentWait == nil {
		s.hsSentWait = make(chan struct{})
	}
	sent := s.hsSentWait
	s.mu.Unlock()
	if s.ended.Fired() {
		return
	}
	t := time.NewTimer(handshakeSendBound)
	defer t.Stop()
	select {
	case <-sent:
	case <-s.ended.Done():
	case <-t.C:
	}
}

// handshakeSent marks this side's handshake written, or failed.
func (s *session) handshakeSent() {
	s.mu.Lock()
	s.hsSent = true
	if s.hsSentWait != nil {
		close(s.hsSentWait)
	}
	s.mu.Unlock()
}

// handshakeSendBound bounds how long Close waits for this side's handshake
// to be written.
const handshakeSendBound = time.Second

// endErr is Client.Err and Peer.Err.
func (s *session) endErr() error {
	if s.ended.Fired() {
		return s.err
	}
	return nil
}

// agreedFeatures is Client.Features and Peer.Features.
func (s *session) agreedFeatures() []string {
	if s.hsDone.Fired() && s.features != nil {
		return append([]string(nil), (*s.features)...)
	}
	return nil
}

// snapshot is Client.Stats and Peer.Stats.
func (s *session) snapshot() Stats {
	overflow, stale := s.dg.ringStats()
	st := Stats{
		EmitQueueDepth:  s.q.depth(),
		OverflowDropped: overflow,
		StaleDropped:    stale,
	}
	if c := s.stats.Load(); c != nil {
		st.StaleReceived = c.staleReceived.Load()
		st.UnknownDropped = c.unknownDropped.Load()
		st.ValidationDropped = c.validationDropped.Load()
		st.DirectionDropped = c.directionDropped.Load()
		st.MalformedDropped = c.malformedDropped.Load()
		st.EarlyDiscarded = c.earlyDiscarded.Load()
	}
	return st
}

// closedError is what an operation the session's end interrupted reports
// (§11): WT_SESSION_CLOSED, wrapping how the session ended.
func (s *session) closedError() *Error {
	<-s.ended.Done()
	return &Error{Code: wire.SessionClosed, Message: "the session closed: " + s.err.Message, Remedy: wire.SessionClosed.Remedy(), Err: s.err}
}

// transportEnded reports whether err is the transport saying the session
// is over (its close or loss): no framing fault of this side, and watch
// reports the transport's CloseInfo once Done fires (§11).
func transportEnded(err error) bool { return wire.CodeOf(err) == wire.SessionClosed }

// isEnded reports whether the session has ended or is ending.
func (s *session) isEnded() bool { return s.ctx.Err() != nil }

// waitHandshake waits for the peer's handshake; false once the session ended.
func (s *session) waitHandshake(ctx context.Context) error {
	// Once accepted, a load takes no lock: every call passes here, and
	// the select below locks all three channels, which every caller of
	// the session shares.
	if s.hsDone.Fired() {
		return nil
	}
	select {
	case <-s.hsDone.Done():
		return nil
	case <-s.ctx.Done():
		return s.closedError()
	case <-ctx.Done():
		return asError(wire.Aborted, ctx.Err())
	}
}

// lookupSend finds an event this side may send with the given kind and lane;
// anything else is refused locally, before a byte is written.
func (s *session) lookupSend(id uint32, kind Kind, lane wire.Lane) (*Event, error) {
	ev, ok := s.contract.Event(id)
	if !ok {
		return nil, Errorf(wire.UnknownEvent, "event id %d is not in contract %s", id, s.contract.name)
	}
	if ev.Kind != kind || ev.Lane != lane {
		return nil, Errorf(wire.ProtocolError, "event '%s' is a %s %s event, not a %s %s one", ev.Name, ev.Lane, ev.Kind, lane, kind)
	}
	if !ev.sentBy(s.role) {
		return nil, Errorf(wire.ProtocolError, "event '%s' is not sent by the %s (its contract direction)", ev.Name, s.role)
	}
	return ev, nil
}

// emit is Client.Emit and Peer.Emit: it sends an event on the emit lane
// (§6.1), payload encoded in the codec the contract declares. It queues the
// frame and returns. A full queue (§9) makes it wait for the writer to take from it,
// up to EmitStallTimeout; a queue still full then closes the session
// WT_PEER_TOO_SLOW (§9).
func (s *session) emit(event uint32, payload []byte) error {
	ev, err := s.lookupSend(event, Emit, wire.Reliable)
	if err != nil {
		return err
	}
	if res, err := s.q.pushEmit(ev.Payload, ev.ID, payload); err != nil || res == pushed {
		return err
	}
	// The queue is full or shut down: wait for room with a frame of its own.
	f := getFrame()
	f.b, _ = wire.AppendFrame(f.b[:0], wire.FrameEmit, ev.Payload, ev.ID, payload) // pushEmit encoded it once
	return s.pushBack(f)
}

// pushBack waits for room on the emit queue for f, which did not fit or
// found the session ended (see pushWithin).
func (s *session) pushBack(f *frame) error {
	st := startStall(s.opts.Clock, s.opts.EmitStallTimeout)
	defer st.stop()
	return s.pushWithin(f, st, s.q.taken())
}

// stall is the §9 push-back deadline of one send: a sender waits for full
// queues until expired is closed, and renews it for a queue that was
// taken from meanwhile.
type stall struct {
	clk     clock.Clock
	d       time.Duration
	t       clock.Timer
	expired chan struct{}
}

func startStall(clk clock.Clock, d time.Duration) *stall {
	st := &stall{clk: clk, d: d}
	st.renew()
	return st
}

// renew restarts the deadline, d from now.
func (st *stall) renew() {
	if st.t != nil {
		st.t.Stop()
	}
	expired := make(chan struct{})
	st.expired = expired
	st.t = st.clk.AfterFunc(st.d, func() { close(expired) })
}

func (st *stall) stop() { st.t.Stop() }

// pushWithin puts f on the emit queue, waiting while the queue is full for
// the writer to take from it: a peer that reads has its queue taken whole
// within moments, so a burst from another peer is paced by its reading
// instead of closing it (§9: the emit lane never drops). At the stall's
// expiry a queue taken from since mark (the count of takes when the wait
// began) belongs to a peer still reading, and the wait is renewed; one
// never taken from belongs to a peer that stopped reading, closed
// WT_PEER_TOO_SLOW.
func (s *session) pushWithin(f *frame, st *stall, mark uint64) error {
	for {
		switch s.q.push(f) {
		case pushed:
			return nil
		case pushClosed:
			f.release()
			return s.closedError()
		}
		// waitAbove is nil when room appeared or the queue shut down
		// since the push: the next push tells which.
		drained := s.q.waitAbove(EmitQueueFrames - 1)
		if drained == nil {
			continue
		}
		select {
		case <-drained:
		case <-st.expired:
			if n := s.q.taken(); n != mark {
				mark = n
				st.renew()
				continue
			}
			return s.enqueue(f) // closes WT_PEER_TOO_SLOW, or reports the end
		}
	}
}

// enqueue puts a frame on the emit queue without waiting, or closes the
// session WT_PEER_TOO_SLOW when it is full: the emit lane never drops (§9).
// It is for senders that cannot wait (a lock held, the adapter's
// delivery); the others push back (pushWithin).
func (s *session) enqueue(f *frame) error {
	switch s.q.push(f) {
	case pushed:
		return nil
	case pushFull:
		f.release()
		s.metrics.Hit(metrics.LimitEmitQueue)
		s.closeWith(wire.ClosePeerTooSlow, fmt.Sprintf("emit queue exceeded %d frames and the peer did not read them within %d ms (§9)", EmitQueueFrames, s.opts.EmitStallTimeout.Milliseconds()))
		return Errorf(wire.PeerTooSlow, "the emit queue held %d frames; the session was closed (§9)", EmitQueueFrames)
	default:
		f.release()
		return s.closedError()
	}
}

// writeLoop opens this side's emit stream, writes the handshake at once
// (§4.1), then writes whatever is queued, coalesced into as few Writes as
// possible. On the WebSocket mapping it also moves unreliable frames from
// the datagram ring onto the lane while the lane is below its mark (§3.3).
func (s *session) writeLoop() {
	defer s.wg.Done()
	st, err := s.conn.OpenEmit(s.ctx)
	if err != nil {
		s.handshakeSent()
		if !s.isEnded() && !transportEnded(err) {
			s.closeWith(wire.CloseProtocolError, "cannot open the emit stream: "+err.Error())
		}
		return
	}
	hs := *s.hsFrame
	s.hsFrame = nil // a client's own, held no longer than needed
	_, err = st.Write(hs)
	s.handshakeSent()
	if err != nil {
		s.writeFailed(err)
		return
	}
	s.traffic.Out(metrics.LaneEmit, len(hs))
	s.emitStream = st
	s.q.mu.Lock()
	s.q.writer = s
	s.q.mu.Unlock()
	if s.parkWriter() {
		return // nothing queued since the session began: no writer waits
	}
	s.writeRun()
}

// startWriter runs writeRun on a goroutine of its own; the queue calls it
// under its lock, so the session's end (which shuts the queue down under
// that lock before its watcher leaves s.wg) cannot overtake the Add.
func (s *session) startWriter() {
	s.wg.Add(1)
	go s.writeAgain()
}

func (s *session) writeAgain() {
	defer s.wg.Done()
	s.writeRun()
}

// emitWriterLinger is how long the emit writer waits for more after it
// last wrote before its goroutine ends (it ends after one to two of these
// without a write): frames that keep coming reuse one writer instead of
// starting one each, while an idle session holds none. A busy writer's
// timer fires once per linger, so a long one costs little beside the
// frames (a member of a broadcast every 10 ms gets 25 frames per fire).
// No spec timer, so it runs on the wall clock.
const emitWriterLinger = 250 * time.Millisecond

// writeRun writes whatever is queued, coalesced into as few Writes as
// possible, until the queue has stayed empty for emitWriterLinger. On the
// WebSocket mapping it also moves unreliable frames from the datagram ring
// onto the lane while the lane is below its mark (§3.3).
func (s *session) writeRun() {
	// The timer is stopped on every way out but a park: a parked writer's
	// timer has fired, and the next writer may already be resetting it.
	wake := s.q.wakeChan()
	held := s.q.held()
	linger := s.lingerTimer()
	wrote := false
	for {
		// A receive on wake alone (and the flush delay's channel, when
		// set): the session's end and the linger's expiry come through wake
		// too (emitQueue.shutdown, emitQueue.lingerFired). A select that
		// also waited on the context's channel and a timer's cost every
		// wake-up, one per member per paced broadcast, about 0.4 µs more.
		if held == nil {
			<-wake
		} else {
			select {
			case <-wake:
			case <-held: // the flush delay ended (Options.EmitFlushDelay)
			}
		}
		// The token of a push may have been merged with the linger's, so
		// whatever is queued is written either way.
		fired := s.q.lingered.Swap(false)
		if fired {
			if !wrote && s.parkWriter() {
				return
			}
			wrote = false
			linger.Reset(emitWriterLinger)
		}
		// The buffers are held only while there is something to write: an
		// idle session holds none.
		w := getEmitWrite()
		if !s.writeQueued(s.emitStream, w) {
			linger.Stop()
			return
		}
		putEmitWrite(w)
		if !fired {
			wrote = true
		}
	}
}

// lingerTimer is the writer's linger timer, running for emitWriterLinger;
// made by the first run that gets this far and reused by the next, since one
// writer runs at a time. Its expiry wakes the writer through the queue.
func (s *session) lingerTimer() *time.Timer {
	if s.linger == nil {
		s.linger = time.AfterFunc(emitWriterLinger, s.q.lingerFired)
	} else {
		s.linger.Reset(emitWriterLinger)
	}
	return s.linger
}

// parkWriter ends the writer's run when nothing waits for it: false when
// it goes on. A datagram the WebSocket mapping queued on the ring as the
// queue parked finds no writer to start (it looks before park), so the
// writer looks again after parking and takes its park back.
func (s *session) parkWriter() bool {
	if !s.q.park() {
		return false
	}
	if s.mapping == transport.WebSocket && s.dg.queued() > 0 {
		return !s.q.resume()
	}
	return true
}

// writeQueued writes what is queued until the queue is empty, coalesced
// into Writes of up to emitFlushAt bytes; false when a Write failed or the queue
// is shut down (the session ended).
func (s *session) writeQueued(st transport.SendStream, w *emitWrite) bool {
	for {
		var open bool
		if w.batch, open = s.q.take(w.batch[:0]); !open {
			return false
		}
		for i, f := range w.batch {
			s.traffic.OutMany(metrics.LaneEmit, f.frames(), len(f.b))
			w.buf = append(w.buf, f.b...)
			f.release()
			w.batch[i] = nil
			if len(w.buf) >= emitFlushAt {
				if _, err := st.Write(w.buf); err != nil {
					releaseAll(w.batch[i+1:])
					s.writeFailed(err)
					return false
				}
				w.buf = w.buf[:0]
			}
		}
		moved := 0
		if s.mapping == transport.WebSocket {
			before := len(w.buf)
			w.buf, moved = s.dg.moveToLane(w.buf, DatagramLaneMark-len(w.batch))
			s.traffic.OutMany(metrics.LaneDatagram, moved, len(w.buf)-before)
		}
		if len(w.batch) == 0 && moved == 0 {
			return true
		}
		if len(w.buf) > 0 {
			if _, err := st.Write(w.buf); err != nil {
				s.writeFailed(err)
				return false
			}
			w.buf = w.buf[:0]
		}
	}
}

// emitFlushAt is the size of the emit writer's Writes.
const emitFlushAt = 64 << 10

// emitWrite is the emit writer's working set while the queue holds frames.
type emitWrite struct {
	buf   []byte
	batch []*frame
}

var emitWritePool = sync.Pool{New: func() any {
	return &emitWrite{buf: make([]byte, 0, emitFlushAt), batch: make([]*frame, 0, EmitQueueFrames)}
}}

func getEmitWrite() *emitWrite { return emitWritePool.Get().(*emitWrite) }

// putEmitWrite keeps the buffers for the next batch of any session, unless
// a large frame grew them.
func putEmitWrite(w *emitWrite) {
	if cap(w.buf) > 4*emitFlushAt {
		return
	}
	w.buf = w.buf[:0]
	emitWritePool.Put(w)
}

func releaseAll(fs []*frame) {
	for _, f := range fs {
		f.release()
	}
}

func (s *session) writeFailed(err error) {
	if s.isEnded() || transportEnded(err) {
		return
	}
	var se *transport.StreamError
	if errors.As(err, &se) {
		s.closeWith(wire.CloseProtocolError, fmt.Sprintf("the peer stopped this side's emit stream with code %d (§5.5)", se.Code))
		return
	}
	s.closeWith(wire.CloseProtocolError, "emit stream write failed: "+err.Error())
}

// emitReadAhead bounds the emit stream's read-ahead buffer: at full speed
// one Read per 64 KiB, as a raw reader's buffer, while an idle session
// holds the reader's initial 4 KiB (wire.Reader.ReadAhead).
const emitReadAhead = 64 << 10

// readLoop reads the peer's emit stream: the handshake first (§3.1, §4),
// then every frame in order. A fault here closes the session (§5.5).
func (s *session) readLoop() {
	defer s.wg.Done()
	rs, err := s.conn.AcceptEmit(s.ctx)
	if err != nil {
		return // the session ended; a peer that never opens it meets the deadline
	}
	r := wire.NewReader(rs)
	r.ReadAhead(emitReadAhead)
	r.Only(wire.EmitStreamTypes, "the emit stream")
	f, err := r.Next()
	if err != nil {
		s.readFailed(err)
		return
	}
	s.traffic.In(metrics.LaneEmit, frameLen(f))
	if f.Type != wire.FrameHandshake {
		s.closeWith(wire.CloseProtocolError, fmt.Sprintf("frame 0 is %s, not HANDSHAKE", f.Type))
		return
	}
	if !s.acceptHandshake(f.Payload) {
		return
	}
	// A session may stay quiet for long: its reader holds no buffer while
	// nothing comes.
	r.Shed()
	// The emit lane's counts are added once per Read of the stream rather
	// than per frame: before the last frame read ahead is dispatched, so a
	// frame is counted by the time its handler runs after it, and the
	// reader's hot loop does no atomic add per frame.
	var frames, bytes int
	for {
		f, err := r.Next()
		if err != nil {
			s.traffic.InMany(metrics.LaneEmit, frames, bytes)
			s.readFailed(err)
			return
		}
		if l := laneOf(f.Type); l == metrics.LaneEmit {
			frames, bytes = frames+1, bytes+frameLen(f)
		} else {
			s.traffic.In(l, frameLen(f))
		}
		if r.Buffered() == 0 {
			s.traffic.InMany(metrics.LaneEmit, frames, bytes)
			frames, bytes = 0, 0
		}
		if !s.dispatch(f) {
			return
		}
	}
}

func (s *session) readFailed(err error) {
	if s.isEnded() || transportEnded(err) {
		return
	}
	var se *transport.StreamError
	switch {
	case errors.As(err, &se):
		s.closeWith(wire.CloseProtocolError, fmt.Sprintf("the peer reset its emit stream with code %d; it lives for the whole session (§3.1, §5.5)", se.Code))
	case errors.Is(err, io.EOF):
		// The peer finished its emit stream: it sends nothing more on the
		// lane, and its session close (or loss) follows. Nothing to read.
	case errors.Is(err, io.ErrUnexpectedEOF):
		s.closeWith(wire.CloseProtocolError, "the peer's emit stream ended inside a frame (§5)")
	case wire.CodeOf(err) != "":
		s.protocolError(err)
	}
}

// acceptHandshake applies §4.2–§4.4 to the peer's frame 0: version first
// (the decoder's, which closes WT_PROTOCOL_VERSION_MISMATCH through its
// code), then the event table (fatal on conflict), then features (never
// fatal).
func (s *session) acceptHandshake(payload []byte) bool {
	h, err := wire.DecodeHandshake(payload)
	if err != nil {
		s.protocolError(err)
		return false
	}
	if err := wire.CompareTables(s.contract.table, h.Events); err != nil {
		s.protocolError(err)
		return false
	}
	features := wire.NegotiateFeatures(s.opts.Features, h.Feat)
	s.mu.Lock()
	if s.hsState != hsPending {
		s.mu.Unlock()
		return false
	}
	s.hsState = hsAccepted
	if len(features) > 0 {
		s.features = &features
	}
	s.hsTimer.Stop()
	s.hsTimer = nil // not held for the session's life
	s.hsDone.Fire()
	s.mu.Unlock()
	s.dg.beginProbes()
	s.owner.established()
	return true
}

// dispatch handles one frame of the peer's emit stream after the handshake;
// false when it closed the session.
func (s *session) dispatch(f wire.Frame) bool {
	switch f.Type {
	case wire.FrameEmit:
		return s.receiveEmit(f)
	case wire.FrameJoin, wire.FrameLeave:
		if s.role == roleServer {
			s.closeWith(wire.CloseProtocolError, fmt.Sprintf("the client sent %s; rooms are server-authoritative (§6.5)", f.Type))
			return false
		}
		room, err := wire.ParseRoom(f.Payload)
		if err != nil {
			s.protocolError(err)
			return false
		}
		s.owner.roomFrame(room, f.Type == wire.FrameJoin)
		return true
	case wire.FrameDatagram:
		if s.mapping != transport.WebSocket {
			s.closeWith(wire.CloseProtocolError, "DATAGRAM frame on the WebTransport mapping, where unreliable events travel as datagrams (§3.3)")
			return false
		}
		return s.receiveDatagram(f.Payload)
	}
	s.closeWith(wire.CloseProtocolError, fmt.Sprintf("%s frame on the emit stream (§5.2)", f.Type))
	return false
}

// receiveEmit applies the per-message rules to an EMIT (§5.3, §5.4): unknown
// id dropped and counted, codec differing from the slot a protocol error,
// wrong direction dropped and counted.
func (s *session) receiveEmit(f wire.Frame) bool {
	ev, ok := s.contract.Event(f.EventID)
	if !ok {
		s.counted().unknownDropped.Add(1)
		return true
	}
	if ev.Kind != Emit || ev.Lane != wire.Reliable {
		s.closeWith(wire.CloseProtocolError, fmt.Sprintf("EMIT frame for event '%s', which is a %s %s event (§5.2)", ev.Name, ev.Lane, ev.Kind))
		return false
	}
	if f.Codec != ev.Payload {
		s.closeWith(wire.CloseProtocolError, codecMismatch(ev, false, f.Codec))
		return false
	}
	if !f.Codec.Carries(f.Payload) {
		s.closeWith(wire.CloseProtocolError, notUTF8(ev, false))
		return false
	}
	if !ev.sentBy(s.role.peer()) {
		s.counted().directionDropped.Add(1)
		return true
	}
	s.deliver(ev, f.Payload)
	return true
}

func (s *session) deliver(ev *Event, payload []byte) {
	if err := s.owner.deliver(ev, payload); err != nil && wire.CodeOf(err) == wire.ValidationFailed {
		s.counted().validationDropped.Add(1)
	}
}

// codecMismatch is the §5.3 reason: it names the event and the slot.
func codecMismatch(ev *Event, result bool, got wire.Codec) string {
	want := ev.Payload
	if result {
		want = ev.Result
	}
	return fmt.Sprintf("event '%s' %s slot is %s; the frame carries %s (§5.3)", ev.Name, ev.slotName(result), want, got)
}

// notUTF8 is the §5.3 reason for a JSON slot whose payload is not UTF-8:
// it names the event and the slot.
func notUTF8(ev *Event, result bool) string {
	return fmt.Sprintf("event '%s' %s slot is UTF-8 JSON; the payload is not UTF-8 (§5.3)", ev.Name, ev.slotName(result))
}
