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
	"crypto/x509"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// DialOptions configure Dial and DialWebSocket, as Options configure
// Listen. The zero value dials WebTransport alone, verifies the server
// against the system roots, and uses the spec's timers and this package's
// defaults.
type DialOptions struct {
	// CertHashes pins the server certificate by the SHA-256 of its DER
	// encoding, as a browser's serverCertificateHashes does: how a client
	// reaches a server with a development certificate (runtime/devcert)
	// whose pin it was given (webtransport.HashFromHex). The pin covers
	// wss:// too.
	CertHashes [][32]byte
	// DevCertificate pins the development certificate a local server
	// serves (runtime/devcert): before dialing, the client fetches the pin
	// from the server's manifest at /.well-known/transport-io-dev over
	// HTTPS, as a page's connectDev does, so no hash is copied by hand. The
	// host must be loopback (WT_DEV_ONLY otherwise); an expired certificate
	// is WT_CERT_EXPIRED. The pin covers the WebSocket mapping too. For
	// local development only: elsewhere, verify the server against its
	// certificate authority.
	DevCertificate bool
	// RootCAs replaces the system roots, on either mapping, when no
	// certificate is pinned.
	RootCAs *x509.CertPool
	// Header is sent with the session request on either mapping (cookies,
	// Authorization); it is never logged.
	Header http.Header

	// WebSocketFallback makes Dial try the WebSocket mapping when no
	// WebTransport session can be had: WT_NO_SUPPORT, WT_HANDSHAKE_FAILED,
	// WT_UDP_UNREACHABLE, or a WebTransport session on which no handshake
	// arrived (WT_HANDSHAKE_TIMEOUT) — ShouldFallBack decides. A refusal
	// (WT_UNAUTHORIZED, or HTTP 429/503: transport.ErrRefused) or any other
	// answer of the server is returned as it is.
	WebSocketFallback bool
	// WebSocketURL is where the fallback dials (ws:// or wss://). Empty
	// derives it from Dial's URL (WebSocketURL):
	// https://host:port/path?query becomes wss://host:port/path?query, the
	// address where Listen serves the WebSocket mapping, query (token)
	// included.
	WebSocketURL string
	// Report, when set, is filled in with which mapping carries the session
	// and, after a fallback, the WebTransport error that caused it; it is
	// filled in when the dial fails too.
	Report *Report

	// Session sets the session options: timers, limits, features.
	Session tio.Options
	// DialTimeout bounds the QUIC handshake plus the WebTransport session
	// request; 0 means webtransport.DefaultDialTimeout (10 s).
	DialTimeout time.Duration
	// ProbeTimeout bounds the HTTPS probe after a failed QUIC handshake
	// (§10.3); 0 means webtransport.ProbeTimeout (2 s).
	ProbeTimeout time.Duration
	// IdleTimeout is QUIC's idle timeout, after which a silent WebTransport
	// path is a lost session; 0 means 30 s.
	IdleTimeout time.Duration
	// CloseGrace is how long a WebTransport connection stays open after a
	// local close so the close reaches the server; 0 means 2 s.
	CloseGrace time.Duration
	// WebSocket tunes a WebSocket session: the §3.3 keepalive and idle
	// intervals, message size, close grace. The zero value is the spec's
	// values.
	WebSocket websocket.Options
	// Clock decides whether a pinned certificate expired; nil is the wall
	// clock.
	Clock clock.Clock
}

// webTransport are the WebTransport dial options, with the development pin
// when DevCertificate asks for it (fetched from the server at url).
func (o DialOptions) webTransport(ctx context.Context, url string) (webtransport.DialOptions, error) {
	wt := webtransport.DialOptions{
		CertHashes:   slices.Clone(o.CertHashes),
		RootCAs:      o.RootCAs,
		Header:       o.Header,
		DialTimeout:  o.DialTimeout,
		ProbeTimeout: o.ProbeTimeout,
		IdleTimeout:  o.IdleTimeout,
		CloseGrace:   o.CloseGrace,
		Clock:        o.Clock,
	}
	if o.DevCertificate {
		pin, err := webtransport.DevPin(ctx, url, o.Clock)
		if err != nil {
			return wt, err
		}
		wt.CertHashes = append(wt.CertHashes, pin)
	}
	return wt, nil
}

// webSocket are the WebSocket dial options, completed from the WebTransport
// ones: the same pins or roots, the same headers.
func (o DialOptions) webSocket(wt webtransport.DialOptions) websocket.DialOptions {
	ws := websocket.DialOptions{Options: o.WebSocket, Header: o.Header}
	switch {
	case len(wt.CertHashes) > 0:
		ws.TLSConfig = webtransport.PinnedTLSConfig(wt.CertHashes, o.Clock)
	case o.RootCAs != nil:
		ws.TLSConfig = &tls.Config{RootCAs: o.RootCAs}
	}
	return ws
}

// Dial opens a session at url (https://host:port/path) and runs a client of
// contract on it, returning once the server's handshake is accepted (§4).
// It dials WebTransport; with WebSocketFallback it dials the WebSocket
// mapping when WebTransport cannot be had, and Report says which mapping
// carries the session and why. Errors carry the transport's or the
// handshake's WT_* code; a refusal is WT_UNAUTHORIZED with the server's
// reason.
func Dial(ctx context.Context, url string, contract *tio.Contract, opts DialOptions) (*tio.Client, error) {
	wt, err := opts.webTransport(ctx, url)
	if err != nil {
		return nil, err
	}
	var ws attempt
	if opts.WebSocketFallback {
		wsURL := opts.WebSocketURL
		if wsURL == "" {
			if wsURL, err = WebSocketURL(url); err != nil {
				return nil, err
			}
		}
		ws = webSocketAttempt(wsURL, opts.webSocket(wt), contract, opts.Session)
	}
	cl, rep, err := dialFallback(ctx, webTransportAttempt(url, wt, contract, opts.Session), ws)
	if opts.Report != nil {
		*opts.Report = rep
	}
	return cl, err
}

// DialWebSocket opens a session over the WebSocket mapping alone (§3.3) at
// url (ws:// or wss://) and runs a client of contract on it. Only the emit
// lane exists there: calls and streams fail with WT_LANE_UNAVAILABLE and the
// session stays up; unreliable events travel as DATAGRAM frames, and the
// server refuses the session (WT_RELIABILITY_REFUSED) unless every one of
// them declares `fallback newest` (§2, §7.6). The fallback fields are not
// used; Report records the WebSocket mapping, with no fallback.
func DialWebSocket(ctx context.Context, url string, contract *tio.Contract, opts DialOptions) (*tio.Client, error) {
	if url == "" {
		return nil, wire.Errorf(wire.HandshakeFailed, "DialWebSocket needs a ws:// or wss:// URL")
	}
	wt, err := opts.webTransport(ctx, url)
	if err != nil {
		return nil, err
	}
	cl, err := webSocketAttempt(url, opts.webSocket(wt), contract, opts.Session)(ctx)
	if opts.Report != nil {
		*opts.Report = Report{}
		if err == nil {
			opts.Report.Mapping = transport.WebSocket
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
