package browser

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/transport-io/tiogen/cmd/tio-conformance/conformance"
	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/wire"
)

// The two closes that must reach a browser (§4, §4.3, §10.2), through the
// conformance server and its real engine: with a token configured, a page
// without it gets transport.closed {1007, 'bad-token'}; a page with it
// whose handshake declares 'move' reliable gets {1001} naming the event.
func TestSpec4_Spec10_2_ChromiumConformanceServerCloses(t *testing.T) {
	requireBrowser(t, chromium)
	cert, err := devcert.Mint(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	const token = "let-me-in"
	srv, err := conformance.Listen(conformance.Config{Addr: "127.0.0.1:0", Dev: cert, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}()
	url := srv.Ready().URL

	var mismatched [][2]string
	for _, e := range conformance.Contract.Events() {
		lane := string(e.Lane)
		if e.Name == "move" {
			lane = string(wire.Reliable)
		}
		mismatched = append(mismatched, [2]string{e.Name, lane})
	}
	out := runChromium(t, []scenario{
		{Name: "closed", URL: url + "?token=wrong", SHA256: pin(cert)},
		{Name: "closed", URL: url, SHA256: pin(cert)},
		{Name: "mismatch", URL: url + "?token=" + token, SHA256: pin(cert), Args: []any{mismatched}},
	})
	want := []struct {
		code   uint32
		reason string
	}{
		{wire.CloseUnauthorized, conformance.RefusalReason},
		{wire.CloseUnauthorized, conformance.RefusalReason},
		{wire.CloseContractMismatch, "event 'move' is 'unreliable' here and 'reliable' at the peer"},
	}
	for i, w := range want {
		var c closedResult
		if err := json.Unmarshal(out.Results[i], &c); err != nil {
			t.Fatal(err)
		}
		if !c.Ready || c.CloseCode == nil || *c.CloseCode != w.code || c.Reason != w.reason {
			t.Errorf("scenario %d: %s, want ready then closed {closeCode: %d, reason: %q}\nlogs: %v", i, out.Results[i], w.code, w.reason, out.Logs)
		}
	}
}
