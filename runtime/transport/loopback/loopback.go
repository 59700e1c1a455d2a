// Package loopback is an in-memory transport.Conn pair for deterministic
// engine tests. Both ends live in one process and share a Link, which
// injects the faults a real path has: datagrams dropped, delayed, reordered
// or duplicated, a reader that stops reading, a connection that dies.
//
// The model follows QUIC where the engine can observe it: streams are byte
// streams that keep no write boundaries (§5) and block a writer once the
// reader's window is full; resets and stops carry one-byte codes (§8); the
// datagram receive queue is bounded and drops the excess; a session close
// reaches the peer at once and discards stream data not yet read, as QUIC's
// CONNECTION_CLOSE does. The package starts no goroutine of its own: the
// only concurrent work is the delay timer of DelayDatagrams.
package loopback

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Defaults of Options.
const (
	// DefaultMaxDatagramSize is what MaxDatagramSize reports when
	// Options.MaxDatagramSize is 0, about what QUIC reports on a loopback
	// path.
	DefaultMaxDatagramSize = 1200
	// UnknownDatagramSize as Options.MaxDatagramSize makes MaxDatagramSize
	// report 0, a transport that does not say (§7.4). The link then still
	// carries datagrams of up to DefaultMaxDatagramSize bytes.
	UnknownDatagramSize = -1
	// DefaultStreamWindow is how many unread bytes a stream holds before
	// Write blocks, standing in for QUIC stream flow control.
	DefaultStreamWindow = 64 << 10
	// DefaultMaxIncomingStreams is how many call streams a side lets its
	// peer hold open at once. It is above the spec's 256 (§10.1) so that the
	// engine's own limit, not the transport's, is what tests meet.
	DefaultMaxIncomingStreams = 1024
	// DatagramQueue is the receive queue of datagrams per side; the excess
	// is dropped and counted, as quic-go does with its queue of 128.
	DatagramQueue = 128
	// maxLinkDatagrams bounds the datagrams a Link holds for reordering or
	// delay, per direction; the excess is dropped and counted.
	maxLinkDatagrams = 1024
)

// Side names one end of a pair.
type Side uint8

// The two ends of a Pair.
const (
	Client Side = 0
	Server Side = 1
)

func (s Side) String() string {
	switch s {
	case Client:
		return "client"
	case Server:
		return "server"
	}
	return fmt.Sprintf("side(%d)", uint8(s))
}

func (s Side) other() Side { return 1 - s }

// Options shape a Pair. The zero value is a WebTransport session with the
// defaults above and the real clock.
type Options struct {
	// Mapping is WebTransport (the default) or WebSocket, which gives a
	// Conn with no call streams and no datagrams (§3.3).
	Mapping transport.Mapping
	// MaxDatagramSize is what MaxDatagramSize reports and the largest
	// datagram the link carries: 0 means DefaultMaxDatagramSize,
	// UnknownDatagramSize means "reports 0".
	MaxDatagramSize int
	// StreamWindow is the unread bytes per stream before Write blocks; 0
	// means DefaultStreamWindow.
	StreamWindow int
	// MaxIncomingStreams is how many call streams one side may have open
	// towards the other before OpenCall blocks; 0 means
	// DefaultMaxIncomingStreams. A stream stops counting once both of its
	// directions have ended (FIN read, reset or stopped).
	MaxIncomingStreams int
	// SplitWrites makes every Read return a small pseudo-random number of
	// bytes (1 to 7, deterministic), so a reader that takes one Read for one
	// frame fails (§5). Without it a Read returns whatever is buffered,
	// which merges writes.
	SplitWrites bool
	// Clock drives DelayDatagrams; nil is the real clock.
	Clock clock.Clock
}

// ErrSessionEnded is returned by every call made or blocked on a session
// that has ended; CloseInfo says how it ended.
var ErrSessionEnded = errors.New("loopback: session ended")

// ErrDatagramTooLarge is returned by SendDatagram for a datagram over the
// link's size. The engine checks §7.4 itself before sending and must not
// rely on this.
var ErrDatagramTooLarge = errors.New("loopback: datagram larger than the link carries")

