package webtransport

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/quicvarint"
	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/internal/latch"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// DefaultCloseGrace is how long a closing side waits for the peer to answer
// its close before tearing the session down anyway. The close capsule has
// been sent (and retransmitted) by then; waiting for the answer first is what
// lets the code reach Chromium (see closeCapsuleFirst).
const DefaultCloseGrace = 2 * time.Second

// conn is one WebTransport session behind the transport.Conn seam. Server
// and client sessions differ only in how they close and what they do once
// the session has ended (release).
type conn struct {
	sess  *wt.Session
	qconn *quic.Conn
	// connect is the CONNECT stream on the server side, where this package
	// writes its own close capsule; nil on the client side.
	connect *http3.Stream
	// datagramPrefix is the length of the HTTP datagram's quarter stream ID,
	// which shares the QUIC datagram with our bytes.
	datagramPrefix int
	grace          time.Duration
	clock          clock.Clock
	// srv is the listener of a server-side session, nil on a client: it
	// releases the session's QUIC connection (release), and its Shutdown's
	// context bounds a close (Close).
	srv *Server

	// maxDatagram caches MaxDatagramSize (see DatagramLimitRefresh).
	maxDatagram datagramLimit

	// emitOut and emitIn are this side's emit stream and the peer's
	// (OpenEmit and AcceptEmit, each called once): the streams the engine
	// is handed are the conn itself (emitSend, emitReceive), so neither
	// costs an allocation of its own for the session's life.
	emitOut *wt.SendStream
	emitIn  *wt.ReceiveStream

	mu           sync.Mutex
	info         transport.CloseInfo
	stopFallback func() bool
	// afterDone runs once done fired (AfterDone); done fires under mu,
	// so a function is either in it or started at once.
	afterDone []func()

	// done and released (once release returned) make their channels only for
	// a waiter: the engine waits on neither while the session is up.
	done     latch.Latch
	released latch.Latch

	// On a client: emitWritten says this side wrote on its emit stream
	// (its handshake), and probed that a datagram too short to carry an
	// event (a §7.2 probe) arrived, which a server of this module sends
	// once it has read the handshake (see awaitHandshakeRead); probedWait,
	// made only for a close that waits for it, is closed then (both under
	// mu).
	emitWritten atomic.Bool
	probed      bool
	// closing says a local close was started (under mu); beside probed,
	// so the conn takes 240 B.
	closing    bool
	probedWait chan struct{}
}

func newConn(sess *wt.Session, qconn *quic.Conn, connect *http3.Stream, grace time.Duration, clk clock.Clock, srv *Server) *conn {
	if grace <= 0 {
		grace = DefaultCloseGrace
	}
	c := &conn{
		sess:           sess,
		qconn:          qconn,
		connect:        connect,
		datagramPrefix: 1,
		grace:          grace,
		clock:          clock.Or(clk),
		srv:            srv,
	}
	c.maxDatagram.clk = c.clock
	if connect != nil {
		c.datagramPrefix = quicvarint.Len(uint64(connect.StreamID()) / 4)
	}
	// No goroutine waits for the end while the session is up: settle runs
	// once the session's context is done.
	context.AfterFunc(sess.Context(), c.settle)
	return c
}

var (
	_ transport.Conn         = (*conn)(nil)
	_ transport.DoneNotifier = (*conn)(nil)
	_ transport.ContextConn  = (*conn)(nil)
)

// Context is webtransport-go's context of the session: it ends once the
// session was closed by either side or its connection was lost, just
// before settle fires Done.
func (c *conn) Context() context.Context { return c.sess.Context() }

func (c *conn) Mapping() transport.Mapping { return transport.WebTransport }

// settle runs once the session ended: it settles how it ended, fires Done
// and releases what the session held.
func (c *conn) settle() {
	c.mu.Lock()
	closing := c.closing
	if c.stopFallback != nil {
		c.stopFallback()
	}
	if !closing {
		c.info = remoteCloseInfo(c.sess)
	}
	code, reason := c.info.Code, c.info.Reason
	c.mu.Unlock()
	if closing {
		// Releases the library's side of the session; after the peer's
		// answer it sends nothing more.
		_ = c.sess.CloseWithError(wt.SessionErrorCode(code), reason)
	}
	c.mu.Lock()
	c.done.Fire()
	after := c.afterDone
	c.afterDone = nil
	c.mu.Unlock()
	for _, f := range after {
		go f()
	}
	c.release()
	c.released.Fire()
}

