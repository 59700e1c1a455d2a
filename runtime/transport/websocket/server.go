package websocket

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	cws "github.com/coder/websocket"

	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// The server's defaults, the same as the WebTransport listener's.
const (
	// DefaultMaxSessions bounds the sessions a Handler holds at once,
	// refused ones still delivering their refusal included.
	DefaultMaxSessions = 10000
	// DefaultAuthorizeTimeout bounds one Authorize call; past it the
	// session closes as "authorize failed".
	DefaultAuthorizeTimeout = 5 * time.Second
	// AuthorizeFailedReason closes, as WT_NO_ERROR, a session whose
	// Authorize reached no decision (§4).
	AuthorizeFailedReason = "authorize failed"
	// ShutdownReason closes the sessions still open at Shutdown.
	ShutdownReason = transport.ShutdownReason
)

// Handler is the server side of the mapping: an http.Handler, mounted on
// the server's TCP (HTTPS) side, that upgrades requests at Path to
// WebSocket sessions. It decides each peer with Authorize exactly as the
// WebTransport listener does (§4, §4.3), and hands each accepted session to
// OnSession. A Handler must not be copied after first use.
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
	// 0 means DefaultAuthorizeTimeout.
	AuthorizeTimeout time.Duration
	// OnSession runs for each accepted session, on the request's
	// goroutine. When it returns, a session still open is closed
	// WT_NO_ERROR.
	OnSession transport.SessionHandler
	// Options tunes every session.
	Options Options
	// MaxSessions bounds sessions held at once; a request over it gets
	// HTTP 503 before the upgrade. 0 means DefaultMaxSessions.
	MaxSessions int
	// OriginPatterns lists origins admitted besides the request's own host,
	// as coder/websocket's AcceptOptions.OriginPatterns ("example.com",
	// "*.example.com", "https://app.example.com").
	OriginPatterns []string
	// InsecureSkipOriginCheck admits requests from every origin.
	InsecureSkipOriginCheck bool
	// Logger receives authorize failures; nil is slog.Default(). Query
	// strings are never logged.
	Logger *slog.Logger

	mu           sync.Mutex
	shuttingDown bool
	open         int // requests counted against MaxSessions
	live         map[*conn]struct{}
	sessions     sync.WaitGroup
}

// ServeHTTP upgrades the request, decides the peer and runs the session
// until it has ended and its socket is closed. A refused peer is closed
// WT_UNAUTHORIZED (WebSocket 4007) with the reason before anything else is
// sent, so it never sees this side's frame 0; an Authorize that reached no
// decision closes the session WT_NO_ERROR with the reason "authorize
// failed" (§4).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.Path != "" && r.URL.Path != h.Path {
		http.NotFound(w, r)
		return
	}
	if h.OnSession == nil {
		http.Error(w, "no session handler is configured", http.StatusInternalServerError)
		return
	}
	if !h.acquire() {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "session limit reached or shutting down", http.StatusServiceUnavailable)
		return
	}
	defer h.release()

	hj := &hijackRecorder{ResponseWriter: w}
	ws, err := cws.Accept(hj, r, &cws.AcceptOptions{
		OriginPatterns:     h.OriginPatterns,
		InsecureSkipVerify: h.InsecureSkipOriginCheck,
	})
	if err != nil {
		return // Accept answered the request with the error's status
	}
	req := &transport.Request{Path: r.URL.Path, Query: r.URL.Query(), RemoteAddr: r.RemoteAddr, Header: r.Header}
	// The request's context stays valid until ServeHTTP returns, even after
	// the hijack (net/http, Hijacker).
	data, authErr := h.decide(r.Context(), req)

	c := newConn(ws, hj.conn, h.Options)
	defer func() { <-c.finished }()
	if !h.track(c) {
		_ = c.Close(wire.CloseNoError, ShutdownReason)
		return
	}
	defer h.untrack(c)

	var refusal *transport.Refusal
	switch {
	case errors.As(authErr, &refusal):
		reason := refusal.Reason
		if reason == "" {
			reason = transport.DefaultRefusalReason
		}
		_ = c.Close(wire.CloseUnauthorized, reason)
	case authErr != nil:
		// No decision is no refusal: the next attempt may succeed (§4).
		h.logger().Warn("websocket: authorize failed", "path", r.URL.Path, "remote", r.RemoteAddr,
			"err", wire.Errorf(wire.NoError, "authorize: %w", authErr).Error())
		_ = c.Close(wire.CloseNoError, AuthorizeFailedReason)
	default:
		defer c.Close(wire.CloseNoError, "") // also if OnSession panics
		h.OnSession(c, req, data)
	}
}

// decide runs Authorize within AuthorizeTimeout. A nil Authorize accepts.
func (h *Handler) decide(ctx context.Context, req *transport.Request) (any, error) {
	if h.Authorize == nil {
		return nil, nil
	}
	timeout := h.AuthorizeTimeout
	if timeout <= 0 {
		timeout = DefaultAuthorizeTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return h.Authorize(ctx, req)
}

// acquire counts a request against MaxSessions, unless the handler is
// shutting down or full.
func (h *Handler) acquire() bool {
	limit := h.MaxSessions
	if limit <= 0 {
		limit = DefaultMaxSessions
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shuttingDown || h.open >= limit {
		return false
	}
	if h.live == nil {
		h.live = make(map[*conn]struct{})
	}
	h.open++
	h.sessions.Add(1)
	return true
}

func (h *Handler) release() {
	h.mu.Lock()
	h.open--
	h.mu.Unlock()
	h.sessions.Done()
}

// track records a session for Shutdown; it reports false once shutting
// down.
func (h *Handler) track(c *conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shuttingDown {
		return false
	}
	h.live[c] = struct{}{}
	return true
}

func (h *Handler) untrack(c *conn) {
	h.mu.Lock()
	delete(h.live, c)
	h.mu.Unlock()
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.Default()
}

// Shutdown stops accepting sessions (later requests get 503), closes every
// open session WT_NO_ERROR with ShutdownReason, and waits until their
// handlers returned and their sockets closed, or ctx ends. An http.Server's
// own Shutdown does not reach these sessions: their connections were
// hijacked.
func (h *Handler) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.shuttingDown = true
	live := make([]*conn, 0, len(h.live))
	for c := range h.live {
		live = append(live, c)
	}
	h.mu.Unlock()
	for _, c := range live {
		_ = c.Close(wire.CloseNoError, ShutdownReason)
	}
	waited := make(chan struct{})
	go func() {
		h.sessions.Wait()
		close(waited)
	}()
	select {
	case <-waited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// hijackRecorder keeps the TCP connection coder/websocket hijacks, so a
// closing session can drop it after CloseGrace whatever the socket is
// blocked on. (net/http clears the server's read and write deadlines on
// hijack, so an http.Server's timeouts do not end the session.)
type hijackRecorder struct {
	http.ResponseWriter
	conn net.Conn
}

func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	h.conn = c
	return c, rw, err
}

func (h *hijackRecorder) Unwrap() http.ResponseWriter { return h.ResponseWriter }
