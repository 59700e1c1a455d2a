package conformance

import (
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
	"time"

	cws "github.com/coder/websocket"

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

// A page of any origin may open the WebSocket mapping, on both kinds of
// server, as it may open WebTransport: the door is the query's token,
// never a cookie (§3.3).
func TestWebSocketAdmitsEveryOrigin(t *testing.T) {
	cert, err := devcert.Mint(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []Config{
		{Addr: "127.0.0.1:0", Dev: cert},
		{Addr: "127.0.0.1:0", WebSocketOnly: true},
	} {
		l, err := Listen(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true, // a throwaway certificate; what is tested is the upgrade
		}}}
		c, _, err := cws.Dial(ctx, l.Ready().WS, &cws.DialOptions{
			HTTPClient: client,
			HTTPHeader: http.Header{"Origin": {"https://elsewhere.example"}},
		})
		if err != nil {
			t.Errorf("%s: upgrade from another origin: %v", l.Ready().WS, err)
		} else {
			_ = c.CloseNow()
		}
		if err := l.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		cancel()
	}
}
