// Package integration runs Go clients against the conformance server over
// real QUIC and real WebSocket on 127.0.0.1 (issue 4 and 6): every lane and
// every event of testdata/conformance/conformance.tio.
package integration

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/transport-io/tiogen/cmd/tio-conformance/conformance"
	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
	"github.com/transport-io/tiogen/runtime/wire"
)

// wait bounds every wait of this suite; nothing here should take a tenth
// of it.
const wait = 10 * time.Second

type server struct {
	*conformance.Server
	cert *devcert.Cert
}

// startServer runs a conformance server on a free port of 127.0.0.1 with a
// fresh development certificate; token "" admits everyone.
func startServer(t *testing.T, token string) *server {
	t.Helper()
	cert, err := devcert.Mint(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := conformance.Listen(conformance.Config{Addr: "127.0.0.1:0", Dev: cert, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return &server{srv, cert}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// dialWT opens a WebTransport session of contract c.
func (s *server) dialWT(t *testing.T, c *tio.Contract, query string) (*tio.Client, error) {
	t.Helper()
	cl, err := endpoint.Dial(testCtx(t), s.Ready().URL+query, c, endpoint.WithCertHashes(s.cert.SHA256))
	if err == nil {
		closeAtEnd(t, cl)
	}
	return cl, err
}

// dialWS opens a WebSocket-mapping session of contract c.
func (s *server) dialWS(t *testing.T, c *tio.Contract, query string) (*tio.Client, error) {
	t.Helper()
	ctx := testCtx(t)
	conn, err := websocket.Dial(ctx, s.Ready().WS+query, websocket.DialOptions{TLSConfig: pinned(s.cert)})
	if err != nil {
		return nil, err
	}
	cl, err := tio.NewClient(ctx, conn, c, tio.Options{})
	if err == nil {
		closeAtEnd(t, cl)
	}
	return cl, err
}

// mappings dial one conformance client over each mapping.
var mappings = []struct {
	name string
	dial func(s *server, t *testing.T, c *tio.Contract, query string) (*tio.Client, error)
}{
	{"webtransport", (*server).dialWT},
	{"websocket", (*server).dialWS},
}

func (s *server) client(t *testing.T) *tio.Client {
	t.Helper()
	cl, err := s.dialWT(t, conformance.Contract, "")
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return cl
}

func closeAtEnd(t *testing.T, cl *tio.Client) {
	t.Cleanup(func() {
		_ = cl.Close(tio.NoError, "")
		_ = cl.Wait()
	})
}

// pinned verifies a wss:// server by the certificate's SHA-256, as
// WebTransport's serverCertificateHashes does.
func pinned(cert *devcert.Cert) *tls.Config {
	return &tls.Config{
		InsecureSkipVerify: true, // replaced by the pin check
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || sha256.Sum256(raw[0]) != cert.SHA256 {
				return errors.New("the server's certificate is not the pinned one")
			}
			return nil
		},
	}
}

// inbox records what a client receives of one event, in order.
type inbox struct {
	ch chan string
}

func listen(cl *tio.Client, event uint32) *inbox {
	in := &inbox{ch: make(chan string, 1024)}
	cl.On(event, func(b []byte) error {
		in.ch <- string(b)
		return nil
	})
	return in
}

func (in *inbox) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-in.ch:
		return s
	case <-time.After(wait):
		t.Fatal("nothing arrived")
		return ""
	}
}

func (in *inbox) want(t *testing.T, want string) {
	t.Helper()
	if got := in.next(t); got != want {
		t.Fatalf("received %s, want %s", got, want)
	}
}

func text(s string) []byte { return jsonOf(map[string]string{"text": s}) }
func room(s string) []byte { return jsonOf(map[string]string{"room": s}) }

func jsonOf(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func wantCode(t *testing.T, err error, code wire.Code) *tio.Error {
	t.Helper()
	var e *tio.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("err = %v, want %s", err, code)
	}
	return e
}

// collect runs a streaming call to its end: the elements and the final
// error.
func collect(ctx context.Context, cl *tio.Client, event uint32, req []byte) ([]string, error) {
	var out []string
	for elem, err := range cl.Stream(ctx, event, req) {
		if err != nil {
			return out, err
		}
		out = append(out, string(elem))
	}
	return out, nil
}

// items is what count yields for n: {"i":0} … {"i":n-1}.
func items(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(`{"i":%d}`, i)
	}
	return out
}

// noLeak checks that a test's goroutines are gone once its cleanups ran.
func noLeak(t *testing.T) {
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(wait)
		for runtime.NumGoroutine() > base {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("%d goroutines left, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}
