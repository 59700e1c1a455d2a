package websocket

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	cws "github.com/coder/websocket"

	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// DialOptions tunes Dial.
type DialOptions struct {
	// Options tunes the session.
	Options Options
	// TLSConfig is used for wss:// URLs: set RootCAs, or
	// VerifyPeerCertificate to pin a certificate. nil uses the system roots.
	TLSConfig *tls.Config
	// Header is sent with the upgrade request (cookies, Authorization).
	Header http.Header
}

// Dial opens a session over the WebSocket at rawURL (ws:// or wss://). A
// failed upgrade returns a WT_HANDSHAKE_FAILED error (one the server refused
// with HTTP 429 or 503 wraps transport.ErrRefused); an authorize refusal
// arrives after the upgrade, as the session's close (CloseInfo code 1007).
func Dial(ctx context.Context, rawURL string, opts DialOptions) (transport.Conn, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Error quotes the URL, query included: say nothing of it.
		return nil, wire.Errorf(wire.HandshakeFailed, "the WebSocket URL does not parse")
	}
	if u.Scheme != "ws" && u.Scheme != "wss" {
		return nil, wire.Errorf(wire.HandshakeFailed, "the WebSocket URL's scheme is %q; use ws:// or wss://", u.Scheme)
	}
	var tcp rawConn
	dialer := &net.Dialer{}
	client := &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			g := &gatherConn{Conn: c}
			tcp.set(c, g)
			return g, nil
		},
		TLSClientConfig:   opts.TLSConfig,
		DisableKeepAlives: true,
	}}
	ws, rsp, err := cws.Dial(ctx, rawURL, &cws.DialOptions{HTTPClient: client, HTTPHeader: opts.Header})
	if err != nil {
		if rsp != nil {
			if e := transport.SessionRequestRefused(u.Host, u.Path, rsp.StatusCode, rsp.Header.Get("Retry-After")); e != nil {
				e.Message = "the WebSocket upgrade: " + e.Message
				return nil, e
			}
		}
		msg := err.Error()
		if u.RawQuery != "" {
			msg = strings.ReplaceAll(msg, u.RawQuery, "…")
		}
		return nil, wire.Errorf(wire.HandshakeFailed, "the WebSocket upgrade at %s://%s%s failed: %s", u.Scheme, u.Host, u.Path, msg)
	}
	raw, out := tcp.get()
	if raw == nil { // http.Transport dials through DialContext; never expected
		_ = ws.CloseNow()
		return nil, wire.Errorf(wire.HandshakeFailed, "the WebSocket upgrade at %s://%s%s came over no connection this dial made", u.Scheme, u.Host, u.Path)
	}
	return newConn(ws, raw, out, true, opts.Options), nil
}

// rawConn holds the TCP connection a dial made, so a closing session can
// drop it after CloseGrace whatever the socket is blocked on, and the
// gathering connection over it that coder/websocket writes to.
type rawConn struct {
	mu  sync.Mutex
	c   net.Conn
	out *gatherConn
}

func (r *rawConn) set(c net.Conn, out *gatherConn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.c, r.out = c, out
}

func (r *rawConn) get() (net.Conn, *gatherConn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.c, r.out
}
