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

	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
	"github.com/transport-io/tiogen/runtime/wire"
)

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

// Server is a running conformance server.
type Server struct {
	engine *tio.Server
	ws     *websocket.Handler
	// wt serves WebTransport and, on its TCP side, the WebSocket mapping;
	// plain serves the WebSocket mapping alone. One of them is set.
	wt    *webtransport.Server
	plain *http.Server
	ready Ready
}

// Listen starts a conformance server: the contract on Path over
// WebTransport and, on the same TCP address, over the WebSocket mapping
// (allowed: the contract's one unreliable event, move, declares fallback
// newest, §7.6).
func Listen(cfg Config) (*Server, error) {
	certs := 0
	for _, set := range []bool{cfg.Dev != nil, cfg.TLSConfig != nil, cfg.WebSocketOnly} {
		if set {
			certs++
		}
	}
	if certs != 1 {
		return nil, errors.New("conformance: set exactly one of Config.Dev, Config.TLSConfig and Config.WebSocketOnly")
	}
	engine, err := NewEngine(tio.ServerOptions{Options: tio.Options{HandshakeTimeout: cfg.HandshakeTimeout}})
	if err != nil {
		return nil, err
	}
	authorize := authorizeToken(cfg.Token)
	serve := func(c transport.Conn, _ *transport.Request, data any) { _ = engine.Serve(c, data) }
	s := &Server{
		engine: engine,
		ws: &websocket.Handler{
			Path:      Path,
			Authorize: authorize,
			OnSession: serve,
			Options:   cfg.WebSocket,
			Logger:    cfg.Logger,
			// The door is the query's token, never a cookie, so a page of
			// any origin may connect, as over WebTransport.
			InsecureSkipOriginCheck: true,
		},
	}
	if cfg.WebSocketOnly {
		err = s.listenPlain(cfg.Addr)
	} else {
		err = s.listenWebTransport(cfg, authorize, serve)
	}
	if err != nil {
		_ = engine.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) listenWebTransport(cfg Config, authorize transport.AuthorizeFunc, serve transport.SessionHandler) error {
	wts, err := webtransport.Listen(webtransport.Options{
		Addr:             cfg.Addr,
		Path:             Path,
		TLSConfig:        cfg.TLSConfig,
		Dev:              cfg.Dev,
		Authorize:        authorize,
		Handler:          serve,
		TCPHandler:       s.ws,
		HandshakeTimeout: cfg.HandshakeTimeout,
		Logger:           cfg.Logger,
	})
	if err != nil {
		return err
	}
	s.wt = wts
	tcp := wts.TCPAddr().String()
	s.ready = Ready{URL: wts.URL(), CertSHA256: certHash(cfg), TCP: tcp, WS: "wss://" + tcp + Path}
	return nil
}

func (s *Server) listenPlain(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return wire.Errorf(wire.PortInUse, "TCP port %s is held by another process: %w", addr, err)
		}
		return fmt.Errorf("conformance: %w", err)
	}
	s.plain = &http.Server{Handler: s.ws, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.plain.Serve(ln) }()
	tcp := ln.Addr().String()
	s.ready = Ready{TCP: tcp, WS: "ws://" + tcp + Path}
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
func (s *Server) Ready() Ready { return s.ready }

// Shutdown stops accepting, closes every session WT_NO_ERROR on both
// mappings and waits for them until ctx ends, then releases the ports.
func (s *Server) Shutdown(ctx context.Context) error {
	errWS := s.ws.Shutdown(ctx)
	var errListener error
	if s.wt != nil {
		errListener = s.wt.Shutdown(ctx)
	} else {
		// The sessions were hijacked and are closed above; this closes
		// the listener.
		errListener = s.plain.Shutdown(ctx)
	}
	return errors.Join(errWS, errListener, s.engine.Close())
}
