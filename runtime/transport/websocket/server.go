package websocket

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	cws "github.com/coder/websocket"

	"github.com/transport-io/tiogen/runtime/metrics"
	"github.com/transport-io/tiogen/runtime/transport"
)

// Handler is the server side of the mapping: an http.Handler, mounted on
// the server's TCP (HTTPS) side, that upgrades requests at Path to
// WebSocket sessions. It decides each peer with Authorize through the same
// door (transport.Door) as the WebTransport listener (§4, §4.3), and hands
// each accepted session to OnSession. A Handler must not be copied after
// first use; its fields are read once, at its first request.
//
// Origin checking: a browser sends its page's origin with every WebSocket
// upgrade and attaches the site's cookies whatever that origin is, and
// Authorize sees cookies. So by default a request whose Origin names
// another host than the request's is refused with 403 before Authorize runs
// (coder/websocket's check against cross-site WebSocket hijacking). Clients
// that are not browsers send no Origin and pass. OriginPatterns admits
// other origins; InsecureSkipOriginCheck admits every origin, for
// applications whose Authorize uses no cookie or other ambient credential.
type Handler struct {
	// Path is the contract's path; a request for another path gets 404.
	// Empty accepts every path the handler is mounted at.
	Path string
	// Authorize decides each peer before the session starts; nil accepts
	// every peer. It sees the path, the query (never log it), the remote
	// address and the headers, cookies included.
	Authorize transport.AuthorizeFunc
	// AuthorizeTimeout bounds one Authorize call (its context's deadline);
	// 0 means transport.DefaultAuthorizeTimeout.
	AuthorizeTimeout time.Duration
	// MaxSessions bounds sessions held at once; a request over it gets
	// HTTP 503 before the upgrade. 0 means transport.DefaultMaxSessions.
	MaxSessions int
	// MaxSessionsPerAddress bounds the sessions one remote IP address
	// holds at once; a request over it gets HTTP 429 before the upgrade. 0
	// means transport.DefaultMaxSessionsPerAddress.
	MaxSessionsPerAddress int
	// Metrics counts refusals; nil counts nothing.
	Metrics *metrics.Metrics
	// Logger receives authorize failures; nil is slog.Default(). Query
	// strings are never logged.
	Logger *slog.Logger
	// OnSession runs for each accepted session, on a goroutine of its own
	// (ServeHTTP returns once the session is decided). When it returns, a
	// session still open is closed WT_NO_ERROR; a panic in it is logged
	// at Error and closes the session, as net/http treats a handler's.
	OnSession transport.SessionHandler
	// Options tunes every session.
	Options Options
	// OriginPatterns lists origins admitted besides the request's own host,
	// as coder/websocket's AcceptOptions.OriginPatterns ("example.com",
	// "*.example.com", "https://app.example.com").
	OriginPatterns []string
	// InsecureSkipOriginCheck admits requests from every origin.
	InsecureSkipOriginCheck bool

	doorOnce sync.Once
	door     *transport.Door
}

// theDoor is the door built from the Handler's fields at first use.
func (h *Handler) theDoor() *transport.Door {
	h.doorOnce.Do(func() {
		opts := transport.DoorOptions{Authorize: h.Authorize, AuthorizeTimeout: h.AuthorizeTimeout, MaxSessions: h.MaxSessions,
			MaxSessionsPerAddress: h.MaxSessionsPerAddress, Metrics: h.Metrics, Mapping: metrics.WebSocket, Logger: h.Logger}
		h.door = transport.NewDoor(opts, func(c transport.Conn, req *transport.Request, data any) {
			h.OnSession(c, req, data)
		})
	})
	return h.door
}

