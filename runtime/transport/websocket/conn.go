// Package websocket is the WebSocket mapping of a transport-io session
// (§3.3) on coder/websocket: the socket is both peers' emit streams, there
// are no call streams and no datagrams, session close codes travel as
// WebSocket close codes, and the mapping carries its own liveness
// (keepalive and idle deadline). Handler is the server side, Dial the client.
//
// The engine decides everything above the byte stream: the §2/§7.6
// reliability refusal, DATAGRAM frames and the 32-frame gate.
package websocket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cws "github.com/coder/websocket"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// conn is one session over a WebSocket. The engine's Reads read the socket
// themselves, so while the engine reads the session has no goroutine of its
// own: one discards the peer's bytes after Stop, and one winds the socket
// down once the session ends.
type conn struct {
	ws     *cws.Conn
	raw    net.Conn    // the TCP connection under ws, closed to end everything at once
	out    *gatherConn // what ws writes to: raw, with each message gathered into one write
	client bool        // this side masks what it sends (RFC 6455 §5.3)
	opts   Options
	clk    clock.Clock

	start    time.Time
	lastSent atomic.Int64 // since start, in nanoseconds
	lastRecv atomic.Int64 // something received, or this side began reading
	// reading is set while the socket is read: only then can the peer's
	// silence be observed.
	reading atomic.Bool
	stopped atomic.Pointer[transport.StreamError] // set by Stop

	send sendStream
	recv receiveStream

	// readMu is held by the socket's one reader at a time (coder/websocket
	// allows no more): an engine Read, the discarding reader after Stop, or
	// a local close handing the socket to the closing handshake.
	readMu  sync.Mutex
	msg     io.Reader // the message being read; nil between messages
	msgSize int64     // the bytes read of msg
	// msgOpen is set while a message has begun and not ended; msgBegan is
	// when it began, moved on by the time this side did not read it, and
	// pausedAt when the last Read left it open (see messageDue).
	msgOpen  atomic.Bool
	msgBegan atomic.Int64
	pausedAt atomic.Int64

	// writeMu serialises this side's messages; the keepalive only tries it,
	// since a write in progress is itself something sent.
	writeMu sync.Mutex

	mu        sync.Mutex
	ended     bool
	info      transport.CloseInfo
	keepalive clock.Timer
	idle      clock.Timer
	message   clock.Timer
	afterDone []func() // AfterDone's, run once the session ends

	done     chan struct{} // the session ended
	finished chan struct{} // the socket is closed and the discarding reader returned
	readerWG sync.WaitGroup
}

// newConn starts a session on an upgraded socket. raw is the TCP connection
// under ws, out the gathering connection over raw that ws writes to.
func newConn(ws *cws.Conn, raw net.Conn, out *gatherConn, client bool, opts Options) *conn {
	opts = opts.withDefaults()
	// The limit is enforced by Read, which closes with a session code;
	// coder/websocket's own limit would close with 1009, which the peer
	// could only report as a lost session.
	ws.SetReadLimit(-1)
	c := &conn{
		ws:       ws,
		raw:      raw,
		out:      out,
		client:   client,
		opts:     opts,
		clk:      opts.Clock,
		done:     make(chan struct{}),
		finished: make(chan struct{}),
	}
	c.start = c.clk.Now()
	c.send.c = c
	c.recv.c = c
	c.mu.Lock()
	c.keepalive = c.clk.AfterFunc(opts.KeepaliveInterval, c.keepaliveDue)
	c.idle = c.clk.AfterFunc(opts.IdleTimeout, c.idleDue)
	c.message = c.clk.AfterFunc(opts.MessageTimeout, c.messageDue)
	c.mu.Unlock()
	return c
}

func (c *conn) Mapping() transport.Mapping { return transport.WebSocket }

// OpenEmit returns this side's emit stream: the socket's sending half.
func (c *conn) OpenEmit(context.Context) (transport.SendStream, error) {
	if err := c.endedErr(); err != nil {
		return nil, err
	}
	return &c.send, nil
}

