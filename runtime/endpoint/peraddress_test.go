package endpoint

import (
	"strings"
	"testing"

	"github.com/transport-io/tiogen/runtime/tio"
)

// One remote IP address holds at most MaxSessionsPerAddress sessions on
// each mapping: the next session request from 127.0.0.1, on a new source
// port, gets HTTP 429 over real QUIC and over WebSocket, and is counted;
// once one of the address's sessions ended, it is admitted again.
func TestSessionsPerAddressAreBoundedOnBothMappings(t *testing.T) {
	reg := serveMetrics(t)
	srv, err := tio.NewServer(contract, tio.ServerOptions{Metrics: reg.Metrics})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	l := listen(t, srv, Options{MaxSessionsPerAddress: 2})
	ctx := testCtx(t)
	pin := DialOptions{CertHashes: [][32]byte{cert(t).SHA256}}
	for _, mp := range []struct {
		name string
		dial func() (*tio.Client, error)
	}{
		{"webtransport", func() (*tio.Client, error) { return Dial(ctx, l.URL(), contract, pin) }},
		{"websocket", func() (*tio.Client, error) { return DialWebSocket(ctx, l.WebSocketURL(), contract, pin) }},
	} {
		var open []*tio.Client
		for range 2 {
			c, err := mp.dial()
			if err != nil {
				t.Fatalf("%s: a session under the bound: %v", mp.name, err)
			}
			open = append(open, c)
		}
		_, err := mp.dial()
		if err == nil || !strings.Contains(err.Error(), "429") {
			t.Fatalf("%s: the third session of the address: %v, want HTTP 429", mp.name, err)
		}
		t.Logf("%s: %v", mp.name, err)
		if got := value(t, reg, "tio_refusals_total", "mapping", mp.name, "reason", "max_sessions_per_address"); got != 1 {
			t.Fatalf("%s: %v refusals counted, want 1", mp.name, got)
		}
		if err := open[0].Close(tio.NoError, "make room"); err != nil {
			t.Fatal(err)
		}
		// The slot is given back once the server side released the session.
		var again *tio.Client
		waitFor(t, mp.name+": the address admitted again", func() bool {
			again, err = mp.dial()
			return err == nil
		})
		for _, c := range []*tio.Client{open[1], again} {
			_ = c.Close(tio.NoError, "done")
		}
	}
}
