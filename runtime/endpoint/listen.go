package endpoint

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/devcert"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
)

// Options configure Listen: one listener serving WebTransport over
// HTTP/3 on UDP and the WebSocket mapping on the same address's TCP side,
// at the same path, through one door (transport.Door: Authorize,
// AuthorizeTimeout and MaxSessions apply to each mapping alike). Addr, Path
// and one of TLSConfig or Dev are required; the zero value of every other
// field is the spec's value or this package's default. The per-session
// limits (calls, handshake deadline) are the tio.Server's: they are
// configured once, in tio.ServerOptions.
type Options struct {
	// Addr is host:port for both UDP and TCP. Port 0 picks a port free on
	// both.
	Addr string
	// Path is the request path sessions open on either mapping, e.g.
	// "/chat".
	Path string
	// TLSConfig carries the server's certificates.
	TLSConfig *tls.Config
	// Dev serves a development certificate instead of TLSConfig
	// (runtime/devcert): the listener must bind loopback (else
	// WT_DEV_ONLY) and serves the pin at /.well-known/transport-io-dev,
	// where DialOptions.DevCertificate finds it.
	Dev *devcert.Cert

	// Authorize decides each peer before its session is accepted, on
	// either mapping (§4, §4.3); nil accepts everyone. Refuse refuses.
	Authorize AuthorizeFunc
	// AuthorizeTimeout bounds one Authorize call; 0 means
	// transport.DefaultAuthorizeTimeout (5 s).
	AuthorizeTimeout time.Duration
	// MaxSessions bounds the sessions open at once on each mapping; a
	// request over it gets HTTP 503. 0 means transport.DefaultMaxSessions.
	MaxSessions int
	// MaxSessionsPerAddress bounds the sessions one remote IP address holds
	// at once on each mapping; a request over it gets HTTP 429. 0 means
	// transport.DefaultMaxSessionsPerAddress.
	MaxSessionsPerAddress int
	// MaxConnectionsPerAddress bounds the QUIC connections of one remote IP
	// address, with or without a session; 0 means
	// webtransport.DefaultMaxConnectionsPerAddress.
	MaxConnectionsPerAddress int

	// CheckOrigin decides the Origin of a browser's WebTransport request;
	// nil admits every origin (browsers send no ambient credentials with
	// one, so Authorize is the door). webtransport.AllowOrigins builds one.
	CheckOrigin func(r *http.Request) bool
	// WebSocketOrigins lists the origins a browser's WebSocket upgrade may
	// come from besides the server's own host: browsers attach cookies to
	// cross-site upgrades, so other origins are refused unless listed.
	WebSocketOrigins []string
	// TCPHandler serves every other path of the TCP (HTTPS) side; nil
	// answers 404.
	TCPHandler http.Handler

	// IdleTimeout is QUIC's idle timeout, after which a silent
	// WebTransport path is a lost connection; 0 means 30 s.
	IdleTimeout time.Duration
	// CloseGrace is how long a WebTransport close waits for the peer's
	// answer before tearing down; 0 means 2 s.
	CloseGrace time.Duration
	// HTTPSReadHeaderTimeout is the TCP (HTTPS) side's net/http
	// ReadHeaderTimeout, for the WebSocket upgrades, the probes and
	// TCPHandler: a connection whose request header has not arrived whole
	// within it is closed; 0 means 10 s.
	HTTPSReadHeaderTimeout time.Duration
	// HTTPSIdleTimeout is the TCP side's net/http IdleTimeout: a keep-alive
	// connection that sends no next request within it is closed; 0 means
	// 120 s.
	HTTPSIdleTimeout time.Duration
	// WebSocket tunes every WebSocket session: the §3.3 keepalive and idle
	// intervals, message size, close grace. The zero value is the spec's
	// values.
	WebSocket websocket.Options
	// Clock runs the close grace; nil is the wall clock.
	Clock clock.Clock
	// Logger receives operational events; nil is slog.Default(). Query
	// strings are never logged.
	Logger *slog.Logger
}

// AuthorizeFunc decides a peer at the door (transport.AuthorizeFunc).
type AuthorizeFunc = transport.AuthorizeFunc

// Request is what Authorize sees of the request that opened a session
// (transport.Request). Its Query may carry a credential: never log it.
type Request = transport.Request

// Refuse returns the Authorize error that refuses a peer with reason: the
// session closes WT_UNAUTHORIZED with it before the peer sees anything
// (§4). An empty reason is "refused"; a longer one than 123 bytes is cut.
func Refuse(reason string) error { return transport.Refuse(reason) }

// Listener serves one tio.Server on both mappings.
type Listener struct {
	wt   *webtransport.Server
	ws   *websocket.Handler
	path string
	dev  *devcert.Cert // Options.Dev: DevHandler needs it
	log  *slog.Logger  // Options.Logger, for ServeDevPage's server
}