// release lets go of the QUIC connection once the session ended, once:
// the listener's (Server.endSession) or, on a client, lingerThenClose.
func (c *conn) release() {
	if c.srv != nil {
		c.srv.endSession(c)
		return
	}
	lingerThenClose(c)
}

// AfterDone runs f in a goroutine of its own once the session ended: the
// engine's close watcher, which then waits on no goroutine of its own
// while the session is up.
func (c *conn) AfterDone(f func()) {
	c.mu.Lock()
	if c.done.Fired() {
		c.mu.Unlock()
		go f()
		return
	}
	c.afterDone = append(c.afterDone, f)
	c.mu.Unlock()
}

// remoteCloseInfo reads how a session that this side did not close ended:
// the peer's close capsule, or a lost connection.
func remoteCloseInfo(sess *wt.Session) transport.CloseInfo {
	// Once the session's context is done, OpenStream returns the session's
	// close error without opening anything.
	_, err := sess.OpenStream()
	if se, ok := errors.AsType[*wt.SessionError](err); ok && se.Remote {
		return transport.CloseInfo{
			Code:   uint32(se.ErrorCode),
			Reason: wire.CutReason(se.Message, wire.MaxCloseReason),
			Remote: true,
		}
	}
	return transport.CloseInfo{Lost: true}
}

// isDone reports whether Done is closed.
func (c *conn) isDone() bool { return c.done.Fired() }

