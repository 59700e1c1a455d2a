// Package transport is the seam between the protocol engine and the
// transports that carry a session: WebTransport over HTTP/3 (§2, §3), the
// WebSocket mapping of the emit lane (§3.3), and the in-memory loopback used
// by deterministic tests. The engine talks to a session only through Conn;
// a transport never sees a decoded message.
package transport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/transport-io/tiogen/runtime/wire"
)

// Mapping names which mapping of the protocol carries a session (§2). Each
// peer knows it from the listener or connector that produced the session; the
// handshake never carries it.
type Mapping uint8

const (
	// WebTransport carries every lane: one unidirectional stream per
	// direction for the emit lane, a bidirectional stream per call, and
	// datagrams for the unreliable lane (§3).
	WebTransport Mapping = 1
	// WebSocket carries the emit lane alone (§3.3): no call streams, no
	// datagrams; unreliable events travel as DATAGRAM frames on the emit lane.
	WebSocket Mapping = 2
)

func (m Mapping) String() string {
	switch m {
	case WebTransport:
		return "webtransport"
	case WebSocket:
		return "websocket"
	}
	return fmt.Sprintf("mapping(%d)", uint8(m))
}

// Conn is one established session as a transport carries it. Every method is
// safe for concurrent use. After Done is closed every blocked call returns.
type Conn interface {
	// Mapping reports which mapping carries this session.
	Mapping() Mapping

	// OpenEmit opens this side's emit stream (§3.1). The engine calls it
	// exactly once, at session start, and writes the handshake as frame 0.
	OpenEmit(ctx context.Context) (SendStream, error)
	// AcceptEmit returns the peer's emit stream. The engine calls it exactly
	// once. A peer that never opens it is covered by the handshake deadline.
	AcceptEmit(ctx context.Context) (ReceiveStream, error)

	// OpenCall opens a bidirectional call stream (§3.2). On a mapping
	// without bidirectional streams it returns ErrNoStreams at once.
	OpenCall(ctx context.Context) (Stream, error)
	// AcceptCall returns the next call stream the peer opened. On a mapping
	// without bidirectional streams it returns ErrNoStreams at once; where
	// the peer can open none (a client's side of a WebTransport session:
	// calls are the client's to make) ErrNoInboundCalls at once.
	AcceptCall(ctx context.Context) (Stream, error)

	// SendDatagram transmits one datagram as given (§7). It never blocks on
	// the peer. On a mapping without datagrams it returns ErrNoDatagrams.
	SendDatagram(b []byte) error
	// ReceiveDatagram returns the next datagram received. The caller owns
	// the returned slice. On a mapping without datagrams it returns
	// ErrNoDatagrams at once.
	ReceiveDatagram(ctx context.Context) ([]byte, error)
	// MaxDatagramSize is the transport's current maximum datagram size, or 0
	// when it does not report one (§7.4: the engine then assumes 1024).
	MaxDatagramSize() int

	// Close ends the session with a §10.2 code and a reason of at most 1024
	// bytes (the transport cuts a longer one, and the WebSocket mapping cuts
	// it to 123 bytes on a character boundary). The first close wins; later
	// calls do nothing. Close returns once the close is on its way; it does
	// not wait for the peer (Released does).
	Close(code uint32, reason string) error
	// Done is closed once the session has ended for any reason: a local
	// close, the peer's close, or a lost connection. It always fires.
	Done() <-chan struct{}
	// Released is closed after Done, once the transport has let go of the
	// session: after a local close, when the peer answered the close (so
	// its code and reason were delivered) or the transport's close grace
	// passed; after the peer's close or a loss, as soon as the connection
	// is torn down. A process that exits before Released may lose its
	// close on the way.
	Released() <-chan struct{}
	// CloseInfo reports how the session ended. It is meaningful once Done is
	// closed.
	CloseInfo() CloseInfo
}

// DoneNotifier is a Conn that runs a function once Done is closed, with no
// goroutine waiting meanwhile. The engine uses it where a transport offers
// it, in place of a goroutine per session blocked on Done: an idle session
// then costs one goroutine less per side.
type DoneNotifier interface {
	// AfterDone arranges for f to run once, in a goroutine of its own,
	// after Done is closed: at once if it is.
	AfterDone(f func())
}

// ContextConn is a Conn whose session has a context that ends once the
// session is over, whatever ended it, before Done fires. The engine uses
// it as the session's context where a transport offers it, instead of one
// of its own: an idle session then holds one context less.
type ContextConn interface {
	Context() context.Context
}

