// Package endpoint is the glue between generated code and the transports:
// Dial opens a WebTransport session and runs a tio client on it, Listen
// serves a tio server on a WebTransport listener. Generated Dial functions
// call Dial; servers call Listen with their generated Server's runtime
// server.
//
// WebTransport is the only mapping here for now; the WebSocket mapping
// (runtime/transport/websocket) plugs in beside it: a DialOption choosing
// the mapping, and a Listen option attaching its handler to the
// listener's TCPHandler.
package endpoint

import (
	"context"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
)

// DialOption configures Dial.
type DialOption func(*dialConfig)

type dialConfig struct {
	transport webtransport.DialOptions
	session   tio.Options
}

// WithCertHashes pins the server certificate by the SHA-256 of its DER
// encoding, as a browser's serverCertificateHashes does: how a client
// reaches a server with a development certificate (runtime/devcert).
func WithCertHashes(hashes ...[32]byte) DialOption {
	return func(c *dialConfig) { c.transport.CertHashes = append(c.transport.CertHashes, hashes...) }
}

// WithTransport replaces the WebTransport dial options (keeping hashes
// pinned with WithCertHashes before it only if o repeats them).
func WithTransport(o webtransport.DialOptions) DialOption {
	return func(c *dialConfig) { c.transport = o }
}

// WithSession sets the session options: timers, limits, features.
func WithSession(o tio.Options) DialOption {
	return func(c *dialConfig) { c.session = o }
}

// Dial opens a WebTransport session at url and runs a client of contract
// on it, returning once the server's handshake is accepted (§4). Errors
// carry the transport's or the handshake's WT_* code.
func Dial(ctx context.Context, url string, contract *tio.Contract, opts ...DialOption) (*tio.Client, error) {
	var cfg dialConfig
	for _, o := range opts {
		o(&cfg)
	}
	conn, err := webtransport.Dial(ctx, url, cfg.transport)
	if err != nil {
		return nil, err
	}
	return tio.NewClient(ctx, conn, contract, cfg.session)
}

// Listen serves srv on a WebTransport listener configured by opts (Addr,
// Path, TLSConfig or Dev, Authorize, ...); opts.Handler is set to srv's
// Serve, and the data Authorize returns becomes Peer.Data. Close the
// returned listener, then srv.
func Listen(srv *tio.Server, opts webtransport.Options) (*webtransport.Server, error) {
	opts.Handler = func(conn transport.Conn, _ *transport.Request, data any) {
		_ = srv.Serve(conn, data)
	}
	return webtransport.Listen(opts)
}