// ended reports whether the session is over or this side began closing it.
func (c *conn) ended() bool {
	if c.isDone() {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing
}

// errClosing is the cause reported for calls made after a local close.
var errClosing = errors.New("closed by this side")

func (c *conn) OpenEmit(ctx context.Context) (transport.SendStream, error) {
	if c.ended() {
		return nil, c.closedError(errClosing, true)
	}
	s, err := c.sess.OpenUniStream()
	if atStreamLimit(err) {
		s, err = c.sess.OpenUniStreamSync(ctx)
	}
	if err != nil {
		return nil, c.sessionError(ctx, err)
	}
	c.emitOut = s
	return (*emitSend)(c), nil
}

// atStreamLimit reports whether an open failed only because the peer's
// stream limit is reached, for now: the open then waits for credit. Opening
// without waiting first spares the waiting open's context and its entries in
// webtransport-go's maps, which outlive the open, when credit is there.
func atStreamLimit(err error) bool {
	return isA[*wt.StreamLimitReachedError](err) || isA[*quic.StreamLimitReachedError](err)
}

func (c *conn) AcceptEmit(ctx context.Context) (transport.ReceiveStream, error) {
	s, err := c.sess.AcceptUniStream(c.waitContext(ctx))
	if err != nil {
		return nil, c.sessionError(ctx, err)
	}
	c.emitIn = s
	return (*emitReceive)(c), nil
}

func (c *conn) OpenCall(ctx context.Context) (transport.Stream, error) {
	if c.ended() {
		return nil, c.closedError(errClosing, true)
	}
	s, err := c.sess.OpenStream()
	if atStreamLimit(err) {
		s, err = c.sess.OpenStreamSync(ctx)
	}
	if err != nil {
		return nil, c.sessionError(ctx, err)
	}
	return &stream{s: s, c: c}, nil
}

func (c *conn) AcceptCall(ctx context.Context) (transport.Stream, error) {
	if c.connect == nil {
		// A client's connection grants the server no bidirectional stream
		// (Dial): there is nothing to accept, now or later.
		return nil, transport.ErrNoInboundCalls
	}
	s, err := c.sess.AcceptStream(c.waitContext(ctx))
	if err != nil {
		return nil, c.sessionError(ctx, err)
	}
	return &stream{s: s, c: c}, nil
}

func (c *conn) SendDatagram(b []byte) error {
	err := c.sess.SendDatagram(b)
	if err == nil {
		return nil
	}
	var tooLarge *quic.DatagramTooLargeError
	if errors.As(err, &tooLarge) {
		limit := c.datagramLimitOf(tooLarge)
		c.maxDatagram.set(limit)
		return wire.Errorf(wire.DatagramTooLarge, "datagram of %d bytes exceeds the path's %d", len(b), limit)
	}
	return c.sessionError(nil, err)
}

func (c *conn) ReceiveDatagram(ctx context.Context) ([]byte, error) {
	b, err := c.sess.ReceiveDatagram(c.waitContext(ctx))
	if err != nil {
		return nil, c.sessionError(ctx, err)
	}
	if len(b) < wire.DatagramHeaderLen && c.connect == nil {
		c.sawProbe()
	}
	return b, nil
}

// waitContext is the context an accept or a datagram receive hands
// webtransport-go: none for a wait bounded by the session's own context
// (the engine's), which webtransport-go ends with the session anyway. Every
// way a session ends closes its accept queues and cancels the CONNECT
// stream's receive side, which wakes a datagram receive, before the
// session's context ends; a wait that also selected on that context would
// hold one more sudog (about 100 B) for as long as it waits, the session's life
// for the engine's call acceptor and datagram receiver.
func (c *conn) waitContext(ctx context.Context) context.Context {
	if ctx == c.sess.Context() {
		return context.Background()
	}
	return ctx
}

// datagramProbe is longer than any QUIC packet, so sending it only asks
// quic-go for the current limit: it is rejected before anything is queued.
var datagramProbe = make([]byte, 1<<16)

// MaxDatagramSize is quic-go's current limit less the HTTP datagram's
// quarter stream ID (§7.4: the limit follows the path MTU), at most
// DatagramLimitRefresh old.
func (c *conn) MaxDatagramSize() int {
	return c.maxDatagram.get(c.probeDatagramLimit)
}

// probeDatagramLimit asks quic-go for its limit now; 0 once the connection
// is gone.
func (c *conn) probeDatagramLimit() int {
	var tooLarge *quic.DatagramTooLargeError
	if err := c.qconn.SendDatagram(datagramProbe); !errors.As(err, &tooLarge) {
		return 0
	}
	return c.datagramLimitOf(tooLarge)
}

// datagramLimitOf is the room a quic-go refusal leaves for our bytes.
func (c *conn) datagramLimitOf(tooLarge *quic.DatagramTooLargeError) int {
	return max(int(tooLarge.MaxDatagramPayloadSize)-c.datagramPrefix, 0)
}

// Close ends the session with a §10.2 code and reason; the first close wins.
func (c *conn) Close(code uint32, reason string) error {
	reason = wire.CutReason(reason, wire.MaxCloseReason)
	c.mu.Lock()
	if c.done.Fired() {
		c.mu.Unlock()
		return nil
	}
	if c.closing {
		c.mu.Unlock()
		return nil
	}
	c.closing = true
	c.info = transport.CloseInfo{Code: code, Reason: reason}
	if c.connect == nil {
		c.mu.Unlock()
		// Client side: the library's close; a Go or browser server reads
		// the capsule, and end keeps the connection open so it is delivered.
		c.awaitHandshakeRead()
		return c.sess.CloseWithError(wt.SessionErrorCode(code), reason)
	}
	defer c.mu.Unlock()
	if c.closeCapsuleFirst(code, reason) {
		fallback := func() { _ = c.sess.CloseWithError(wt.SessionErrorCode(code), reason) }
		if ctx := c.shutdownContext(); ctx != nil {
			// A close of the listener's Shutdown waits for the peer's answer
			// until Shutdown's context ends, not the grace: on a loaded host a
			// peer takes longer to answer, and the ports are released once
			// the sessions ended, which leaves a peer that had not read the
			// capsule yet a lost connection instead of the close.
			c.stopFallback = context.AfterFunc(ctx, fallback)
		} else {
			c.stopFallback = c.clock.AfterFunc(c.grace, fallback).Stop
		}
		return nil
	}
	go c.sess.CloseWithError(wt.SessionErrorCode(code), reason)
	return nil
}

// handshakeReadBound bounds how long a client's close waits for the
// server's sign that it read the client's handshake (awaitHandshakeRead):
// a server that gives none, or whose sign was lost, holds a close no longer.
const handshakeReadBound = time.Second

// awaitHandshakeRead holds a client's close until the server has read the
// handshake this side wrote on its emit stream, the session ended, or
// handshakeReadBound passed. webtransport-go's close makes the server
// abandon every stream it has not read yet, so a close right after Dial
// could arrive first and the server would never learn whom the session
// was from (§4.1, §11); no timer can tell when a loaded server has read,
// and QUIC tells the application nothing of acknowledgements. A server of
// this module sends its first §7.2 probe, a datagram too short to carry an
// event, once it accepted the handshake: that is the sign, seen by
// ReceiveDatagram (the engine receives datagrams for the whole session).
// The bound is no spec timer, so it runs on the wall clock.
func (c *conn) awaitHandshakeRead() {
	if !c.emitWritten.Load() {
		return // nothing of this side's to be read
	}
	c.mu.Lock()
	if c.probed {
		c.mu.Unlock()
		return
	}
	if c.probedWait == nil {
		c.probedWait = make(chan struct{})
	}
	probed := c.probedWait
	c.mu.Unlock()
	t := time.NewTimer(handshakeReadBound)
	defer t.Stop()
	select {
	case <-probed:
	case <-c.sess.Context().Done():
	case <-t.C:
	}
}

// sawProbe records a client's first probe from the server.
func (c *conn) sawProbe() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.probed {
		c.probed = true
		if c.probedWait != nil {
			close(c.probedWait)
		}
	}
}

