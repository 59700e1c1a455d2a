package conformance

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/devcert"
)

// A server needs exactly one way to serve: a development certificate, a
// real one, or the WebSocket mapping alone.
func TestListenNeedsExactlyOneMode(t *testing.T) {
	cert, err := devcert.Mint(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []Config{
		{Addr: "127.0.0.1:0"},
		{Addr: "127.0.0.1:0", Dev: cert, WebSocketOnly: true},
		{Addr: "127.0.0.1:0", Dev: cert, TLSConfig: &tls.Config{}},
	} {
		if _, err := Listen(cfg); err == nil || !strings.Contains(err.Error(), "exactly one") {
			t.Errorf("Listen(%+v) = %v, want an error asking for exactly one mode", cfg, err)
		}
	}
}
