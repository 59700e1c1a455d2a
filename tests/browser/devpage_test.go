package browser

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/cmd/tio-conformance/conformance"
	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/tio"
)

// The TypeScript runtime's connectDev in each browser against a Go
// development server: the page is served on plain HTTP by
// endpoint.Listener.ServeDevPage, which relays the manifest and the
// WebSocket mapping on the page's origin (a page can neither fetch from
// nor open wss:// to a development certificate).
func TestSpec10_3_ConnectDevFromAPageInChromium(t *testing.T) { runDevPage(t, chromium) }

func TestSpec10_3_ConnectDevFromAPageInFirefox(t *testing.T) { runDevPage(t, firefox) }

// echoes answers echo and shout, the two events the page uses.
type echoes struct {
	conformance.UnimplementedHandler
}

func (echoes) Echo(_ context.Context, _ conformance.Peer, req conformance.Text) (conformance.Text, error) {
	return req, nil
}

func (echoes) Shout(_ context.Context, p conformance.Peer, v conformance.Text) error {
	return p.EmitHeard(v)
}

type devSession struct {
	Transport      string                                  `json:"transport"`
	FallbackReason *string                                 `json:"fallbackReason"`
	Answer         *conformance.Text                       `json:"answer"`
	Error          *struct{ Code, Message, Remedy string } `json:"error"`
}

func runDevPage(t *testing.T, b browser) {
	requireBrowser(t, b)
	cert, err := devcert.Mint(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := conformance.NewServer(echoes{}, tio.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	l, err := endpoint.Listen(srv.Runtime(), endpoint.Options{Addr: "127.0.0.1:0", Path: conformance.Path, Dev: cert})
	if err != nil {
		t.Fatal(err)
	}
	page, err := l.ServeDevPage("127.0.0.1:0", http.FileServer(http.Dir(bundleDir(t, filepath.Join("runtime", "dev.ts")))))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := page.Shutdown(ctx); err != nil {
			t.Errorf("page shutdown: %v", err)
		}
		if err := l.Shutdown(ctx); err != nil {
			t.Errorf("listener shutdown: %v", err)
		}
	}()
	// A loopback port nothing listens on: a development server that is
	// not running.
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadBase := "http://" + dead.Addr().String()
	dead.Close()

	text := "via the page's origin from " + b.name
	scenarios := []scenario{
		{Name: "dev", Args: []any{text}},
		{Name: "devWithFallback", Args: []any{text}},
		{Name: "webSocketOnOrigin", Args: []any{text}},
		{Name: "devServerMissing", Args: []any{text, deadBase}},
	}
	for i := range scenarios {
		scenarios[i].SHA256 = pin(cert)
	}
	out := runIn(t, b, page.URL()+"index.html", scenarios, 90*time.Second)
	answered := func(what string, s devSession, transport string) {
		t.Helper()
		if s.Error != nil || s.Transport != transport || s.Answer == nil || s.Answer.Text != text {
			t.Errorf("%s: %+v (error %+v), want a session on %s answering %q", what, s, s.Error, transport, text)
		}
	}

	var dev struct {
		PinMatches bool `json:"pinMatches"`
		devSession
	}
	decode(t, out.Results[0], &dev)
	if !dev.PinMatches {
		t.Errorf("the manifest on the page's origin serves another pin than the listener's certificate")
	}
	answered("connectDev(location.origin)", dev.devSession, "webtransport")
	if dev.FallbackReason != nil {
		t.Errorf("connectDev: fallbackReason %q", *dev.FallbackReason)
	}

	var withFallback devSession
	decode(t, out.Results[1], &withFallback)
	answered("withFallback(connectDev, connectWebSocket)", withFallback, "webtransport")

	var ws devSession
	decode(t, out.Results[2], &ws)
	answered("connectWebSocket(ws://page origin)", ws, "websocket")

	var missing struct{ Alone, Fallback devSession }
	decode(t, out.Results[3], &missing)
	if e := missing.Alone.Error; e == nil || e.Code != "WT_HANDSHAKE_FAILED" || !strings.Contains(e.Message, "development manifest") || e.Remedy == "" {
		t.Errorf("connectDev to a server that is not running: %s, want WT_HANDSHAKE_FAILED about the manifest, with a remedy", out.Results[3])
	}
	answered("the fallback after connectDev failed", missing.Fallback, "websocket")
	if r := missing.Fallback.FallbackReason; r == nil || !strings.HasPrefix(*r, "WT_HANDSHAKE_FAILED") {
		t.Errorf("fallbackReason %v, want the connectDev failure", r)
	}
	if t.Failed() {
		raw, _ := json.Marshal(out.Logs)
		t.Logf("page logs: %s", raw)
	}
}
