package websocket

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/internal/leakcheck"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

func TestDialSecureWithPinnedCertificate(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	sessions := make(chan transport.Conn, 1)
	h := &Handler{Path: testPath, OnSession: func(c transport.Conn, _ *transport.Request, _ any) {
		sessions <- c
		<-c.Done()
	}}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusting dial below is logged otherwise
	srv.StartTLS()
	t.Cleanup(srv.Close)
	url := "wss" + strings.TrimPrefix(srv.URL, "https") + testPath
	pin := sha256.Sum256(srv.Certificate().Raw)

	// Pinned by hash, as a development certificate is (§ dev certificates).
	pinned := &tls.Config{
		InsecureSkipVerify: true, // replaced by the pin check below
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || sha256.Sum256(raw[0]) != pin {
				return errors.New("certificate does not match the pinned hash")
			}
			return nil
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, url, DialOptions{TLSConfig: pinned})
	if err != nil {
		t.Fatalf("Dial with the pinned certificate: %v", err)
	}
	sc := <-sessions
	cs, _ := c.OpenEmit(ctx)
	sr, _ := sc.AcceptEmit(ctx)
	if _, err := cs.Write([]byte("over tls")); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, sr, 8); !bytes.Equal(got, []byte("over tls")) {
		t.Fatalf("read %q", got)
	}
	drain(t, sc)
	_ = c.Close(wire.CloseNoError, "")
	waitFinished(t, c)
	waitDone(t, sc)
	waitFinished(t, sc)

	// Without the certificate's trust the upgrade fails before any session.
	_, err = Dial(ctx, url, DialOptions{TLSConfig: &tls.Config{RootCAs: x509.NewCertPool()}})
	if wire.CodeOf(err) != wire.HandshakeFailed {
		t.Fatalf("Dial with an untrusted certificate: %v, want WT_HANDSHAKE_FAILED", err)
	}
}

func TestDialErrorsNeverShowTheQuery(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = Dial(ctx, "ws://"+addr+"/tio?token=s3cret-value", DialOptions{})
	if wire.CodeOf(err) != wire.HandshakeFailed {
		t.Fatalf("Dial to a closed port: %v, want WT_HANDSHAKE_FAILED", err)
	}
	var we *wire.Error
	if !errors.As(err, &we) || strings.Contains(err.Error(), "s3cret") || strings.Contains(we.Message, "s3cret") {
		t.Fatalf("the error shows the query: %v", err)
	}
	for _, bad := range []string{"http://127.0.0.1/tio", "https://127.0.0.1/tio", "127.0.0.1:80", "ws://%zz"} {
		if _, err := Dial(ctx, bad, DialOptions{}); wire.CodeOf(err) != wire.HandshakeFailed {
			t.Fatalf("Dial(%q): %v, want WT_HANDSHAKE_FAILED", bad, err)
		}
	}
}
