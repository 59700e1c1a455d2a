package endpoint

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
	"github.com/transport-io/tiogen/runtime/wire"
)

// fake is an attempt that records its calls and returns what it was given.
type fake struct {
	calls  int
	client *tio.Client
	err    error
}

func (f *fake) attempt(context.Context) (*tio.Client, error) {
	f.calls++
	return f.client, f.err
}

// every code the wire package names (§10.1, §10.2, §10.3 and the
// per-message codes), with whether a WebTransport attempt failing with it
// tries the WebSocket.
var everyCode = []struct {
	code     wire.Code
	fallBack bool
}{
	{wire.NoSupport, true},
	{wire.HandshakeFailed, true},
	{wire.UDPUnreachable, true},
	{wire.HandshakeTimeout, true},

	{wire.NoError, false}, // a lost session, or "authorize failed" (§4)
	{wire.Aborted, false},
	{wire.TooManyStreams, false},
	{wire.ProtocolVersionMismatch, false},
	{wire.ContractMismatch, false},
	{wire.PeerTooSlow, false},
	{wire.ProtocolError, false},
	{wire.IdleTimeout, false},
	{wire.ReliabilityRefused, false},
	{wire.Unauthorized, false}, // final (§4)
	{wire.LaneUnavailable, false},
	{wire.DatagramTooLarge, false},
	{wire.RoomNotJoined, false},
	{wire.SessionClosed, false},
	{wire.CertExpired, false},
	{wire.DevOnly, false},
	{wire.PortInUse, false},
	{wire.PayloadTooLarge, false},
	{wire.UnsupportedCodec, false},
	{wire.UnknownEvent, false},
	{wire.ValidationFailed, false},
	{wire.HandlerError, false},
}

func TestSpec10_3_FallbackDecisionForEveryCode(t *testing.T) {
	for _, tc := range everyCode {
		t.Run(string(tc.code), func(t *testing.T) {
			wtErr := wire.Errorf(tc.code, "the WebTransport attempt failed")
			wt := &fake{err: wtErr}
			ws := &fake{client: new(tio.Client)}
			cl, rep, err := dialFallback(context.Background(), wt.attempt, ws.attempt)
			if got := ShouldFallBack(wtErr); got != tc.fallBack {
				t.Fatalf("ShouldFallBack(%s) = %v, want %v", tc.code, got, tc.fallBack)
			}
			if wt.calls != 1 {
				t.Fatalf("WebTransport attempted %d times, want 1", wt.calls)
			}
			if !tc.fallBack {
				if ws.calls != 0 || cl != nil || err != wtErr || rep != (Report{}) {
					t.Fatalf("no fallback expected: WebSocket attempted %d times, client %p, err %v, report %+v", ws.calls, cl, err, rep)
				}
				return
			}
			if ws.calls != 1 || err != nil || cl != ws.client {
				t.Fatalf("fallback expected: WebSocket attempted %d times, client %p (want %p), err %v", ws.calls, cl, ws.client, err)
			}
			if rep.Mapping != transport.WebSocket || !rep.FellBack || rep.Why != wtErr {
				t.Fatalf("report %+v, want WebSocket, fell back because of %v", rep, wtErr)
			}
		})
	}
}

func TestShouldFallBackSeesWrappedCodes(t *testing.T) {
	wrapped := fmt.Errorf("dialling: %w", wire.Errorf(wire.UDPUnreachable, "QUIC is blocked"))
	if !ShouldFallBack(wrapped) {
		t.Fatalf("ShouldFallBack(%v) = false, want true", wrapped)
	}
	// A session close wrapped in WT_SESSION_CLOSED is that code, not its cause.
	closed := &wire.Error{Code: wire.SessionClosed, Err: wire.Errorf(wire.HandshakeTimeout, "no handshake")}
	if ShouldFallBack(closed) {
		t.Fatalf("ShouldFallBack(%v) = true, want false", closed)
	}
}

func TestErrorsWithoutACodeDoNotFallBack(t *testing.T) {
	for _, wtErr := range []error{errors.New("boom"), context.Canceled, context.DeadlineExceeded} {
		wt := &fake{err: wtErr}
		ws := &fake{client: new(tio.Client)}
		_, _, err := dialFallback(context.Background(), wt.attempt, ws.attempt)
		if ws.calls != 0 || err != wtErr {
			t.Fatalf("%v: WebSocket attempted %d times, err %v", wtErr, ws.calls, err)
		}
	}
}