// AcceptEmit returns the peer's emit stream: the socket's receiving half.
func (c *conn) AcceptEmit(context.Context) (transport.ReceiveStream, error) {
	if err := c.endedErr(); err != nil {
		return nil, err
	}
	return &c.recv, nil
}

// OpenCall fails: the mapping has no bidirectional streams (§3.3).
func (c *conn) OpenCall(context.Context) (transport.Stream, error) {
	return nil, transport.ErrNoStreams
}

// AcceptCall fails: the mapping has no bidirectional streams (§3.3).
func (c *conn) AcceptCall(context.Context) (transport.Stream, error) {
	return nil, transport.ErrNoStreams
}

// SendDatagram fails: the mapping has no datagrams (§3.3).
func (c *conn) SendDatagram([]byte) error { return transport.ErrNoDatagrams }

// ReceiveDatagram fails: the mapping has no datagrams (§3.3).
func (c *conn) ReceiveDatagram(context.Context) ([]byte, error) {
	return nil, transport.ErrNoDatagrams
}

// MaxDatagramSize is 0: the mapping has no datagrams.
func (c *conn) MaxDatagramSize() int { return 0 }

// Close ends the session with a §10.2 code: WebSocket 1000 for
// WT_NO_ERROR, 3000 plus the code otherwise, the reason cut to 123 bytes on
// a character boundary (§3.3). Invalid UTF-8 in the reason becomes U+FFFD
// first: a browser fails a connection whose close reason is not UTF-8, and
// the code would be lost with it. The session is closed at once; the close
// frame and the closing handshake get CloseGrace before the TCP connection
// is dropped, since a peer that stopped reading may never answer.
func (c *conn) Close(code uint32, reason string) error {
	reason = wire.CutReason(strings.ToValidUTF8(reason, "\uFFFD"), wire.MaxWebSocketReason)
	if !c.end(transport.CloseInfo{Code: code, Reason: reason}) {
		return nil
	}
	go c.finishLocal(wire.WebSocketCloseCode(code), reason)
	return nil
}

func (c *conn) Done() <-chan struct{} { return c.done }

// Released fires once the socket is closed: after a local close, once the
// closing handshake completed or CloseGrace passed.
func (c *conn) Released() <-chan struct{} { return c.finished }

func (c *conn) CloseInfo() transport.CloseInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info
}

// end records how the session ended, fires Done and fails every later
// operation. It reports whether this was the end (the first one wins).
func (c *conn) end(info transport.CloseInfo) bool {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return false
	}
	c.ended = true
	c.info = info
	c.keepalive.Stop()
	c.idle.Stop()
	c.message.Stop()
	close(c.done)
	after := c.afterDone
	c.afterDone = nil
	c.mu.Unlock()
	for _, f := range after {
		go f()
	}
	return true
}

var _ transport.DoneNotifier = (*conn)(nil)

