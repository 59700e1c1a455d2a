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

// conn is one session over a WebSocket. It owns one reader goroutine for
// the socket's whole life, and one more goroutine once the session ends,
// which winds the socket down.
type conn struct {
	ws   *cws.Conn
	raw  net.Conn // the TCP connection under ws, closed to end everything at once
	opts Options
	clk  clock.Clock

	start    time.Time
	lastSent atomic.Int64 // since start, in nanoseconds
	lastRecv atomic.Int64

	rx   *recvBuffer
	send sendStream
	recv receiveStream

	// writeMu serialises this side's messages; the keepalive only tries it,
	// since a write in progress is itself something sent.
	writeMu sync.Mutex

	mu        sync.Mutex
	ended     bool
	info      transport.CloseInfo
	keepalive clock.Timer
	idle      clock.Timer

	done     chan struct{} // the session ended
	finished chan struct{} // the socket is closed and both goroutines returned
	readerWG sync.WaitGroup
}

// newConn starts a session on an upgraded socket. raw is the TCP connection
// under ws.
func newConn(ws *cws.Conn, raw net.Conn, opts Options) *conn {
	opts = opts.withDefaults()
	// The limit is enforced by the reader, which closes with a session
	// code; coder/websocket's own limit would close with 1009, which the
	// peer could only report as a lost session.
	ws.SetReadLimit(-1)
	c := &conn{
		ws:       ws,
		raw:      raw,
		opts:     opts,
		clk:      opts.Clock,
		rx:       newRecvBuffer(opts.ReceiveBuffer),
		done:     make(chan struct{}),
		finished: make(chan struct{}),
	}
	c.start = c.clk.Now()
	c.send.c = c
	c.recv.c = c
	c.mu.Lock()
	c.keepalive = c.clk.AfterFunc(opts.KeepaliveInterval, c.keepaliveDue)
	c.idle = c.clk.AfterFunc(opts.IdleTimeout, c.idleDue)
	c.mu.Unlock()
	c.readerWG.Add(1)
	go c.readLoop()
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
	if !c.end(transport.CloseInfo{Code: code, Reason: reason}, true) {
		return nil
	}
	go c.finishLocal(wire.WebSocketCloseCode(code), reason)
	return nil
}

func (c *conn) Done() <-chan struct{} { return c.done }

func (c *conn) CloseInfo() transport.CloseInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info
}

// end records how the session ended, fires Done and fails every blocked
// and later operation. local discards received bytes the engine has not
// read. It reports whether this was the end (the first one wins).
func (c *conn) end(info transport.CloseInfo, local bool) bool {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return false
	}
	c.ended = true
	c.info = info
	c.keepalive.Stop()
	c.idle.Stop()
	close(c.done)
	c.mu.Unlock()
	c.rx.end(sessionEndedError(info), local)
	return true
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
	if c.end(info, false) {
		go c.finishDropped()
	}
}

// writeFailed waits for the session to end after a failed write. The reader
// tells why: the peer's close frame may be waiting behind the failure (a
// refusal, §4), or the same broken connection fails the read. Only if the
// reader reports nothing within CloseGrace is the session lost here.
func (c *conn) writeFailed(err error) {
	t := c.clk.AfterFunc(c.opts.CloseGrace, func() { c.endRemote(err) })
	<-c.done
	t.Stop()
}

// finishLocal sends the close frame and waits for the closing handshake,
// for at most CloseGrace, then drops the TCP connection.
func (c *conn) finishLocal(code uint16, reason string) {
	grace := c.clk.AfterFunc(c.opts.CloseGrace, func() { _ = c.raw.Close() })
	_ = c.ws.Close(cws.StatusCode(code), reason)
	grace.Stop()
	c.finishDropped()
}

// finishDropped drops the TCP connection and waits for the reader.
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
// not reading the socket, its receive buffer full, does not count: the
// peer cannot be heard then.
func (c *conn) idleDue() {
	timeout := c.opts.IdleTimeout
	quiet := time.Duration(c.since() - c.lastRecv.Load())
	if c.rx.full() {
		quiet = 0
	}
	if quiet >= timeout {
		_ = c.Close(wire.CloseIdleTimeout, fmt.Sprintf("nothing received for %d ms", timeout.Milliseconds()))
		return
	}
	c.rearm(&c.idle, timeout-quiet)
}

// rearm resets a liveness timer unless the session ended.
func (c *conn) rearm(t *clock.Timer, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ended {
		(*t).Reset(d)
	}
}

// readLoop is the connection's one reader: it moves the bytes of binary
// messages into the receive buffer and ends the session on a text message,
// an oversized message, the peer's close or a lost connection.
func (c *conn) readLoop() {
	defer c.readerWG.Done()
	for {
		typ, r, err := c.ws.Reader(context.Background())
		if err != nil {
			c.endRemote(err)
			return
		}
		c.lastRecv.Store(c.since())
		if typ != cws.MessageBinary {
			_ = c.Close(wire.CloseProtocolError, "text message: the WebSocket mapping carries binary messages only (§3.3)")
			return
		}
		if !c.readMessage(r) {
			return
		}
	}
}

// readMessage moves one binary message into the receive buffer. It reports
// whether the session goes on.
func (c *conn) readMessage(r io.Reader) bool {
	limit := c.opts.MaxMessageSize
	var size int64
	for {
		space, waited := c.rx.reserve()
		if space == nil {
			return c.discardStopped(r)
		}
		if waited {
			// The peer was not being read; its silence is measured afresh.
			c.lastRecv.Store(c.since())
		}
		if room := limit - size + 1; int64(len(space)) > room {
			space = space[:room]
		}
		n, err := r.Read(space)
		size += int64(n)
		if size > limit {
			_ = c.Close(wire.CloseProtocolError, fmt.Sprintf("a WebSocket message over %d bytes", limit))
			return false
		}
		if n > 0 {
			c.lastRecv.Store(c.since())
			c.rx.commit(n)
		}
		if err == io.EOF {
			return true
		}
		if err != nil {
			c.endRemote(err)
			return false
		}
	}
}

// discardStopped keeps reading the socket after the engine stopped the
// receive stream, dropping the bytes, so the peer's close is still seen.
// It reports whether the session goes on.
func (c *conn) discardStopped(r io.Reader) bool {
	if c.endedErr() != nil {
		return false
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		c.endRemote(err)
		return false
	}
	c.lastRecv.Store(c.since())
	return true
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
		if err := c.ws.Write(context.Background(), cws.MessageBinary, p[:k]); err != nil {
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

// Read reads received bytes. Once the peer closed or the connection was
// lost, the bytes received before are still read, then the error; once this
// side closed, the error comes at once.
func (s *receiveStream) Read(p []byte) (int, error) { return s.c.rx.Read(p) }

// Stop stops reading: later Reads fail with a *transport.StreamError and
// received bytes are dropped, while the socket is still read so the peer's
// close is seen.
func (s *receiveStream) Stop(code uint8) {
	s.c.rx.end(&transport.StreamError{Code: code}, true)
}
