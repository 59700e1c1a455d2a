package endpoint

import (
	"errors"
	"strings"
	"testing"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// TestListenAndDial serves a server with Listen and reaches it with Dial
// over real WebTransport on 127.0.0.1, pinning the development certificate.
func TestListenAndDial(t *testing.T) {
	srv := newTestServer(t)
	l := listen(t, srv.Server, Options{})
	ctx := testCtx(t)

	var rep Report
	c, err := Dial(ctx, l.URL(), contract, DialOptions{CertHashes: [][32]byte{cert(t).SHA256}, Report: &rep})
	if err != nil {
		t.Fatal(err)
	}
	if rep != (Report{Mapping: transport.WebTransport}) {
		t.Fatalf("report %+v, want WebTransport without fallback", rep)
	}
	resp, err := c.Call(ctx, evEcho, []byte("hi"))
	if err != nil || string(resp) != "hi" {
		t.Fatalf("echo: %q %v", resp, err)
	}
	c.Close(tio.NoError, "done")
	c.Wait()

	// Without the pin the certificate is not trusted: a handshake failure
	// with its code, not a hang.
	_, err = Dial(ctx, l.URL(), contract, DialOptions{})
	var te *tio.Error
	if !errors.As(err, &te) || te.Code != wire.HandshakeFailed {
		t.Fatalf("unpinned dial: %v", err)
	}
}

func TestWebSocketURLKeepsHostPathAndQuery(t *testing.T) {
	got, err := WebSocketURL("https://127.0.0.1:4433/chat?token=abc")
	if err != nil || got != "wss://127.0.0.1:4433/chat?token=abc" {
		t.Fatalf("WebSocketURL: %q %v", got, err)
	}
	for _, bad := range []string{"http://127.0.0.1/chat?token=secret", "wss://127.0.0.1/chat", "::"} {
		_, err := WebSocketURL(bad)
		if wire.CodeOf(err) != wire.HandshakeFailed {
			t.Fatalf("WebSocketURL(%q): %v, want WT_HANDSHAKE_FAILED", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Fatalf("the error prints the URL's query: %v", err)
		}
	}
}