var (
	errEmitOpened       = errors.New("loopback: emit stream already opened")
	errWriteAfterClose  = errors.New("loopback: write on a stream whose send side was closed")
	errResetAfterFinish = errors.New("loopback: stream send side already ended")
)

// Conn is one end of an in-memory session. It implements transport.Conn.
type Conn struct {
	link    *Link
	side    Side
	mapping transport.Mapping
	maxDG   int // reported
	sizeDG  int // carried

	emitOpened atomic.Bool
	emitIn     chan *pipe      // the peer's emit stream, once
	callsIn    chan *stream    // call streams the peer opened, not yet accepted
	slots      chan struct{}   // call streams the peer holds open towards this side
	dgrams     chan []byte     // received datagrams
	stats      *directionStats // traffic this side sends
}

var _ transport.Conn = (*Conn)(nil)

// Pair returns the two ends of a new session and the link between them.
func Pair(opts Options) (client, server *Conn, link *Link) {
	if opts.Mapping == 0 {
		opts.Mapping = transport.WebTransport
	}
	maxDG, sizeDG := opts.MaxDatagramSize, opts.MaxDatagramSize
	switch {
	case maxDG == 0:
		maxDG, sizeDG = DefaultMaxDatagramSize, DefaultMaxDatagramSize
	case maxDG < 0:
		maxDG, sizeDG = 0, DefaultMaxDatagramSize
	}
	if opts.StreamWindow <= 0 {
		opts.StreamWindow = DefaultStreamWindow
	}
	if opts.MaxIncomingStreams <= 0 {
		opts.MaxIncomingStreams = DefaultMaxIncomingStreams
	}
	link = &Link{
		clk:    clock.Or(opts.Clock),
		done:   make(chan struct{}),
		window: opts.StreamWindow,
		split:  opts.SplitWrites,
	}
	for s := range link.conns {
		link.conns[s] = &Conn{
			link:    link,
			side:    Side(s),
			mapping: opts.Mapping,
			maxDG:   maxDG,
			sizeDG:  sizeDG,
			emitIn:  make(chan *pipe, 1),
			callsIn: make(chan *stream, opts.MaxIncomingStreams),
			slots:   make(chan struct{}, opts.MaxIncomingStreams),
			dgrams:  make(chan []byte, DatagramQueue),
			stats:   &link.dirs[s].stats,
		}
	}
	link.dirs[Client].to, link.dirs[Server].to = link.conns[Server], link.conns[Client]
	return link.conns[Client], link.conns[Server], link
}

// Side reports which end this is.
func (c *Conn) Side() Side { return c.side }

func (c *Conn) peer() *Conn { return c.link.conns[c.side.other()] }

// Mapping reports the mapping the pair was made with.
func (c *Conn) Mapping() transport.Mapping { return c.mapping }

// OpenEmit opens this side's emit stream; a second call fails.
func (c *Conn) OpenEmit(ctx context.Context) (transport.SendStream, error) {
	if err := c.usable(ctx); err != nil {
		return nil, err
	}
	if !c.emitOpened.CompareAndSwap(false, true) {
		return nil, errEmitOpened
	}
	p := c.link.newPipe(c.side.other(), c.stats, nil)
	c.peer().emitIn <- p // capacity 1, and only one emit stream per side
	return sendStream{p}, nil
}

// AcceptEmit returns the peer's emit stream once it is opened.
func (c *Conn) AcceptEmit(ctx context.Context) (transport.ReceiveStream, error) {
	if err := c.usable(ctx); err != nil {
		return nil, err
	}
	select {
	case p := <-c.emitIn:
		return receiveStream{p}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.link.done:
		return nil, ErrSessionEnded
	}
}

