package webtransport

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// accepted is what a test's SessionHandler saw.
type accepted struct {
	conn transport.Conn
	req  *transport.Request
	data any
}

type harness struct {
	t    testing.TB
	cert *devcert.Cert
	srv  *Server
	// sessions receives every session the handler got; the handler holds
	// it until the session ends.
	sessions chan accepted
}

func mintCert(t testing.TB) *devcert.Cert {
	t.Helper()
	c, err := devcert.Mint(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startServer runs a development listener on 127.0.0.1 with a random port.
// opts may set anything but Addr, Path, Dev and Handler.
func startServer(t testing.TB, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, cert: mintCert(t), sessions: make(chan accepted, 16)}
	opts.Addr = "127.0.0.1:0"
	opts.Path = "/tio"
	opts.Dev = h.cert
	opts.Handler = func(c transport.Conn, r *transport.Request, data any) {
		h.sessions <- accepted{c, r, data}
		<-c.Done()
	}
	srv, err := Listen(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = srv
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return h
}

func (h *harness) dialOptions() DialOptions {
	return DialOptions{CertHashes: [][32]byte{h.cert.SHA256}}
}

func (h *harness) dial(query string) transport.Conn {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, h.srv.URL()+query, h.dialOptions())
	if err != nil {
		h.t.Fatalf("Dial: %v", err)
	}
	h.t.Cleanup(func() { c.Close(0, "") })
	return c
}

func (h *harness) accept() accepted {
	h.t.Helper()
	select {
	case a := <-h.sessions:
		return a
	case <-time.After(5 * time.Second):
		h.t.Fatal("no session reached the handler")
	}
	return accepted{}
}

// pair dials and returns the client's and the server's side of one session.
func (h *harness) pair() (client, server transport.Conn) {
	h.t.Helper()
	client = h.dial("")
	return client, h.accept().conn
}

func waitDone(t *testing.T, c transport.Conn) transport.CloseInfo {
	t.Helper()
	select {
	case <-c.Done():
		return c.CloseInfo()
	case <-time.After(5 * time.Second):
		t.Fatal("Done did not fire")
	}
	return transport.CloseInfo{}
}

func ctx5s(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(b)
}

func wantStreamError(t *testing.T, err error, code uint8, remote bool) {
	t.Helper()
	var se *transport.StreamError
	if !errors.As(err, &se) || se.Code != code || se.Remote != remote {
		t.Fatalf("err = %v (%T), want StreamError{Code: %d, Remote: %v}", err, err, code, remote)
	}
}

func wantCode(t *testing.T, err error, code wire.Code) {
	t.Helper()
	if got := wire.CodeOf(err); got != code {
		t.Fatalf("err = %v, want %s", err, code)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