// closeCapsuleFirst writes WT_CLOSE_SESSION on the CONNECT stream in one
// write and finishes the stream, before anything that could make the peer
// abandon the session. webtransport-go's own close sends STOP_SENDING, which
// quic-go packs ahead of the capsule, and Chromium then reports "Connection
// lost" instead of the code (tests/browser shows it). The library's close runs only after
// the peer answered with its FIN, or after the grace. It reports whether the
// capsule was queued; when flow control blocks it the library's close is
// the only way left.
func (c *conn) closeCapsuleFirst(code uint32, reason string) bool {
	if err := c.connect.TryWriteAll(appendCloseCapsule(nil, code, reason)); err != nil {
		return false
	}
	_ = c.connect.Close()
	return true
}

func (c *conn) shutdownContext() context.Context {
	if c.srv == nil {
		return nil
	}
	return c.srv.shutdownContext()
}

func (c *conn) Done() <-chan struct{} { return c.done.Done() }

// Released fires once release returned: on a client after a local close, once
// the server closed the connection (it read the close) or the grace passed.
func (c *conn) Released() <-chan struct{} { return c.released.Done() }

func (c *conn) CloseInfo() transport.CloseInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info
}

// emitSend is this side's emit stream (conn.emitOut).
type emitSend conn

func (s *emitSend) Write(p []byte) (int, error) {
	n, err := s.emitOut.Write(p)
	if n > 0 {
		s.emitWritten.Store(true)
	}
	return n, (*conn)(s).streamError(err)
}

func (s *emitSend) Close() error     { return (*conn)(s).streamError(s.emitOut.Close()) }
func (s *emitSend) Reset(code uint8) { s.emitOut.CancelWrite(wtResetCode(code)) }

// emitReceive is the peer's emit stream (conn.emitIn).
type emitReceive conn

func (s *emitReceive) Read(p []byte) (int, error) {
	n, err := s.emitIn.Read(p)
	return n, (*conn)(s).streamError(err)
}

func (s *emitReceive) Stop(code uint8) { stopReading(s.emitIn, code) }

// stopReading stops reading a stream with code, and wakes its Read:
// webtransport-go (v0.13.0) holds a Read of a stream the peer reset with
// WT_SESSION_GONE until the session ends, and CancelRead does not end that
// wait, but a read deadline in the past does. A peer that resets with it
// and keeps the session would otherwise keep a stopped stream's reader
// (a call's request, its bytes and goroutine) for the session's life.
func stopReading(r interface {
	CancelRead(wt.StreamErrorCode)
	SetReadDeadline(time.Time) error
}, code uint8) {
	r.CancelRead(wtResetCode(code))
	_ = r.SetReadDeadline(time.Unix(1, 0))
}

type stream struct {
	s *wt.Stream
	c *conn
}

func (s *stream) Write(p []byte) (int, error) {
	n, err := s.s.Write(p)
	return n, s.c.streamError(err)
}

func (s *stream) Read(p []byte) (int, error) {
	n, err := s.s.Read(p)
	return n, s.c.streamError(err)
}

func (s *stream) Close() error     { return s.c.streamError(s.s.Close()) }
func (s *stream) Reset(code uint8) { s.s.CancelWrite(wtResetCode(code)) }
func (s *stream) Stop(code uint8)  { stopReading(s.s, code) }

// AfterStopped: quic-go ends a stream's context (a context.WithCancelCause,
// so context.AfterFunc starts no goroutine until it ends) when its send side
// is closed, reset, or stopped by the peer's STOP_SENDING.
func (s *stream) AfterStopped(f func()) (stop func() bool) {
	return context.AfterFunc(s.s.Context(), f)
}
