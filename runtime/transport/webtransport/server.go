// Package webtransport carries transport-io sessions over WebTransport on
// HTTP/3 (§2, §3): a listener that feeds sessions to a transport.SessionHandler
// after the listener's authorize, and a Go client (Dial). Both give the engine
// a transport.Conn. Built on quic-go and webtransport-go, with this package's
// own close path so close codes reach browsers (tests/browser).
package webtransport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/metrics"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Defaults of the limits the engine enforces per session, and of QUIC's
// idle timeout. The door's limits (sessions, authorize) are
// transport.DefaultMaxSessions and transport.DefaultAuthorizeTimeout.
const (
	// DefaultMaxCalls is §10.1's 256 concurrent call streams per session;
	// the engine resets the excess with WT_TOO_MANY_STREAMS.
	DefaultMaxCalls = wire.MaxCalls
	// DefaultHandshakeTimeout is §4.1's 5000 ms handshake deadline, which
	// the engine enforces.
	DefaultHandshakeTimeout = wire.HandshakeDeadline
	// DefaultIdleTimeout is the QUIC idle timeout: a silent path is
	// reported as a lost connection after it.
	DefaultIdleTimeout = 30 * time.Second
	// DefaultHTTPSReadHeaderTimeout is how long the HTTPS side waits for a
	// request's header: the QUIC side's DefaultRequestTimeout.
	DefaultHTTPSReadHeaderTimeout = DefaultRequestTimeout
	// DefaultHTTPSIdleTimeout is how long an HTTPS keep-alive connection
	// may wait for its next request.
	DefaultHTTPSIdleTimeout = 120 * time.Second
)

// Options configure a listener. Addr, Path, Handler and one of TLSConfig or
// Dev are required.
type Options struct {
	// Addr is host:port for both UDP (HTTP/3) and TCP (HTTPS). Port 0
	// picks a port free on both.
	Addr string
	// Path is the request path sessions open, e.g. "/chat".
	Path string
	// TLSConfig carries the server's certificates. Its NextProtos are set
	// per side (h3; h2 and http/1.1).
	TLSConfig *tls.Config
	// Dev serves a development certificate instead of TLSConfig: the
	// listener must bind loopback (else WT_DEV_ONLY) and serves the pin at
	// /.well-known/transport-io-dev.
	Dev *devcert.Cert

	// Authorize decides each peer before its session is accepted (§4.3).
	// Nil accepts everyone.
	Authorize transport.AuthorizeFunc
	// AuthorizeTimeout bounds one Authorize call; default
	// transport.DefaultAuthorizeTimeout.
	AuthorizeTimeout time.Duration
	// Handler receives each accepted session. When it returns, a session
	// it left open is closed WT_NO_ERROR.
	Handler transport.SessionHandler

	// CheckOrigin decides the Origin of a browser's request. Default: every
	// origin. Browsers send no cookies or other ambient credentials with a
	// WebTransport request, so the door is Authorize (a token in the query);
	// use AllowOrigins to restrict which pages may connect.
	CheckOrigin func(r *http.Request) bool
	// TCPHandler serves every other path on the HTTPS side: the WebSocket
	// mapping attaches here. Nil answers 404.
	TCPHandler http.Handler

	// MaxSessions bounds sessions open at once; a request over it gets
	// HTTP 503. Default transport.DefaultMaxSessions.
	MaxSessions int
	// MaxSessionsPerAddress bounds the sessions one remote IP address holds
	// at once; a request over it gets HTTP 429. Default
	// transport.DefaultMaxSessionsPerAddress.
	MaxSessionsPerAddress int
	// MaxCalls is the per-session call cap the engine enforces; default
	// DefaultMaxCalls. QUIC admits twice as many bidirectional streams,
	// besides the session's own CONNECT stream, so the engine sees the
	// excess and resets it with code 9.
	MaxCalls int
	// HandshakeTimeout is the §4.1 deadline the engine enforces; default
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// IdleTimeout is QUIC's idle timeout; default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// CloseGrace is how long a close waits for the peer's answer before
	// tearing down; default DefaultCloseGrace.
	CloseGrace time.Duration
	// MaxConnections bounds QUIC connections open at once, with or without
	// a session; the next is closed H3_EXCESSIVE_LOAD. Default
	// DefaultMaxConnections.
	MaxConnections int
	// MaxConnectionsPerAddress bounds the QUIC connections one remote IP
	// address holds at once, with or without a session (half-open and
	// refused peers included); the next is closed H3_EXCESSIVE_LOAD.
	// Default DefaultMaxConnectionsPerAddress.
	MaxConnectionsPerAddress int
	// Metrics counts refusals and the connections the limits close; nil
	// counts nothing.
	Metrics *metrics.Metrics
	// RequestTimeout is how long a QUIC connection may go without a whole
	// HTTP/3 request before it is closed; default DefaultRequestTimeout.
	RequestTimeout time.Duration
	// HTTPSReadHeaderTimeout is the HTTPS side's (the WebSocket upgrades,
	// the probes, TCPHandler) net/http ReadHeaderTimeout: a connection
	// whose request header has not arrived whole this long after the
	// connection or the request began is closed. Default
	// DefaultHTTPSReadHeaderTimeout.
	HTTPSReadHeaderTimeout time.Duration
	// HTTPSIdleTimeout is the HTTPS side's net/http IdleTimeout: a
	// keep-alive connection that sends no next request for this long is
	// closed. Default DefaultHTTPSIdleTimeout.
	HTTPSIdleTimeout time.Duration
	// Clock runs the close grace and the request deadline; default the
	// wall clock.
	Clock clock.Clock
	// Logger receives operational events; default slog.Default(). Query
	// strings are never logged.
	Logger *slog.Logger
}

