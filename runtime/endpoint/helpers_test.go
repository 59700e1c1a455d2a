package endpoint

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/transport-io/tiogen/internal/leakcheck"
	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/wire"
)

// TestMain fails the package if a goroutine the tests started outlives
// them: sessions, listeners and Run end after close.
func TestMain(m *testing.M) { leakcheck.Main(m, 5*time.Second) }

// The test contract: calls (echo answers, hang never does), a client emit the server relays to the room
// "all" as a server emit.
var contract = tio.MustContract("echo",
	tio.Event{Name: "echo", Lane: wire.Reliable, Kind: tio.Returns, Payload: wire.CodecBytes, Result: wire.CodecBytes},
	tio.Event{Name: "hang", Lane: wire.Reliable, Kind: tio.Returns, Payload: wire.CodecBytes, Result: wire.CodecBytes},
	tio.Event{Name: "say", Lane: wire.Reliable, From: tio.FromClient, Kind: tio.Emit, Payload: wire.CodecBytes},
	tio.Event{Name: "said", Lane: wire.Reliable, From: tio.FromServer, Kind: tio.Emit, Payload: wire.CodecBytes},
)

var (
	evEcho = wire.EventID("echo")
	evHang = wire.EventID("hang")
	evSay  = wire.EventID("say")
	evSaid = wire.EventID("said")
)

var (
	certOnce sync.Once
	testCert *devcert.Cert
)

func cert(t *testing.T) *devcert.Cert {
	t.Helper()
	certOnce.Do(func() {
		c, err := devcert.Mint(time.Now(), 0)
		if err != nil {
			panic(err)
		}
		testCert = c
	})
	return testCert
}

// testServer is a tio.Server of contract that puts every peer in room
// "all", relays say as said to it, answers echo, and records its peers.
type testServer struct {
	*tio.Server
	peers chan *tio.Peer
}

func newTestServer(t *testing.T) *testServer {
	t.Helper()
	s := &testServer{peers: make(chan *tio.Peer, 16)}
	srv, err := tio.NewServer(contract, tio.ServerOptions{OnSession: func(p *tio.Peer) {
		_ = p.Join("all")
		s.peers <- p
	}})
	if err != nil {
		t.Fatal(err)
	}
	s.Server = srv
	srv.HandleCall(evEcho, func(_ context.Context, _ *tio.Peer, req []byte) ([]byte, error) { return req, nil })
	srv.HandleEmit(evSay, func(_ context.Context, _ *tio.Peer, b []byte) error {
		return srv.Room("all").Emit(context.Background(), evSaid, b)
	})
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// peer returns the next peer whose handshake the server accepted.
func (s *testServer) peer(t *testing.T) *tio.Peer {
	t.Helper()
	select {
	case p := <-s.peers:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no session reached the server")
		return nil
	}
}

func listen(t *testing.T, srv *tio.Server, opts Options) *Listener {
	t.Helper()
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.Path == "" {
		opts.Path = "/echo"
	}
	opts.Dev = cert(t)
	l, err := Listen(srv, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := l.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return l
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// tcpProxy forwards TCP connections on 127.0.0.1 to target; cut drops
// every connection it carries (a lost path), and new ones still pass.
// Its UDP port is not served: a WebTransport URL at its address has a
// blocked UDP path and a live HTTPS origin (§10.3 WT_UDP_UNREACHABLE).
type tcpProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		_ = ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		p.wg.Go(func() { _, _ = io.Copy(out, in); _ = out.Close() })
		p.wg.Go(func() { _, _ = io.Copy(in, out); _ = in.Close() })
	}
}

// cut drops the connections carried so far, as a dead path does: neither
// end sees a close of the session.
func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}
