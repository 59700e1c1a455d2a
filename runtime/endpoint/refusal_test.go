package endpoint

import (
	"errors"
	"strings"
	"testing"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// §10.3: a session request the server refuses for its session bounds (HTTP
// 429 for the address's bound, 503 for the server's) is WT_HANDSHAKE_FAILED
// over both mappings, since the spec has no code of its own for it, and its
// message and remedy say what happened and what to do, never the
// certificate. Dial does not fall back to the WebSocket on it: the server
// answered.
func TestSpec10_3_DialRefusedForTheSessionBoundsSaysSo(t *testing.T) {
	for _, c := range []struct {
		name   string
		opts   Options
		status string
		want   []string
	}{
		{"per address", Options{MaxSessionsPerAddress: 1}, "HTTP 429", []string{"IP address already holds as many sessions", "Retry after 1 s", "MaxSessionsPerAddress"}},
		{"server full", Options{MaxSessions: 1}, "HTTP 503", []string{"maximum of sessions or is shutting down", "Retry after 1 s", "raise its MaxSessions"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newTestServer(t)
			l := listen(t, srv.Server, c.opts)
			ctx := testCtx(t)
			pin := DialOptions{CertHashes: [][32]byte{cert(t).SHA256}}
			fallback := pin
			var rep Report
			fallback.WebSocketFallback, fallback.Report = true, &rep
			for _, mp := range []struct {
				name string
				dial func(DialOptions) (*tio.Client, error)
			}{
				{"webtransport", func(o DialOptions) (*tio.Client, error) { return Dial(ctx, l.URL()+"?token=s3cret", contract, o) }},
				{"websocket", func(o DialOptions) (*tio.Client, error) {
					return DialWebSocket(ctx, l.WebSocketURL()+"?token=s3cret", contract, o)
				}},
			} {
				held, err := mp.dial(pin)
				if err != nil {
					t.Fatalf("%s: the session under the bound: %v", mp.name, err)
				}
				_, err = mp.dial(pin)
				if wire.CodeOf(err) != wire.HandshakeFailed || !errors.Is(err, transport.ErrRefused) {
					t.Fatalf("%s: the refused dial: %v, want WT_HANDSHAKE_FAILED wrapping transport.ErrRefused", mp.name, err)
				}
				msg := err.Error()
				t.Logf("%s: %s", mp.name, msg)
				for _, w := range append([]string{c.status, "refused the session"}, c.want...) {
					if !strings.Contains(msg, w) {
						t.Errorf("%s: %q lacks %q", mp.name, msg, w)
					}
				}
				for _, never := range []string{"certificate", "s3cret"} {
					if strings.Contains(msg, never) {
						t.Errorf("%s: %q names %q", mp.name, msg, never)
					}
				}
				if mp.name == "webtransport" {
					if _, err := mp.dial(fallback); !errors.Is(err, transport.ErrRefused) || rep.FellBack {
						t.Errorf("a refused WebTransport dial with the fallback: %v, fell back %v; want the refusal, no fallback", err, rep.FellBack)
					}
				}
				_ = held.Close(tio.NoError, "done")
				srv.peer(t)
			}
		})
	}
}
