// Package endpoint is the session layer between generated code and the
// transports. Dial opens a client session, WebTransport first and the
// WebSocket mapping as a fallback when asked (§2, §3.3, ShouldFallBack);
// DialWebSocket opens one over the WebSocket mapping alone. Listen serves a
// tio.Server on both mappings at once: WebTransport over HTTP/3 on UDP and
// the WebSocket mapping on the same address's TCP side, at the same path,
// behind the same Authorize. Run keeps a client connected: it dials a new
// session after one ends, with jittered exponential backoff, and hands each
// session to the application, which re-establishes its state there (§11:
// nothing is resumed).
//
// Generated Dial functions call Dial; servers call Listen with their
// generated Server's runtime server.
package endpoint

import (
	"context"
	"crypto/tls"
	"net/url"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// DialOption configures Dial and DialWebSocket.
type DialOption func(*dialConfig)

type dialConfig struct {
	transport webtransport.DialOptions
	webSocket websocket.DialOptions
	session   tio.Options
	// fallback is set by WithWebSocketFallback; fallbackURL "" derives the
	// URL from the WebTransport one.
	fallback    bool
	fallbackURL string
	report      *Report
	// devPin is set by WithDevCertificate.
	devPin bool
}

// WithCertHashes pins the server certificate by the SHA-256 of its DER
// encoding, as a browser's serverCertificateHashes does: how a client
// reaches a server with a development certificate (runtime/devcert). The
// pin covers wss:// too, unless WithWebSocket brings its own TLSConfig.
func WithCertHashes(hashes ...[32]byte) DialOption {
	return func(c *dialConfig) { c.transport.CertHashes = append(c.transport.CertHashes, hashes...) }
}

// WithDevCertificate pins the development certificate a local server
// serves (runtime/devcert): before dialing, the client fetches the pin from
// the server's manifest at /.well-known/transport-io-dev over HTTPS, as a
// page's connectDev does, so no hash is copied by hand. The host must be
// loopback (WT_DEV_ONLY otherwise); an expired certificate is
// WT_CERT_EXPIRED. The pin covers the WebSocket mapping too. For local
// development only: elsewhere, verify the server against its certificate
// authority.
func WithDevCertificate() DialOption {
	return func(c *dialConfig) { c.devPin = true }
}

// WithTransport replaces the WebTransport dial options (keeping hashes
// pinned with WithCertHashes before it only if o repeats them).
func WithTransport(o webtransport.DialOptions) DialOption {
	return func(c *dialConfig) { c.transport = o }
}

// WithWebSocket sets the WebSocket dial options (session liveness, TLS,
// headers) used by DialWebSocket and by the fallback. When o.TLSConfig is
// nil the WebTransport options' pins or roots apply; when o.Header is nil
// the WebTransport options' Header is sent.
func WithWebSocket(o websocket.DialOptions) DialOption {
	return func(c *dialConfig) { c.webSocket = o }
}

// WithSession sets the session options: timers, limits, features.
func WithSession(o tio.Options) DialOption {
	return func(c *dialConfig) { c.session = o }
}

// WithWebSocketFallback makes Dial try the WebSocket mapping at wsURL
// (ws:// or wss://) when no WebTransport session can be had: WT_NO_SUPPORT,
// WT_HANDSHAKE_FAILED, WT_UDP_UNREACHABLE, or a WebTransport session on
// which no handshake arrived (WT_HANDSHAKE_TIMEOUT) — ShouldFallBack
// decides. A refusal (WT_UNAUTHORIZED) or any other answer of the server is
// returned as it is. An empty wsURL derives it from Dial's URL:
// https://host:port/path?query becomes wss://host:port/path?query, the
// address where Listen serves the WebSocket mapping, query (token) included.
func WithWebSocketFallback(wsURL string) DialOption {
	return func(c *dialConfig) { c.fallback, c.fallbackURL = true, wsURL }
}

// WithReport makes Dial fill in r with which mapping carries the session
// and, after a fallback, the WebTransport error that caused it. It is filled
// in when Dial fails too.
func WithReport(r *Report) DialOption {
	return func(c *dialConfig) { c.report = r }
}

func newDialConfig(opts []DialOption) dialConfig {
	var cfg dialConfig
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// pinDev adds the development pin of the server at url when
// WithDevCertificate asked for it.
func (c *dialConfig) pinDev(ctx context.Context, url string) error {
	if !c.devPin {
		return nil
	}
	pin, err := webtransport.DevPin(ctx, url, c.transport.Clock)
	if err != nil {
		return err
	}
	c.transport.CertHashes = append(c.transport.CertHashes, pin)
	return nil
}

// webSocketOptions are the WebSocket dial options, completed from the
// WebTransport ones: the same pins or roots, the same headers.
func (c *dialConfig) webSocketOptions() websocket.DialOptions {
	o := c.webSocket
	if o.TLSConfig == nil {
		switch {
		case len(c.transport.CertHashes) > 0:
			o.TLSConfig = webtransport.PinnedTLSConfig(c.transport.CertHashes, c.transport.Clock)
		case c.transport.RootCAs != nil:
			o.TLSConfig = &tls.Config{RootCAs: c.transport.RootCAs}
		}
	}
	if o.Header == nil {
		o.Header = c.transport.Header
	}
	return o
}

// Dial opens a session at url (https://host:port/path) and runs a client of
// contract on it, returning once the server's handshake is accepted (§4).
// It dials WebTransport; with WithWebSocketFallback it dials the WebSocket
// mapping when WebTransport cannot be had, and WithReport says which mapping
// carries the session and why. Errors carry the transport's or the
// handshake's WT_* code; a refusal is WT_UNAUTHORIZED with the server's
// reason.
func Dial(ctx context.Context, url string, contract *tio.Contract, opts ...DialOption) (*tio.Client, error) {
	cfg := newDialConfig(opts)
	if err := cfg.pinDev(ctx, url); err != nil {
		return nil, err
	}
	var ws attempt
	if cfg.fallback {
		wsURL := cfg.fallbackURL
		if wsURL == "" {
			var err error
			if wsURL, err = WebSocketURL(url); err != nil {
				return nil, err
			}
		}
		ws = webSocketAttempt(wsURL, cfg.webSocketOptions(), contract, cfg.session)
	}
	cl, rep, err := dialFallback(ctx, webTransportAttempt(url, cfg.transport, contract, cfg.session), ws)
	if cfg.report != nil {
		*cfg.report = rep
	}
	return cl, err
}

// DialWebSocket opens a session over the WebSocket mapping alone (§3.3) at
// url (ws:// or wss://) and runs a client of contract on it. Only the emit
// lane exists there: calls and streams fail with WT_LANE_UNAVAILABLE and the
// session stays up; unreliable events travel as DATAGRAM frames, and the
// server refuses the session (WT_RELIABILITY_REFUSED) unless every one of
// them declares `fallback newest` (§2, §7.6). WithReport records the
// WebSocket mapping, with no fallback.
func DialWebSocket(ctx context.Context, url string, contract *tio.Contract, opts ...DialOption) (*tio.Client, error) {
	cfg := newDialConfig(opts)
	if url == "" {
		return nil, wire.Errorf(wire.HandshakeFailed, "DialWebSocket needs a ws:// or wss:// URL")
	}
	if err := cfg.pinDev(ctx, url); err != nil {
		return nil, err
	}
	cl, err := webSocketAttempt(url, cfg.webSocketOptions(), contract, cfg.session)(ctx)
	if cfg.report != nil {
		*cfg.report = Report{}
		if err == nil {
			cfg.report.Mapping = transport.WebSocket
		}
	}
	return cl, err
}

// WebSocketURL is where Listen serves the WebSocket mapping of the session
// URL sessionURL: https://host:port/path?query becomes
// wss://host:port/path?query.
func WebSocketURL(sessionURL string) (string, error) {
	u, err := url.Parse(sessionURL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		// Never quote the URL: its query carries tokens.
		return "", wire.Errorf(wire.HandshakeFailed, "the session URL must be https://host[:port]/path to derive its WebSocket URL")
	}
	u.Scheme = "wss"
	return u.String(), nil
}