// Limits are a listener's effective limits, for the engine that enforces the
// per-session ones.
type Limits struct {
	MaxSessions      int
	MaxCalls         int
	HandshakeTimeout time.Duration
	// The HTTPS side's net/http timers.
	HTTPSReadHeaderTimeout time.Duration
	HTTPSIdleTimeout       time.Duration
}

// AllowOrigins returns a CheckOrigin that accepts requests without an Origin
// (non-browser clients) and those whose Origin is one of origins, compared
// exactly (scheme://host[:port]).
func AllowOrigins(origins ...string) func(*http.Request) bool {
	set := make(map[string]bool, len(origins))
	for _, o := range origins {
		set[o] = true
	}
	return func(r *http.Request) bool {
		o := r.Header.Get("Origin")
		return o == "" || set[o]
	}
}

// Server is a running listener.
type Server struct {
	path   string
	url    string
	limits Limits
	door   *transport.Door
	grace  time.Duration
	clock  clock.Clock
	log    *slog.Logger

	ports boundPorts
	qtr   *quic.Transport
	ln    *quic.EarlyListener
	wts   *wt.Server
	https *http.Server
	site  *site // the HTTPS side's handler, minus TCPHandler on HTTP/3
	conns *quicConns

	serving   sync.WaitGroup // accept loop, QUIC connections, HTTPS
	closeOnce sync.Once

	shutdownCtx atomic.Pointer[context.Context] // Shutdown's, once it began
}

type quicConnKey struct{}

