package endpoint

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
	"github.com/transport-io/tiogen/runtime/wire"
)

var contract = tio.MustContract("echo", tio.Event{Name: "echo", Lane: wire.Reliable, Kind: tio.Returns, Payload: wire.CodecBytes, Result: wire.CodecBytes})

// TestListenAndDial serves a server with Listen and reaches it with Dial
// over real WebTransport on 127.0.0.1, pinning the development certificate.
func TestListenAndDial(t *testing.T) {
	cert, err := devcert.Mint(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := tio.NewServer(contract, tio.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	echo, _ := contract.EventByName("echo")
	srv.HandleCall(echo.ID, func(_ context.Context, _ *tio.Peer, req []byte) ([]byte, error) { return req, nil })
	l, err := Listen(srv, webtransport.Options{Addr: "127.0.0.1:0", Path: "/echo", Dev: cert})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, l.URL(), contract, WithCertHashes(cert.SHA256))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Call(ctx, echo.ID, []byte("hi"))
	if err != nil || string(resp) != "hi" {
		t.Fatalf("echo: %q %v", resp, err)
	}
	c.Close(tio.NoError, "done")
	c.Wait()

	// Without the pin the certificate is not trusted: a handshake failure
	// with its code, not a hang.
	_, err = Dial(ctx, l.URL(), contract)
	var te *tio.Error
	if !errors.As(err, &te) || te.Code != wire.HandshakeFailed {
		t.Fatalf("unpinned dial: %v", err)
	}
}
