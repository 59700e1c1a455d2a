package endpoint

// A client's choice of mapping (§2, §3.3, §10.3): WebTransport first, and
// the WebSocket mapping only when no WebTransport session could be had at
// all. Once a server has answered over WebTransport (a refusal, a contract
// mismatch, a close), its answer stands and nothing is retried over the
// WebSocket.

import (
	"context"
	"errors"
	"fmt"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// attempt opens one session on one mapping and returns once the server's
// handshake was accepted (§4), as tio.NewClient does. Its errors carry their
// WT_* codes.
type attempt func(ctx context.Context) (*tio.Client, error)

// Report says which mapping a client ended up on and why.
type Report struct {
	// Mapping carries the session; 0 when no session was had.
	Mapping transport.Mapping
	// FellBack is true when the WebSocket mapping was tried because
	// WebTransport could not be had.
	FellBack bool
	// Why is the WebTransport error that caused the fallback; nil when
	// there was none.
	Why error
}

// ShouldFallBack reports whether a WebTransport attempt's error leaves the
// WebSocket mapping worth trying: the runtime has no WebTransport
// (WT_NO_SUPPORT), the transport-level handshake failed (WT_HANDSHAKE_FAILED,
// or WT_UDP_UNREACHABLE when only QUIC is blocked), or a session was
// established and no handshake arrived on it (WT_HANDSHAKE_TIMEOUT, §4.1:
// "some clients establish a WebTransport session successfully and then
// never transmit application bytes"). Every other error is the server's
// answer or the caller's (WT_UNAUTHORIZED is final, §4), and stands; so does
// a session request the server refused with HTTP 429 or 503
// (transport.ErrRefused): it would refuse the other mapping too, or let one
// address hold twice its bound.
func ShouldFallBack(err error) bool {
	if errors.Is(err, transport.ErrRefused) {
		return false
	}
	switch wire.CodeOf(err) {
	case wire.NoSupport, wire.HandshakeFailed, wire.UDPUnreachable, wire.HandshakeTimeout:
		return true
	}
	return false
}

// dialFallback runs webTransport and, when its error passes ShouldFallBack,
// webSocket. A nil webSocket means no fallback is configured: the
// WebTransport error is returned as it is. A nil webTransport means the
// runtime has none (WT_NO_SUPPORT) and goes to the WebSocket at once. When
// both fail, the error carries the WebSocket's code (the final answer) and
// says what each mapping said; errors.Is finds either code. The Report is
// filled in on failure too.
func dialFallback(ctx context.Context, webTransport, webSocket attempt) (*tio.Client, Report, error) {
	var wtErr error
	if webTransport == nil {
		wtErr = wire.Errorf(wire.NoSupport, "this client has no WebTransport")
	} else {
		cl, err := webTransport(ctx)
		if err == nil {
			return cl, Report{Mapping: transport.WebTransport}, nil
		}
		wtErr = err
	}
	if webSocket == nil || !ShouldFallBack(wtErr) || ctx.Err() != nil {
		return nil, Report{}, wtErr
	}
	rep := Report{FellBack: true, Why: wtErr}
	cl, err := webSocket(ctx)
	if err != nil {
		return nil, rep, bothFailed(wtErr, err)
	}
	rep.Mapping = transport.WebSocket
	return cl, rep, nil
}

// bothFailed says what each mapping said, each with its code and remedy.
func bothFailed(wtErr, wsErr error) error {
	code := wire.CodeOf(wsErr)
	if code == "" {
		code = wire.CodeOf(wtErr)
	}
	return &wire.Error{
		Code:    code,
		Message: fmt.Sprintf("WebTransport failed (%v), then the WebSocket fallback failed (%v)", wtErr, wsErr),
		Err:     errors.Join(wsErr, wtErr),
	}
}

// webTransportAttempt dials url over WebTransport and runs a
// client of contract on the session.
func webTransportAttempt(url string, opts webtransport.DialOptions, contract *tio.Contract, session tio.Options) attempt {
	return func(ctx context.Context) (*tio.Client, error) {
		conn, err := webtransport.Dial(ctx, url, opts)
		if err != nil {
			return nil, err
		}
		return tio.NewClient(ctx, conn, contract, session)
	}
}

// webSocketAttempt dials url (ws:// or wss://) over the
// WebSocket mapping and runs a client of contract on the session. An empty
// url means no fallback is configured: it returns nil.
func webSocketAttempt(url string, opts websocket.DialOptions, contract *tio.Contract, session tio.Options) attempt {
	if url == "" {
		return nil
	}
	return func(ctx context.Context) (*tio.Client, error) {
		conn, err := websocket.Dial(ctx, url, opts)
		if err != nil {
			return nil, err
		}
		return tio.NewClient(ctx, conn, contract, session)
	}
}