// CloseInfo is how a session ended.
type CloseInfo struct {
	// Code and Reason are the §10.2 code and reason of the close, whichever
	// side sent it. Both are zero when the connection was lost (§11).
	Code   uint32
	Reason string
	// Remote is true when the peer closed the session.
	Remote bool
	// Lost is true when the session ended without a close from either side:
	// a killed process or a dead path. Code and Reason are then zero and
	// mean nothing (a loss carries no code, §11), and a transport's own code
	// for a lost connection is never reported.
	Lost bool
}

// SendStream is the sending half of a stream.
type SendStream interface {
	// Write writes bytes of the stream. It blocks under the transport's
	// flow control; it returns an error once the stream was reset, stopped
	// by the peer, or the session ended.
	Write(p []byte) (int, error)
	// Close finishes the send side cleanly (FIN).
	Close() error
	// Reset abandons the send side with a §10.1 code (RESET_STREAM).
	Reset(code uint8)
}

// ReceiveStream is the receiving half of a stream.
type ReceiveStream interface {
	// Read reads bytes of the stream: io.EOF after the peer's FIN, a
	// *StreamError after the peer's reset, another error once the session
	// ended. Message boundaries carry no meaning (§5).
	Read(p []byte) (int, error)
	// Stop stops reading with a §10.1 code (STOP_SENDING).
	Stop(code uint8)
}

// Stream is a bidirectional call stream (§3.2).
type Stream interface {
	SendStream
	ReceiveStream
	// AfterStopped arranges for f to run, once and in a goroutine of its
	// own, when the peer stopped reading the stream (STOP_SENDING with any
	// code), or this side finished or reset its send side; at once if that
	// already happened. stop cancels it and reports whether it stopped f
	// from running (context.AfterFunc's contract). No goroutine waits in
	// the meantime, so a call pays for none. It is how a responder learns
	// that the initiator of a returns call cancelled it after its FIN, when
	// nothing is left to read (§8: the initiator resets its send side and
	// stops reading; the responder SHOULD abandon the work).
	AfterStopped(f func()) (stop func() bool)
}

// StreamError reports that a stream was reset or stopped with a one-byte code
// (§8, §10.1).
type StreamError struct {
	Code   uint8
	Remote bool
}

func (e *StreamError) Error() string {
	side := "local"
	if e.Remote {
		side = "remote"
	}
	return fmt.Sprintf("stream reset by %s side with code %d", side, e.Code)
}

var (
	// ErrNoStreams is returned by OpenCall and AcceptCall on a mapping
	// without bidirectional streams (§3.3).
	ErrNoStreams = errors.New("transport: this mapping has no bidirectional streams")
	// ErrNoInboundCalls is returned by AcceptCall where the peer can open
	// no call stream: a WebTransport client's connection grants the
	// server no bidirectional stream.
	ErrNoInboundCalls = errors.New("transport: the peer can open no call streams to this side")
	// ErrNoDatagrams is returned by the datagram methods on a mapping
	// without datagrams (§3.3).
	ErrNoDatagrams = errors.New("transport: this mapping has no datagrams")
)

// Request is what a listener's authorize sees of the request that opened a
// session (§4.3): decided before the session is accepted.
type Request struct {
	// Path is the request path, without the query.
	Path string
	// Query carries the query parameters; a browser can put a credential
	// only here. Never log it.
	Query url.Values
	// RemoteAddr is the peer's address as host:port.
	RemoteAddr string
	// Header holds the request headers (cookies included).
	Header http.Header
}

// AuthorizeFunc decides a peer at the door (§4, §4.3). It returns data to
// attach to the accepted peer, or an error: a *Refusal (from Refuse) closes
// the session WT_UNAUTHORIZED with its reason before this side's frame 0; any
// other error means no decision was reached and closes the session
// WT_NO_ERROR with the reason "authorize failed".
type AuthorizeFunc func(ctx context.Context, r *Request) (data any, err error)

// Refusal is an authorize decision to refuse a peer.
type Refusal struct {
	// Reason is the application's reason: 1 to 123 bytes of UTF-8 (§4).
	Reason string
}

func (r *Refusal) Error() string { return "refused: " + r.Reason }

// DefaultRefusalReason is the reason of a refusal with nothing to say (§4).
const DefaultRefusalReason = "refused"

// Refuse returns the authorize error that refuses a peer with reason. An
// empty reason becomes "refused"; a reason over 123 bytes is cut on a
// character boundary, so it arrives the same on either mapping (§4).
func Refuse(reason string) error {
	if reason == "" {
		reason = DefaultRefusalReason
	}
	return &Refusal{Reason: wire.CutReason(reason, wire.MaxWebSocketReason)}
}

// SessionHandler receives each session a listener accepted, with the data
// its authorize attached. It runs on its own goroutine and owns the session
// until it returns.
type SessionHandler func(conn Conn, req *Request, data any)