// ServeHTTP upgrades the request, decides the peer and hands the session
// to a goroutine of its own, which runs it until it has ended and its
// socket is closed. A refused peer is closed WT_UNAUTHORIZED (WebSocket
// 4007) with the reason before anything else is sent, so it never sees
// this side's frame 0; an Authorize that reached no decision closes the
// session WT_NO_ERROR with the reason "authorize failed" (§4).
//
// Returning frees what net/http holds for the request while its handler
// runs: the connection's state and, with the buffers the hijack swapped
// (hijackRecorder), its 4 KiB read and write buffers, most of what an
// idle session would otherwise hold beyond the engine's own.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.Path != "" && r.URL.Path != h.Path {
		http.NotFound(w, r)
		return
	}
	if h.OnSession == nil {
		http.Error(w, "no session handler is configured", http.StatusInternalServerError)
		return
	}
	door := h.theDoor()
	if a := door.Enter(r.RemoteAddr); a != transport.Admitted {
		a.Answer(w)
		return
	}
	hj := &hijackRecorder{ResponseWriter: w}
	ws, err := cws.Accept(hj, r, &cws.AcceptOptions{
		OriginPatterns:     h.OriginPatterns,
		InsecureSkipVerify: h.InsecureSkipOriginCheck,
	})
	if err != nil {
		door.Leave(r.RemoteAddr)
		return // Accept answered the request with the error's status
	}
	req := &transport.Request{Path: r.URL.Path, Query: r.URL.Query(), RemoteAddr: r.RemoteAddr, Header: r.Header}
	// The request's context stays valid until ServeHTTP returns, even after
	// the hijack (net/http, Hijacker).
	data, authErr := door.Decide(r.Context(), req)
	c := newConn(ws, hj.conn, hj.out, false, h.Options)
	go h.serve(door, c, req, data, authErr)
}

// serve runs a decided session to its end. A panic in OnSession is
// recovered as net/http recovers a handler's, so one session's bug does not
// end the process; the door has closed the session by then.
func (h *Handler) serve(door *transport.Door, c *conn, req *transport.Request, data any, authErr error) {
	defer func() {
		if p := recover(); p != nil {
			h.logger().Error("websocket: the session handler panicked", "path", req.Path, "remote", req.RemoteAddr,
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	door.Serve(c, req, data, authErr)
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.Default()
}

// Shutdown stops accepting sessions (later requests get 503), closes every
// open session WT_NO_ERROR with transport.ShutdownReason, and waits until
// their handlers returned and their sockets closed, or ctx ends. An
// http.Server's own Shutdown does not reach these sessions: their
// connections were hijacked.
func (h *Handler) Shutdown(ctx context.Context) error { return h.theDoor().Shutdown(ctx) }

// hijackRecorder keeps the TCP connection coder/websocket hijacks, so a
// closing session can drop it after CloseGrace whatever the socket is
// blocked on. (net/http clears the server's read and write deadlines on
// hijack, so an http.Server's timeouts do not end the session.) It hands
// coder/websocket the connection with its messages gathered (gatherConn)
// and smaller buffers than net/http's 4 KiB pair, which every idle session
// would hold: a message's bytes past the read buffer are read straight
// into the engine's buffer, and the write buffer holds only a frame
// header, the message going to the gathered write.
type hijackRecorder struct {
	http.ResponseWriter
	conn net.Conn
	out  *gatherConn
}

// The server's buffers under coder/websocket: the read buffer takes a
// message's header with what follows it in one read, and the write buffer
// a frame header.
const (
	serverReadBuffer  = 1 << 10
	serverWriteBuffer = 256
)

func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return c, rw, err
	}
	h.conn = c
	h.out = &gatherConn{Conn: c, framed: true}
	// Bytes the client sent after its upgrade request wait in net/http's
	// reader, which is then kept.
	r := rw.Reader
	if r.Buffered() == 0 {
		r = bufio.NewReaderSize(h.out, serverReadBuffer)
	}
	// net/http flushed the 101 response before the hijack; flushed again
	// in case, before its buffer is dropped.
	if err := rw.Writer.Flush(); err != nil {
		return c, rw, err
	}
	return h.out, bufio.NewReadWriter(r, bufio.NewWriterSize(h.out, serverWriteBuffer)), nil
}

func (h *hijackRecorder) Unwrap() http.ResponseWriter { return h.ResponseWriter }