// AfterDone runs f in a goroutine of its own once the session ended.
func (c *conn) AfterDone(f func()) {
	c.mu.Lock()
	if !c.ended {
		c.afterDone = append(c.afterDone, f)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	go f()
}

// endRemote ends the session because the socket ended under it: the peer's
// close frame (remote), or anything else (lost), and winds the socket down.
func (c *conn) endRemote(err error) {
	info := transport.CloseInfo{Lost: true}
	var ce cws.CloseError
	if errors.As(err, &ce) {
		if code, ok := wire.SessionCodeFromWebSocket(uint16(ce.Code)); ok {
			info = transport.CloseInfo{Code: code, Reason: ce.Reason, Remote: true}
		}
	}
	if c.end(info) {
		go c.finishDropped()
	}
}

// writeFailed waits for the session to end after a failed write. The
// socket's reader tells why: the peer's close frame may be waiting behind the
// failure (a refusal, §4), or the same broken connection fails the read.
// Only if no reader reports within CloseGrace is the session lost here.
func (c *conn) writeFailed(err error) {
	t := c.clk.AfterFunc(c.opts.CloseGrace, func() { c.endRemote(err) })
	<-c.done
	t.Stop()
}

// finishLocal sends the close frame and waits for the closing handshake,
// for at most CloseGrace, then drops the TCP connection. The grace is the
// peer's, so it starts once this side holds the socket: waking the
// session's reader is this host's work, and when a thousand sessions close
// at once on a starved host it alone can outlast the grace, which then
// dropped the socket before the close frame was written (the peer saw a
// lost connection, not the close).
func (c *conn) finishLocal(code uint16, reason string) {
	c.takeSocket()
	grace := c.clk.AfterFunc(c.opts.CloseGrace, func() { _ = c.raw.Close() })
	_ = c.ws.Close(cws.StatusCode(code), reason)
	grace.Stop()
	c.finishDropped()
}

// takeSocket returns a Read (or the discarding reader) blocked on the socket
// at once, with the session's error, and leaves the socket to the closing
// handshake: coder/websocket's Close reads the peer's close frame itself.
// An expired read deadline is the one wake-up that does not close the
// connection (cancelling a read's context would).
func (c *conn) takeSocket() {
	_ = c.raw.SetReadDeadline(time.Unix(1, 0))
	c.readMu.Lock()
	_ = c.raw.SetReadDeadline(time.Time{})
	c.readMu.Unlock()
}

// finishDropped drops the TCP connection and waits for the discarding
// reader.
func (c *conn) finishDropped() {
	_ = c.raw.Close()
	_ = c.ws.CloseNow()
	c.readerWG.Wait()
	close(c.finished)
}

// endedErr is the error of an operation on an ended session, or nil.
func (c *conn) endedErr() error {
	select {
	case <-c.done:
		return sessionEndedError(c.CloseInfo())
	default:
		return nil
	}
}

// sessionEndedError is what a stream operation returns once the session
// ended.
func sessionEndedError(info transport.CloseInfo) error {
	switch {
	case info.Lost:
		return wire.Errorf(wire.SessionClosed, "the WebSocket connection was lost")
	case info.Remote:
		return wire.Errorf(wire.SessionClosed, "the peer closed the WebSocket session (%s)", describeClose(info))
	}
	return wire.Errorf(wire.SessionClosed, "this side closed the WebSocket session (%s)", describeClose(info))
}

func describeClose(info transport.CloseInfo) string {
	name := string(wire.SessionCodeName(info.Code))
	if name == "" {
		name = fmt.Sprintf("code %d", info.Code)
	}
	if info.Reason == "" {
		return name
	}
	return fmt.Sprintf("%s, %q", name, info.Reason)
}

// since is the clock's time since the session started, in nanoseconds.
func (c *conn) since() int64 { return int64(c.clk.Now().Sub(c.start)) }

// keepaliveDue sends an empty binary message once KeepaliveInterval has
// passed with nothing sent (§3.3), and rearms for the next deadline.
func (c *conn) keepaliveDue() {
	interval := c.opts.KeepaliveInterval
	quiet := time.Duration(c.since() - c.lastSent.Load())
	if quiet >= interval && c.writeMu.TryLock() {
		if c.endedErr() == nil {
			if err := c.ws.Write(context.Background(), cws.MessageBinary, nil); err != nil {
				c.writeFailed(err)
				c.writeMu.Unlock()
				return
			}
			c.lastSent.Store(c.since())
		}
		c.writeMu.Unlock()
		quiet = 0
	} else if quiet >= interval {
		quiet = 0 // a write is in progress: that is something sent
	}
	c.rearm(&c.keepalive, interval-quiet)
}

// idleDue closes the session WT_IDLE_TIMEOUT once IdleTimeout has passed
// with nothing received, a keepalive counting (§3.3). Time this side spends
// not reading the socket, the engine busy, does not count: the peer cannot
// be heard then, and its silence is measured afresh when reading resumes.
func (c *conn) idleDue() {
	timeout := c.opts.IdleTimeout
	reading := c.reading.Load() // before lastRecv, which a Read sets first
	quiet := time.Duration(c.since() - c.lastRecv.Load())
	if !reading {
		quiet = 0
	}
	if quiet >= timeout {
		_ = c.Close(wire.CloseIdleTimeout, fmt.Sprintf("nothing received for %d ms", timeout.Milliseconds()))
		return
	}
	c.rearm(&c.idle, timeout-quiet)
}

// messageDue closes the session WT_PROTOCOL_ERROR once a message has been
// arriving for MessageTimeout without ending: a message under the size cap
// dribbled on for ever keeps the idle deadline satisfied, so it gets a
// deadline of its own. As for the idle deadline, time this side spends not
// reading does not count: the peer's bytes wait in TCP then, through no
// fault of the peer's. The timer checks at most once per MessageTimeout,
// so Reads touch only atomics.
func (c *conn) messageDue() {
	timeout := c.opts.MessageTimeout
	next := timeout
	if c.msgOpen.Load() {
		reading := c.reading.Load()
		began := c.msgBegan.Load()
		if reading {
			elapsed := time.Duration(c.since() - began)
			if elapsed >= timeout {
				_ = c.Close(wire.CloseProtocolError, fmt.Sprintf("a WebSocket message did not arrive whole within %d ms", timeout.Milliseconds()))
				return
			}
			next = timeout - elapsed
		} else if left := timeout - time.Duration(c.pausedAt.Load()-began); left > 0 && left < timeout {
			next = left // the least it can still take once reading resumes
		}
	}
	c.rearm(&c.message, next)
}

// rearm resets a liveness timer unless the session ended.
func (c *conn) rearm(t *clock.Timer, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ended {
		(*t).Reset(d)
	}
}

// listen marks the socket read from now (the clock's since); readMu is
// held.
func (c *conn) listen(now int64) {
	c.lastRecv.Store(now)
	c.reading.Store(true)
}

// readErr is the error of a Read once the session ended or the engine
// stopped reading, or nil.
func (c *conn) readErr() error {
	if err := c.endedErr(); err != nil {
		return err
	}
	if se := c.stopped.Load(); se != nil {
		return se
	}
	return nil
}

// readFailed ends the session after the socket failed a read (the peer's
// close, a lost connection), unless it ended already (a local close woke
// the read), and returns the session's error.
func (c *conn) readFailed(err error) error {
	c.endRemote(err)
	return c.endedErr()
}

// nextMessage waits for the peer's next message and makes it c.msg, and
// returns when it began (the clock's since). A text message closes the
// session. readMu is held.
func (c *conn) nextMessage() (int64, error) {
	typ, r, err := c.ws.Reader(context.Background())
	if err != nil {
		return 0, c.readFailed(err)
	}
	now := c.since()
	c.lastRecv.Store(now)
	if typ != cws.MessageBinary {
		_ = c.Close(wire.CloseProtocolError, "text message: the WebSocket mapping carries binary messages only (§3.3)")
		return now, c.endedErr()
	}
	c.msg, c.msgSize = r, 0
	c.msgBegan.Store(now)
	c.msgOpen.Store(true)
	return now, nil
}

// endMessage marks the message read whole; readMu is held.
func (c *conn) endMessage() {
	c.msg = nil
	c.msgOpen.Store(false)
}

// discardStopped keeps reading the socket after the engine stopped the
// receive stream, dropping the bytes, so the peer's close is still seen.
func (c *conn) discardStopped() {
	defer c.readerWG.Done()
	c.readMu.Lock()
	defer c.readMu.Unlock()
	c.listen(c.since())
	defer c.reading.Store(false)
	for c.endedErr() == nil {
		if c.msg == nil {
			if _, err := c.nextMessage(); err != nil {
				return
			}
		}
		_, err := io.Copy(io.Discard, c.msg)
		c.endMessage()
		if err != nil {
			c.readFailed(err)
			return
		}
		c.lastRecv.Store(c.since())
	}
}

// sendStream is this side's emit stream: each Write is sent as binary
// messages of at most maxSendMessage bytes.
type sendStream struct {
	c      *conn
	closed bool // guarded by c.writeMu
}

// Write sends p. It blocks while TCP holds the peer's data back; once the
// session ends it fails, a blocked Write within CloseGrace of a local close.
func (s *sendStream) Write(p []byte) (int, error) {
	c := s.c
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if s.closed {
		return 0, errSendClosed
	}
	n := 0
	for len(p) > 0 {
		if err := c.endedErr(); err != nil {
			return n, err
		}
		k := min(len(p), maxSendMessage)
		var err error
		if c.client {
			// A client masks every byte (RFC 6455 §5.3): coder/websocket does,
			// its message gathered into one write.
			c.out.gather(k, true)
			err = c.ws.Write(context.Background(), cws.MessageBinary, p[:k])
			if gerr := c.out.gatherEnd(); err == nil {
				err = gerr
			}
		} else {
			err = c.out.writeBinary(p[:k])
		}
		if err != nil {
			c.writeFailed(err)
			return n, c.endedErr()
		}
		c.lastSent.Store(c.since())
		n += k
		p = p[k:]
	}
	return n, nil
}

var errSendClosed = errors.New("websocket: the emit stream was closed; the session stays open until Conn.Close")

// Close finishes the send side: later Writes fail. A WebSocket has no
// half-close, so nothing is sent; the session ends with Conn.Close.
func (s *sendStream) Close() error {
	s.c.writeMu.Lock()
	s.closed = true
	s.c.writeMu.Unlock()
	return nil
}

// Reset abandons the send side like Close: the mapping has no stream
// reset, and the emit stream's faults escalate to the session (§5.5).
func (s *sendStream) Reset(uint8) { _ = s.Close() }

// receiveStream is the peer's emit stream: the bytes of its binary
// messages, concatenated; an empty message carries none (§3.3).
type receiveStream struct{ c *conn }

// Read reads the peer's bytes straight from the socket into p, on the
// caller's goroutine: while nobody reads, the socket is not read and TCP
// holds the peer back. The peer's close, seen after every byte it sent
// before, a lost connection or a local close (which wakes a blocked Read at
// once) end the session and fail the Read.
func (s *receiveStream) Read(p []byte) (int, error) {
	c := s.c
	if len(p) == 0 {
		return 0, nil
	}
	// Checked before waiting for readMu too: after Stop the discarding
	// reader holds it for the rest of the session.
	if err := c.readErr(); err != nil {
		return 0, err
	}
	c.readMu.Lock()
	defer c.readMu.Unlock()
	// The clock is read once on the way in and once after each wait on
	// the socket, the last reading standing for when this Read left: a
	// clock read costs about as much as a frame's decoding.
	now := c.since()
	if c.msg != nil {
		// The time since the last Read left this message was not spent
		// reading it (see messageDue); moved before reading is set, so
		// the timer never counts the pause as reading.
		c.msgBegan.Add(now - c.pausedAt.Load())
	}
	c.listen(now)
	defer func() { c.pause(now) }()
	limit := c.opts.MaxMessageSize
	for {
		if err := c.readErr(); err != nil {
			return 0, err
		}
		if c.msg == nil {
			var err error
			if now, err = c.nextMessage(); err != nil {
				return 0, err
			}
		}
		// Read at most one byte past the limit: the size is counted
		// before the bytes are handed on.
		q := p
		if room := limit - c.msgSize + 1; int64(len(q)) > room {
			q = q[:room]
		}
		n, err := c.msg.Read(q)
		c.msgSize += int64(n)
		if c.msgSize > limit {
			_ = c.Close(wire.CloseProtocolError, fmt.Sprintf("a WebSocket message over %d bytes", limit))
			return 0, c.endedErr()
		}
		if n > 0 {
			now = c.since()
			c.lastRecv.Store(now)
		}
		switch {
		case err == io.EOF:
			c.endMessage()
		case err != nil:
			c.endMessage()
			return 0, c.readFailed(err)
		}
		if n > 0 {
			return n, nil
		}
	}
}

// pause marks the socket no longer read from now (the clock's since);
// readMu is held.
func (c *conn) pause(now int64) {
	if c.msg != nil {
		c.pausedAt.Store(now)
	}
	c.reading.Store(false)
}

// Stop stops reading: later Reads fail with a *transport.StreamError (a
// Read in progress returns what it is reading first), and a goroutine reads
// the socket on, dropping the bytes, so the peer's close is still seen.
func (s *receiveStream) Stop(code uint8) {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended || c.stopped.Load() != nil {
		return
	}
	c.stopped.Store(&transport.StreamError{Code: code})
	c.readerWG.Add(1) // before the session ends, so before finishDropped waits
	go c.discardStopped()
}
