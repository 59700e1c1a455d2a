package browser

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/transport-io/tiogen/cmd/tio-conformance/conformance"
	"github.com/transport-io/tiogen/runtime/devcert"
)

type conformanceResult struct {
	ServerHandshake struct {
		Type   int `json:"type"`
		Events int `json:"events"`
	} `json:"serverHandshake"`
	Echo struct {
		Type    int    `json:"type"`
		Payload string `json:"payload"`
		End     bool   `json:"end"`
	} `json:"echo"`
	Count []any   `json:"count"`
	Move  *string `json:"move"`
}

// Headless Chromium against the conformance server, speaking the protocol
// from a hand-written page: the handshake (§4.1), an echo call (§3.2,
// §6.2, §6.3), a stream of 100 elements under the credit window (§6.6),
// and a datagram round trip (§7).
func TestSpec3_Spec6_Spec7_ChromiumAgainstConformanceServer(t *testing.T) {
	requireBrowser(t, chromium)
	cert, err := devcert.Mint(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := conformance.Listen(conformance.Config{Addr: "127.0.0.1:0", Dev: cert})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}()

	var table [][3]any
	for _, e := range conformance.Contract.Events() {
		table = append(table, [3]any{e.Name, e.ID, e.Lane})
	}
	out := runChromium(t, []scenario{{Name: "conformance", URL: srv.Ready().URL, SHA256: pin(cert), Args: []any{table}}})
	var r conformanceResult
	if err := json.Unmarshal(out.Results[0], &r); err != nil {
		t.Fatalf("%s: %v", out.Results[0], err)
	}
	if r.ServerHandshake.Type != 0x01 || r.ServerHandshake.Events != len(table) {
		t.Errorf("server's frame 0: %+v", r.ServerHandshake)
	}
	if r.Echo.Type != 0x04 || r.Echo.Payload != `{"text":"hello from chromium"}` || !r.Echo.End {
		t.Errorf("echo: %+v", r.Echo)
	}
	if len(r.Count) != 100 {
		t.Errorf("count yielded %d elements: %v", len(r.Count), r.Count)
	}
	for i, v := range r.Count {
		if f, ok := v.(float64); !ok || int(f) != i {
			t.Errorf("element %d is %v", i, v)
			break
		}
	}
	if r.Move == nil || *r.Move != `{"x":1.5,"y":-2}` {
		t.Errorf("move echo: %v", r.Move)
	}
	if t.Failed() {
		t.Logf("page result: %s\npage log: %v", out.Results[0], out.Logs)
	}
}