// Listen serves srv over WebTransport on opts.Addr (UDP) and over the
// WebSocket mapping on the same address's TCP side (§2, §3.3), both at
// opts.Path. Sessions of both mappings go to srv.Serve with the data
// Authorize returned (Peer.Data); a peer Authorize refuses is closed
// WT_UNAUTHORIZED with the reason before it sees frame 0 (§4), on either
// mapping. The per-session limits (MaxCalls, HandshakeTimeout) are srv's
// (tio.Options), and the listener takes them from there, so they are
// configured once. Shut the listener down, then close srv.
func Listen(srv *tio.Server, opts Options) (*Listener, error) {
	serve := func(conn transport.Conn, _ *transport.Request, data any) {
		_ = srv.Serve(conn, data)
	}
	ws := &websocket.Handler{
		Path:             opts.Path,
		Authorize:        opts.Authorize,
		AuthorizeTimeout: opts.AuthorizeTimeout,
		OnSession:        serve,
		Options:          opts.WebSocket,
		MaxSessions:      opts.MaxSessions,
		OriginPatterns:   opts.WebSocketOrigins,
		Logger:           opts.Logger,

		MaxSessionsPerAddress: opts.MaxSessionsPerAddress,
		Metrics:               srv.Metrics(),
	}
	limits := srv.Options()
	wt, err := webtransport.Listen(webtransport.Options{
		Addr:             opts.Addr,
		Path:             opts.Path,
		TLSConfig:        opts.TLSConfig,
		Dev:              opts.Dev,
		Authorize:        opts.Authorize,
		AuthorizeTimeout: opts.AuthorizeTimeout,
		Handler:          serve,
		CheckOrigin:      opts.CheckOrigin,
		TCPHandler:       pathSplit(opts.Path, ws, opts.TCPHandler),
		MaxSessions:      opts.MaxSessions,
		MaxCalls:         limits.MaxCalls,
		HandshakeTimeout: limits.HandshakeTimeout,
		IdleTimeout:      opts.IdleTimeout,
		CloseGrace:       opts.CloseGrace,
		Clock:            opts.Clock,
		Logger:           opts.Logger,

		MaxSessionsPerAddress:    opts.MaxSessionsPerAddress,
		MaxConnectionsPerAddress: opts.MaxConnectionsPerAddress,
		Metrics:                  srv.Metrics(),
		HTTPSReadHeaderTimeout:   opts.HTTPSReadHeaderTimeout,
		HTTPSIdleTimeout:         opts.HTTPSIdleTimeout,
	})
	if err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	return &Listener{wt: wt, ws: ws, path: opts.Path, dev: opts.Dev, log: logger}, nil
}

// pathSplit sends requests for path to ws and the others to rest (404
// when nil).
func pathSplit(path string, ws, rest http.Handler) http.Handler {
	if rest == nil {
		rest = http.NotFoundHandler()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == path {
			ws.ServeHTTP(w, r)
			return
		}
		rest.ServeHTTP(w, r)
	})
}

// URL is the WebTransport session URL: https://host:port/path.
func (l *Listener) URL() string { return l.wt.URL() }

// WebSocketURL is the WebSocket mapping's URL: wss://host:port/path.
func (l *Listener) WebSocketURL() string { return "wss" + strings.TrimPrefix(l.wt.URL(), "https") }

// TCPAddr is the bound TCP address (HTTPS and the WebSocket mapping).
func (l *Listener) TCPAddr() net.Addr { return l.wt.TCPAddr() }

// UDPAddr is the bound UDP address (WebTransport over HTTP/3).
func (l *Listener) UDPAddr() *net.UDPAddr { return l.wt.UDPAddr() }

// Limits are the WebTransport listener's effective limits.
func (l *Listener) Limits() webtransport.Limits { return l.wt.Limits() }

// Shutdown stops accepting on both mappings, closes every open session
// WT_NO_ERROR, waits until ctx ends for their handlers and for the peers'
// answers to the closes, then releases both ports. It returns ctx's error
// when the wait was cut short.
func (l *Listener) Shutdown(ctx context.Context) error {
	var wg sync.WaitGroup
	var wsErr error
	wg.Go(func() { wsErr = l.ws.Shutdown(ctx) })
	wtErr := l.wt.Shutdown(ctx)
	wg.Wait()
	if wtErr != nil {
		return wtErr
	}
	return wsErr
}

// Close stops both mappings without waiting for handlers or peers: open
// sessions are closed WT_NO_ERROR.
func (l *Listener) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	wtErr := l.wt.Close()
	if err := l.ws.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return errors.Join(wtErr, err)
	}
	return wtErr
}
