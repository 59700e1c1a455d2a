package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/transport-io/tiogen/cmd/tio-conformance/conformance"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
	"github.com/transport-io/tiogen/runtime/wire"
	"github.com/transport-io/tiogen/tests/internal/conformancetest"
)

// wait bounds every wait of this suite.
const wait = conformancetest.Wait

type server struct{ *conformancetest.Server }

// startServer runs a conformance server; token "" admits everyone.
func startServer(t *testing.T, token string) *server {
	t.Helper()
	return &server{conformancetest.Start(t, conformance.Config{Token: token})}
}

// dialWT opens a WebTransport session of contract c.
func (s *server) dialWT(t *testing.T, c *tio.Contract, query string) (*tio.Client, error) {
	t.Helper()
	cl, err := endpoint.Dial(conformancetest.Context(t), s.Ready().URL+query, c, endpoint.DialOptions{CertHashes: [][32]byte{s.Cert.SHA256}})
	if err == nil {
		closeAtEnd(t, cl)
	}
	return cl, err
}

// dialWS opens a WebSocket-mapping session of contract c.
func (s *server) dialWS(t *testing.T, c *tio.Contract, query string) (*tio.Client, error) {
	t.Helper()
	ctx := conformancetest.Context(t)
	conn, err := websocket.Dial(ctx, s.Ready().WS+query, websocket.DialOptions{TLSConfig: conformancetest.Pinned(s.Cert)})
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
