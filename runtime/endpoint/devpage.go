package endpoint

// A development page on plain HTTP. A browser trusts a development
// certificate (runtime/devcert) for WebTransport only, by its pinned hash:
// a page can neither fetch the manifest from the listener's HTTPS side nor
// open wss:// to it. So the page's own server on loopback relays both, same
// origin as the page: the manifest, which a page's connectDev reads, and
// the WebSocket mapping over plain ws://, which its fallback opens.

import (
	"context"
	"errors"
	"net"
	"net/http"
	"syscall"

	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// DevHandler is what a development page's plain-HTTP server on loopback
// mounts so the page reaches this listener: the development manifest at
// /.well-known/transport-io-dev, naming this listener's WebTransport URL and
// pin (connectDev(location.origin) in the page reads it), and the WebSocket
// mapping at the listener's path over plain ws:// (the same door, Authorize
// and session limit as the wss:// side; Shutdown closes its sessions too).
// Both answer loopback peers only (403 WT_DEV_ONLY otherwise). Every other
// request goes to next (nil: 404). A listener without Options.Dev has no
// development affordances: WT_DEV_ONLY.
func (l *Listener) DevHandler(next http.Handler) (http.Handler, error) {
	if l.dev == nil {
		return nil, wire.Errorf(wire.DevOnly, "DevHandler needs a listener with a development certificate (Options.Dev); with a real certificate, serve the page over HTTPS and use the listener's own URLs")
	}
	if next == nil {
		next = http.NotFoundHandler()
	}
	mux := http.NewServeMux()
	mux.Handle("/", next)
	mux.Handle(devcert.ManifestPath, l.dev.ManifestHandler(l.URL()))
	mux.Handle(l.path, devcert.LoopbackOnly(l.ws))
	return mux, nil
}

// DevPage is a development page's plain-HTTP server on loopback, with
// DevHandler mounted.
type DevPage struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// ServeDevPage serves page on plain HTTP at addr (host:port, loopback only,
// else WT_DEV_ONLY; port 0 picks a free one), with DevHandler mounted, so
// the page needs nothing but connectDev(location.origin) and, for the
// fallback, ws:// on its own origin at the listener's path. Plain HTTP on
// 127.0.0.1 and localhost is a secure context, which WebTransport needs.
// Shut it down before the listener.
func (l *Listener) ServeDevPage(addr string, page http.Handler) (*DevPage, error) {
	h, err := l.DevHandler(page)
	if err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, wire.Errorf(wire.DevOnly, "the development page's address %q is not host:port", addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, wire.Errorf(wire.DevOnly, "a development page binds loopback only, not %q: use 127.0.0.1 or ::1", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, wire.Errorf(wire.PortInUse, "TCP port %s for the development page is held by another process: %w", addr, err)
	}
	if err != nil {
		return nil, err
	}
	// The HTTPS side's header and keep-alive deadlines and query-free error
	// log.
	lim := l.wt.Limits()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: lim.HTTPSReadHeaderTimeout, IdleTimeout: lim.HTTPSIdleTimeout,
		ErrorLog: transport.HTTPErrorLog(l.log)}
	p := &DevPage{srv: srv, ln: ln, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		_ = p.srv.Serve(ln)
	}()
	return p, nil
}

// URL is the page's root: http://host:port/.
func (p *DevPage) URL() string { return "http://" + p.ln.Addr().String() + "/" }

// Addr is the bound address.
func (p *DevPage) Addr() net.Addr { return p.ln.Addr() }

// Shutdown stops serving the page and waits for requests in flight until
// ctx ends. WebSocket sessions opened through it are the listener's: its
// Shutdown closes them.
func (p *DevPage) Shutdown(ctx context.Context) error {
	err := p.srv.Shutdown(ctx)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		_ = p.srv.Close()
	}
	<-p.done
	return err
}