// OpenCall opens a bidirectional call stream. It blocks while the peer
// already has Options.MaxIncomingStreams of this side's streams open.
func (c *Conn) OpenCall(ctx context.Context) (transport.Stream, error) {
	if c.mapping == transport.WebSocket {
		return nil, transport.ErrNoStreams
	}
	if err := c.usable(ctx); err != nil {
		return nil, err
	}
	peer := c.peer()
	select {
	case peer.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.link.done:
		return nil, ErrSessionEnded
	}
	var open atomic.Int32
	open.Store(2)
	release := func() {
		if open.Add(-1) == 0 {
			<-peer.slots
		}
	}
	out := c.link.newPipe(c.side.other(), c.stats, release)
	in := c.link.newPipe(c.side, peer.stats, release)
	select {
	case peer.callsIn <- &stream{sendStream{in}, receiveStream{out}}:
	case <-ctx.Done():
		out.resetWrite(wire.ResetAborted)
		in.stopRead(wire.ResetAborted)
		return nil, ctx.Err()
	case <-c.link.done:
		return nil, ErrSessionEnded
	}
	return &stream{sendStream{out}, receiveStream{in}}, nil
}

// AcceptCall returns the next call stream the peer opened.
func (c *Conn) AcceptCall(ctx context.Context) (transport.Stream, error) {
	if c.mapping == transport.WebSocket {
		return nil, transport.ErrNoStreams
	}
	if err := c.usable(ctx); err != nil {
		return nil, err
	}
	select {
	case s := <-c.callsIn:
		return s, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.link.done:
		return nil, ErrSessionEnded
	}
}

// SendDatagram copies b onto the link towards the peer. It never blocks.
func (c *Conn) SendDatagram(b []byte) error {
	if c.mapping == transport.WebSocket {
		return transport.ErrNoDatagrams
	}
	if c.ended() {
		return ErrSessionEnded
	}
	if len(b) > c.sizeDG {
		return fmt.Errorf("%w: %d bytes, the link carries %d", ErrDatagramTooLarge, len(b), c.sizeDG)
	}
	c.link.sendDatagram(c.side, append([]byte(nil), b...))
	return nil
}

// ReceiveDatagram returns the next datagram; the caller owns it.
func (c *Conn) ReceiveDatagram(ctx context.Context) ([]byte, error) {
	if c.mapping == transport.WebSocket {
		return nil, transport.ErrNoDatagrams
	}
	if err := c.usable(ctx); err != nil {
		return nil, err
	}
	select {
	case b := <-c.dgrams:
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.link.done:
		return nil, ErrSessionEnded
	}
}

// MaxDatagramSize reports Options.MaxDatagramSize (0 for
// UnknownDatagramSize).
func (c *Conn) MaxDatagramSize() int { return c.maxDG }

// Close ends the session for both sides with code and reason, the reason cut
// to 1024 bytes (123 on the WebSocket mapping) on a character boundary. The
// first close wins.
func (c *Conn) Close(code uint32, reason string) error {
	limit := wire.MaxCloseReason
	if c.mapping == transport.WebSocket {
		limit = wire.MaxWebSocketReason
	}
	reason = wire.CutReason(reason, limit)
	var infos [2]transport.CloseInfo
	infos[c.side] = transport.CloseInfo{Code: code, Reason: reason}
	infos[c.side.other()] = transport.CloseInfo{Code: code, Reason: reason, Remote: true}
	c.link.end(infos)
	return nil
}

// Done is closed once the session has ended, for both sides at once.
func (c *Conn) Done() <-chan struct{} { return c.link.done }

// Released is Done: both sides learn of the close at once, so nothing is
// left to deliver.
func (c *Conn) Released() <-chan struct{} { return c.link.done }

// CloseInfo reports how the session ended, seen from this side.
func (c *Conn) CloseInfo() transport.CloseInfo {
	c.link.mu.Lock()
	defer c.link.mu.Unlock()
	return c.link.info[c.side]
}

func (c *Conn) ended() bool {
	select {
	case <-c.link.done:
		return true
	default:
		return false
	}
}

// usable reports the error a call starting now gets, if any: the session's
// end takes precedence over an expired context.
func (c *Conn) usable(ctx context.Context) error {
	if c.ended() {
		return ErrSessionEnded
	}
	return ctx.Err()
}
