package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/transport-io/tiogen/cmd/tio-conformance/conformance"
	"github.com/transport-io/tiogen/internal/leakcheck"
	"github.com/transport-io/tiogen/runtime/wire"
	"github.com/transport-io/tiogen/tests/internal/conformancetest"
)

// §4, §4.3: with a token configured, a peer without it is refused
// WT_UNAUTHORIZED with the reason 'bad-token' before the server's frame 0,
// on both mappings; a peer with it gets its session.
func TestSpec4_ConformanceRefusesWithoutToken(t *testing.T) {
	for _, m := range mappings {
		t.Run(m.name, func(t *testing.T) {
			srv := startServer(t, "s3cret")
			for _, query := range []string{"", "?token=wrong"} {
				_, err := m.dial(srv, t, conformance.Contract, query)
				e := wantCode(t, err, wire.Unauthorized)
				if !strings.Contains(e.Message, conformance.RefusalReason) {
					t.Fatalf("refusal %q does not carry the reason %q", e.Message, conformance.RefusalReason)
				}
				if strings.Contains(e.Error(), "wrong") {
					t.Fatalf("the error prints the query: %v", e)
				}
			}
			cl, err := m.dial(srv, t, conformance.Contract, "?token=s3cret")
			if err != nil {
				t.Fatalf("with the token: %v", err)
			}
			heard := listen(cl, conformancetest.Heard)
			if err := cl.Emit(conformancetest.Shout, text("in")); err != nil {
				t.Fatal(err)
			}
			heard.want(t, string(text("in")))
		})
	}
}

// §3.3: on the WebSocket mapping a call fails locally with
// WT_LANE_UNAVAILABLE and the session stays up.
func TestSpec3_3_ConformanceCallOnWebSocketIsLaneUnavailable(t *testing.T) {
	srv := startServer(t, "")
	cl, err := srv.dialWS(t, conformance.Contract, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.Call(conformancetest.Context(t), conformancetest.Echo, text("x"))
	wantCode(t, err, wire.LaneUnavailable)
	_, err = collect(conformancetest.Context(t), cl, conformancetest.Count, []byte(`{"n":3}`))
	wantCode(t, err, wire.LaneUnavailable)
	heard := listen(cl, conformancetest.Heard)
	if err := cl.Emit(conformancetest.Shout, text("still up")); err != nil {
		t.Fatal(err)
	}
	heard.want(t, string(text("still up")))
}

// Graceful shutdown closes every session on both mappings WT_NO_ERROR, and
// the clients learn it (§10.2, §11).
func TestConformanceShutdownClosesSessionsNoError(t *testing.T) {
	leakcheck.Check(t, wait)
	srv := startServer(t, "")
	wt, err := srv.dialWT(t, conformance.Contract, "")
	if err != nil {
		t.Fatal(err)
	}
	ws, err := srv.dialWS(t, conformance.Contract, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for name, cl := range map[string]interface{ Wait() error }{"webtransport": wt, "websocket": ws} {
		e := wantCode(t, cl.Wait(), wire.NoError)
		if !strings.Contains(e.Message, "shutting down") {
			t.Errorf("%s: closed with %q, want the shutdown reason", name, e.Message)
		}
	}
}