func TestWebTransportSuccessNeverTriesWebSocket(t *testing.T) {
	wt := &fake{client: new(tio.Client)}
	ws := &fake{client: new(tio.Client)}
	cl, rep, err := dialFallback(context.Background(), wt.attempt, ws.attempt)
	if err != nil || cl != wt.client || ws.calls != 0 {
		t.Fatalf("client %p (want %p), err %v, WebSocket attempted %d times", cl, wt.client, err, ws.calls)
	}
	if rep != (Report{Mapping: transport.WebTransport}) {
		t.Fatalf("report %+v", rep)
	}
}

func TestSpec10_3_NoFallbackConfiguredReturnsTheWebTransportError(t *testing.T) {
	wtErr := wire.Errorf(wire.UDPUnreachable, "QUIC is blocked")
	wt := &fake{err: wtErr}
	cl, rep, err := dialFallback(context.Background(), wt.attempt, nil)
	if cl != nil || err != wtErr || rep != (Report{}) {
		t.Fatalf("client %p, err %v, report %+v", cl, err, rep)
	}
	if webSocketAttempt("", websocket.DialOptions{}, nil, tio.Options{}) != nil {
		t.Fatal("WebSocket with no URL must be no fallback (nil)")
	}
}

func TestSpec10_3_NoWebTransportGoesToWebSocket(t *testing.T) {
	ws := &fake{client: new(tio.Client)}
	cl, rep, err := dialFallback(context.Background(), nil, ws.attempt)
	if err != nil || cl != ws.client || !rep.FellBack || rep.Mapping != transport.WebSocket || wire.CodeOf(rep.Why) != wire.NoSupport {
		t.Fatalf("client %p, err %v, report %+v", cl, err, rep)
	}
	// Neither mapping: unsupported on this runtime (§10.3).
	if _, _, err := dialFallback(context.Background(), nil, nil); wire.CodeOf(err) != wire.NoSupport {
		t.Fatalf("Dial with no attempts: %v, want WT_NO_SUPPORT", err)
	}
}

func TestCancelledContextDoesNotFallBack(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	wt := &fake{err: wire.Errorf(wire.HandshakeFailed, "gave up")}
	ws := &fake{client: new(tio.Client)}
	cancel()
	_, _, err := dialFallback(ctx, wt.attempt, ws.attempt)
	if ws.calls != 0 || err != wt.err {
		t.Fatalf("WebSocket attempted %d times after the caller cancelled; err %v", ws.calls, err)
	}
}

func TestBothFailedSaysWhatEachMappingSaid(t *testing.T) {
	wtErr := wire.Errorf(wire.UDPUnreachable, "the QUIC handshake with 127.0.0.1:4433 failed, probing https://127.0.0.1:4433/tio?token=secret")
	wsErr := wire.Errorf(wire.Unauthorized, "session closed by the peer: expired")
	wt := &fake{err: wtErr}
	ws := &fake{err: wsErr}
	cl, rep, err := dialFallback(context.Background(), wt.attempt, ws.attempt)
	if cl != nil || !rep.FellBack || rep.Mapping != 0 || rep.Why != wtErr {
		t.Fatalf("client %p, report %+v", cl, rep)
	}
	// The WebSocket's answer is the final one: a refusal there is final (§4).
	if wire.CodeOf(err) != wire.Unauthorized {
		t.Fatalf("code %q, want the WebSocket's WT_UNAUTHORIZED: %v", wire.CodeOf(err), err)
	}
	for _, code := range []wire.Code{wire.UDPUnreachable, wire.Unauthorized} {
		if !errors.Is(err, &wire.Error{Code: code}) {
			t.Errorf("errors.Is(err, %s) = false: %v", code, err)
		}
	}
	msg := err.Error()
	for _, want := range []string{
		"WT_UDP_UNREACHABLE", wire.UDPUnreachable.Remedy(), "WT_UNAUTHORIZED", wire.Unauthorized.Remedy(), "expired",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "secret") {
		t.Errorf("the error prints a URL's query: %s", msg)
	}
	// Without a code from the WebSocket side, the WebTransport's stands.
	ws.err = errors.New("no route")
	if _, _, err := dialFallback(context.Background(), wt.attempt, ws.attempt); wire.CodeOf(err) != wire.UDPUnreachable || !strings.Contains(err.Error(), "no route") {
		t.Fatalf("both failed, WebSocket without a code: %v", err)
	}
}