// Listen binds the address on UDP and TCP and starts serving. A port held by
// another process fails with WT_PORT_IN_USE; a development listener asked
// to bind a non-loopback address fails with WT_DEV_ONLY.
func Listen(opts Options) (*Server, error) {
	if opts.Handler == nil {
		return nil, errors.New("webtransport: Options.Handler is required")
	}
	if opts.Path == "" || opts.Path[0] != '/' {
		return nil, fmt.Errorf("webtransport: Options.Path %q must start with /", opts.Path)
	}
	if (opts.TLSConfig == nil) == (opts.Dev == nil) {
		return nil, errors.New("webtransport: set exactly one of Options.TLSConfig and Options.Dev")
	}
	host, portStr, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("webtransport: Options.Addr %q: %w", opts.Addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("webtransport: Options.Addr %q: bad port", opts.Addr)
	}
	tlsConf := opts.TLSConfig
	if opts.Dev != nil {
		if host == "localhost" {
			host = "127.0.0.1" // browsers may resolve localhost to ::1 first
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return nil, wire.Errorf(wire.DevOnly, "a development listener binds loopback only, not %q: use 127.0.0.1 or ::1, or pass a real certificate", opts.Addr)
		}
		tlsConf = &tls.Config{Certificates: []tls.Certificate{opts.Dev.TLS}}
	}

	s := &Server{
		path:  opts.Path,
		grace: orDuration(opts.CloseGrace, DefaultCloseGrace),
		clock: clock.Or(opts.Clock),
		log:   opts.Logger,
	}
	s.conns = newQUICConns(s.clock, orInt(opts.MaxConnections, DefaultMaxConnections), orInt(opts.MaxConnectionsPerAddress, DefaultMaxConnectionsPerAddress),
		orDuration(opts.RequestTimeout, DefaultRequestTimeout), opts.Metrics)
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = slog.New(transport.QuietQueries(s.log.Handler()))
	s.door = transport.NewDoor(transport.DoorOptions{
		Authorize:             opts.Authorize,
		AuthorizeTimeout:      opts.AuthorizeTimeout,
		MaxSessions:           opts.MaxSessions,
		MaxSessionsPerAddress: opts.MaxSessionsPerAddress,
		Metrics:               opts.Metrics,
		Mapping:               metrics.WebTransport,
		Logger:                s.log,
	}, opts.Handler)
	s.limits = Limits{
		MaxSessions:      s.door.MaxSessions(),
		MaxCalls:         orInt(opts.MaxCalls, DefaultMaxCalls),
		HandshakeTimeout: orDuration(opts.HandshakeTimeout, DefaultHandshakeTimeout),

		HTTPSReadHeaderTimeout: orDuration(opts.HTTPSReadHeaderTimeout, DefaultHTTPSReadHeaderTimeout),
		HTTPSIdleTimeout:       orDuration(opts.HTTPSIdleTimeout, DefaultHTTPSIdleTimeout),
	}

	s.ports, err = bindPorts(host, port)
	if err != nil {
		return nil, err
	}
	bound := s.ports.udp.LocalAddr().(*net.UDPAddr)
	s.url = "https://" + net.JoinHostPort(host, strconv.Itoa(bound.Port)) + opts.Path
	s.site = newSite(bound.Port, opts.Dev, s.url, opts.TCPHandler)
	h3site := newSite(bound.Port, opts.Dev, s.url, nil)

	checkOrigin := opts.CheckOrigin
	if checkOrigin == nil {
		checkOrigin = func(*http.Request) bool { return true }
	}
	s.wts = &wt.Server{
		H3: &http3.Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				s.conns.requested(r)
				if r.Method == http.MethodConnect {
					s.serveConnect(w, r)
					return
				}
				h3site.ServeHTTP(w, r)
			}),
			// A handler's panic that HTTP/3 recovers is logged here.
			Logger: s.log,
			ConnContext: func(ctx context.Context, c *quic.Conn) context.Context {
				return context.WithValue(ctx, quicConnKey{}, c)
			},
		},
		CheckOrigin: checkOrigin,
		// Config stays nil: webtransport-go's flow control writes its own
		// capsules after our close capsule's FIN and destroys the close.
	}

	h3TLS := tlsConf.Clone()
	h3TLS.NextProtos = []string{http3.NextProtoH3}
	s.qtr = &quic.Transport{Conn: s.ports.udp}
	s.ln, err = s.qtr.ListenEarly(h3TLS, &quic.Config{
		EnableDatagrams:                  true,
		EnableStreamResetPartialDelivery: true,
		MaxIncomingStreams:               int64(2*s.limits.MaxCalls + 1), // the session's CONNECT request is a bidirectional stream too
		MaxIncomingUniStreams:            16,                             // HTTP/3's three plus the emit stream, with room
		MaxIdleTimeout:                   orDuration(opts.IdleTimeout, DefaultIdleTimeout),
	})
	if err != nil {
		s.ports.close()
		return nil, fmt.Errorf("webtransport: starting QUIC: %w", err)
	}

	httpsTLS := tlsConf.Clone()
	httpsTLS.NextProtos = []string{"h2", "http/1.1"}
	s.https = &http.Server{
		Handler:           s.site,
		TLSConfig:         httpsTLS,
		ReadHeaderTimeout: s.limits.HTTPSReadHeaderTimeout,
		IdleTimeout:       s.limits.HTTPSIdleTimeout,
		ErrorLog:          transport.HTTPErrorLog(s.log),
	}

	s.serving.Add(2)
	go s.acceptQUIC()
	go func() {
		defer s.serving.Done()
		_ = s.https.ServeTLS(s.ports.tcp, "", "")
	}()
	return s, nil
}

func orDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func orInt(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

// URL is the session URL: https://host:port/path.
func (s *Server) URL() string { return s.url }

// UDPAddr is the bound HTTP/3 address.
func (s *Server) UDPAddr() *net.UDPAddr { return s.ports.udp.LocalAddr().(*net.UDPAddr) }

// TCPAddr is the bound HTTPS address.
func (s *Server) TCPAddr() net.Addr { return s.ports.tcp.Addr() }

// Limits reports the effective limits.
func (s *Server) Limits() Limits { return s.limits }

// Sessions is the number of session slots taken now: requests being
// decided, open sessions, and refused ones still delivering their refusal.
func (s *Server) Sessions() int { return s.door.Sessions() }

func (s *Server) acceptQUIC() {
	defer s.serving.Done()
	for {
		qc, err := s.ln.Accept(context.Background())
		if err != nil {
			return
		}
		if why := s.conns.admit(qc); why != "" {
			s.serving.Go(func() { s.conns.refuse(qc, why) })
			continue
		}
		s.serving.Go(func() {
			defer s.conns.done(qc)
			if err := s.wts.ServeQUICConn(qc); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Debug("webtransport: serving a QUIC connection", "remote", qc.RemoteAddr().String(), "err", err)
			}
		})
	}
}

