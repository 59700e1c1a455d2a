// Package conformance is the conformance server of transport-io: the
// contract of testdata/conformance/conformance.tio served with fixed
// behaviour, over WebTransport and the WebSocket mapping on one
// address, so any peer can be tested against this implementation.
//
// Its Go API (types, Contract, Handler, Server, Client) is generated from
// the .tio file into conformance.tio.go; handler.go is the behaviour and
// this file the listener.
package conformance

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/metrics"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Path is where the server serves the contract, on both mappings.
const Path = "/conformance"

// RefusalReason is the reason of the refusal (WT_UNAUTHORIZED, §4) of a
// peer without the configured token.
const RefusalReason = "bad-token"

// Config configures a conformance server: exactly one of Dev, TLSConfig and
// WebSocketOnly.
type Config struct {
	// Addr is host:port for UDP (WebTransport) and TCP (WebSocket); port 0
	// picks a free one.
	Addr string
	// Dev serves a development certificate (loopback only).
	Dev *devcert.Cert
	// TLSConfig carries a real certificate.
	TLSConfig *tls.Config
	// WebSocketOnly serves the WebSocket mapping alone, over plain ws://
	// on TCP, without a certificate: WebTransport needs one.
	WebSocketOnly bool
	// Token, when set, is required as ?token= on both mappings; other
	// peers are refused with RefusalReason.
	Token string
	// HandshakeTimeout is the §4.1 deadline; 0 is the spec's 5000 ms.
	// Tests shorten it.
	HandshakeTimeout time.Duration
	// WebSocket tunes the WebSocket mapping's sessions.
	WebSocket websocket.Options
	// Logger receives operational events; nil is slog.Default().
	Logger *slog.Logger
	// Metrics, when set, counts the engine's and both listeners' series
	// (runtime/metrics).
	Metrics *metrics.Metrics
	// Adapter connects this host to the others serving the same rooms
	// (§7.3); nil is a single host. The caller closes it after Shutdown.
	Adapter adapter.Adapter
}

// Ready is the readiness line the command prints: where to connect and the
// certificate to pin. URL and CertSHA256 are empty for a WebSocket-only
// server.
type Ready struct {
	URL        string `json:"url"`
	CertSHA256 string `json:"certSha256"`
	TCP        string `json:"tcp"`
	WS         string `json:"ws"`
}

// Listener is a running conformance server.
type Listener struct {
	engine *Server
	// both serves WebTransport and the WebSocket mapping; plain serves the
	// WebSocket mapping alone with ws. Either both or plain is set.
	both  *endpoint.Listener
	ws    *websocket.Handler
	plain *http.Server
	ready Ready
}

// anyOrigin admits a browser's WebSocket upgrade from a page of any origin,
// as over WebTransport: the door is the query's token, never a cookie.
var anyOrigin = []string{"*"}

// Listen starts a conformance server: the contract on Path over
// WebTransport and, on the same TCP address, over the WebSocket mapping
// (allowed: the contract's one unreliable event, move, declares fallback
// newest, §7.6).
func Listen(cfg Config) (*Listener, error) {
	modes := 0
	for _, set := range []bool{cfg.Dev != nil, cfg.TLSConfig != nil, cfg.WebSocketOnly} {
		if set {
			modes++
		}
	}
	if modes != 1 {
		return nil, errors.New("conformance: set exactly one of Config.Dev, Config.TLSConfig and Config.WebSocketOnly")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	engine, err := newEngine(tio.ServerOptions{
		Options: tio.Options{HandshakeTimeout: cfg.HandshakeTimeout},
		Adapter: cfg.Adapter,
		Metrics: cfg.Metrics,
		Logger:  log,
		OnAdapterEvent: func(e adapter.Event) {
			log.Warn("adapter", "event", e.Kind.String(), "room", e.Room, "node", e.Node, "err", e.Err)
		},
		// A say that could not reach the other hosts fails loudly here.
		OnHandlerError: func(p *tio.Peer, event string, err error) {
			log.Warn("handler", "event", event, "peer", p.ID(), "err", err)
		},
	}, log)
	if err != nil {
		return nil, err
	}
	l := &Listener{engine: engine}
	if cfg.WebSocketOnly {
		err = l.listenPlain(cfg)
	} else {
		err = l.listenBoth(cfg)
	}
	if err != nil {
		_ = engine.Close()
		return nil, err
	}
	return l, nil
}

func (l *Listener) listenBoth(cfg Config) error {
	both, err := endpoint.Listen(l.engine.Runtime(), endpoint.Options{
		Addr:             cfg.Addr,
		Path:             Path,
		TLSConfig:        cfg.TLSConfig,
		Dev:              cfg.Dev,
		Authorize:        authorizeToken(cfg.Token),
		Logger:           cfg.Logger,
		WebSocket:        cfg.WebSocket,
		WebSocketOrigins: anyOrigin,
	})
	if err != nil {
		return err
	}
	l.both = both
	l.ready = Ready{URL: both.URL(), CertSHA256: certHash(cfg), TCP: both.TCPAddr().String(), WS: both.WebSocketURL()}
	return nil
}

func (l *Listener) listenPlain(cfg Config) error {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return wire.Errorf(wire.PortInUse, "TCP port %s is held by another process: %w", cfg.Addr, err)
		}
		return fmt.Errorf("conformance: %w", err)
	}
	l.ws = &websocket.Handler{
		Path:           Path,
		Authorize:      authorizeToken(cfg.Token),
		OnSession:      func(c transport.Conn, _ *transport.Request, data any) { _ = l.engine.Runtime().Serve(c, data) },
		Options:        cfg.WebSocket,
		OriginPatterns: anyOrigin,
		Logger:         cfg.Logger,
		Metrics:        cfg.Metrics,
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	l.plain = &http.Server{Handler: l.ws, ReadHeaderTimeout: 10 * time.Second, ErrorLog: transport.HTTPErrorLog(logger)}
	go func() { _ = l.plain.Serve(ln) }()
	tcp := ln.Addr().String()
	l.ready = Ready{TCP: tcp, WS: "ws://" + tcp + Path}
	return nil
}

// authorizeToken admits every peer when token is empty, else only those
// whose query carries it.
func authorizeToken(token string) transport.AuthorizeFunc {
	if token == "" {
		return nil
	}
	return func(_ context.Context, r *transport.Request) (any, error) {
		if r.Query.Get("token") != token {
			return nil, transport.Refuse(RefusalReason)
		}
		return nil, nil
	}
}

// certHash is the SHA-256 of the served leaf certificate, as hex.
func certHash(cfg Config) string {
	if cfg.Dev != nil {
		return cfg.Dev.Hex()
	}
	if len(cfg.TLSConfig.Certificates) == 0 || len(cfg.TLSConfig.Certificates[0].Certificate) == 0 {
		return ""
	}
	sum := sha256.Sum256(cfg.TLSConfig.Certificates[0].Certificate[0])
	return hex.EncodeToString(sum[:])
}

// Ready reports where the server listens.
func (l *Listener) Ready() Ready { return l.ready }

// Shutdown stops accepting, closes every session WT_NO_ERROR on both
// mappings and waits for them until ctx ends, then releases the ports.
func (l *Listener) Shutdown(ctx context.Context) error {
	var err error
	if l.both != nil {
		err = l.both.Shutdown(ctx)
	} else {
		// The sessions were hijacked from plain and are closed by ws;
		// plain's shutdown closes the listener.
		err = errors.Join(l.ws.Shutdown(ctx), l.plain.Shutdown(ctx))
	}
	return errors.Join(err, l.engine.Close())
}
