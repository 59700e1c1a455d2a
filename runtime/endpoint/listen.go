package endpoint

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
)

// Options configure Listen: the WebTransport listener (Addr, Path,
// TLSConfig or Dev, Authorize, limits) and the WebSocket mapping, which is
// served on the listener's TCP side at the same Path, behind the same
// Authorize and AuthorizeTimeout, with the same MaxSessions bound (one per
// mapping) and Logger. Handler is set by Listen. TCPHandler still serves
// every other path of the TCP side.
type Options struct {
	webtransport.Options
	// WebSocket tunes every WebSocket session: the §3.3 keepalive and idle
	// intervals, message size, close grace. The zero value is the spec's
	// values.
	WebSocket websocket.Options
	// WebSocketOrigins lists the origins a browser's WebSocket upgrade may
	// come from besides the server's own host (websocket.Handler's
	// OriginPatterns): browsers attach cookies to cross-site upgrades, so
	// other origins are refused unless listed.
	WebSocketOrigins []string
}

// Listener serves one tio.Server on both mappings.
type Listener struct {
	wt *webtransport.Server
	ws *websocket.Handler
}

// Listen serves srv over WebTransport on opts.Addr (UDP) and over the
// WebSocket mapping on the same address's TCP side (§2, §3.3), both at
// opts.Path. Sessions of both mappings go to srv.Serve with the data
// Authorize returned (Peer.Data); a peer Authorize refuses is closed
// WT_UNAUTHORIZED with the reason before it sees frame 0 (§4), on either
// mapping. The per-session limits (MaxCalls, HandshakeTimeout) are srv's
// (tio.Options), and the listener takes them from there, replacing any set
// in opts, so they are configured once. Shut the listener down, then close
// srv.
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
	}
	wtOpts := opts.Options
	limits := srv.Options()
	wtOpts.MaxCalls, wtOpts.HandshakeTimeout = limits.MaxCalls, limits.HandshakeTimeout
	wtOpts.Handler = serve
	wtOpts.TCPHandler = pathSplit(opts.Path, ws, opts.TCPHandler)
	wt, err := webtransport.Listen(wtOpts)
	if err != nil {
		return nil, err
	}
	return &Listener{wt: wt, ws: ws}, nil
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
// WT_NO_ERROR, waits for their handlers until ctx ends, then releases both
// ports. It returns ctx's error when the wait was cut short.
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