// serveConnect decides and upgrades one session request. The decision comes
// first (§4.3); a refused or undecided peer is still upgraded, because a
// WebTransport close is the only way to hand it a code and reason, and it is
// closed before any stream of this side exists.
func (s *Server) serveConnect(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != s.path {
		http.NotFound(w, r)
		return
	}
	if a := s.door.Enter(r.RemoteAddr); a != transport.Admitted {
		a.Answer(w)
		return
	}
	req := &transport.Request{Path: r.URL.Path, Query: r.URL.Query(), RemoteAddr: r.RemoteAddr, Header: r.Header}
	data, authErr := s.door.Decide(r.Context(), req)

	cw := &connectWriter{ResponseWriter: w}
	sess, err := s.wts.Upgrade(cw, r)
	if err != nil {
		s.door.Leave(r.RemoteAddr)
		if cw.str == nil { // nothing was sent yet: answer the request
			status := http.StatusBadRequest
			if !s.wts.CheckOrigin(r) {
				status = http.StatusForbidden
			}
			http.Error(w, "webtransport upgrade failed", status)
		}
		s.log.Debug("webtransport: upgrade failed", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
		return
	}
	qc, _ := r.Context().Value(quicConnKey{}).(*quic.Conn)
	c := newConn(sess, qc, cw.str, s.grace, s.clock, s)
	go s.door.Serve(c, req, data, authErr)
}

// endSession releases the QUIC connection of a session that ended (one session per connection, since webtransport-go's flow
// control stays off). After this side's close the connection stays open for
// the grace: closing it as soon as Chromium answered the close capsule makes
// Chromium report "Connection lost" instead of the code, now and then. After
// the peer's close or a loss there is nothing left to deliver.
func (s *Server) endSession(c *conn) {
	closeConn := func() { c.qconn.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "") }
	if info := c.CloseInfo(); info.Remote || info.Lost {
		closeConn()
	} else {
		s.clock.AfterFunc(s.grace, closeConn)
	}
}

// shutdownContext is Shutdown's context once it began, else nil.
func (s *Server) shutdownContext() context.Context {
	if ctx := s.shutdownCtx.Load(); ctx != nil {
		return *ctx
	}
	return nil
}

// Shutdown stops accepting, closes every open session WT_NO_ERROR, waits
// until ctx ends for handlers to return and for every peer to answer its
// close (not just the close grace: a peer that has not read the close when
// the ports are released sees a lost connection), then releases both
// ports, so a restart in the same process can bind at once. It returns
// ctx's error when the wait was cut short.
func (s *Server) Shutdown(ctx context.Context) error {
	s.ln.Close()
	s.shutdownCtx.CompareAndSwap(nil, &ctx)
	err := s.door.Shutdown(ctx)
	s.releasePorts()
	return err
}

// Close shuts down without waiting for handlers or peers.
func (s *Server) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.Shutdown(ctx)
	return nil
}

// releasePorts tears down what is left and frees the ports: the
// connections (ending any session still open), the HTTPS side, the sockets.
func (s *Server) releasePorts() {
	s.closeOnce.Do(func() {
		_ = s.wts.Close()
		_ = s.https.Close()
		_ = s.qtr.Close()
		s.ports.close()
		s.serving.Wait()
	})
}

// connectWriter hands webtransport-go the response writer it needs and keeps
// the CONNECT stream, where this package writes its own close capsule. It
// forwards exactly the interfaces Upgrade asserts.
type connectWriter struct {
	http.ResponseWriter
	str *http3.Stream
}

func (w *connectWriter) HTTPStream() *http3.Stream {
	w.str = w.ResponseWriter.(http3.HTTPStreamer).HTTPStream()
	return w.str
}

func (w *connectWriter) ReceivedSettings() <-chan struct{} {
	return w.ResponseWriter.(http3.Settingser).ReceivedSettings()
}

func (w *connectWriter) Settings() *http3.Settings {
	return w.ResponseWriter.(http3.Settingser).Settings()
}

func (w *connectWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }
