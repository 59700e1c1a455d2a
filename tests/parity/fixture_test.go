package parity

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// wait bounds every wait of these tests: far above what loopback takes,
// and nowhere near a spec timeout being waited out.
const wait = 10 * time.Second

const sessionPath = "/tio"

// idleForLoss is the QUIC idle timeout (a transport option, not a spec
// timer) of the tests that lose a WebTransport path: QUIC reports a silent
// path only once it passed.
const idleForLoss = time.Second

var (
	evShout = wire.EventID("shout")
	evHeard = wire.EventID("heard")
	evMove  = wire.EventID("move")
	evEcho  = wire.EventID("echo")
	evCount = wire.EventID("count")
	evHang  = wire.EventID("hang")
)

// parityEvents is the contract both mappings serve: an emit each way, an
// unreliable event that accepts the WebSocket mapping (§7.6), and calls.
func parityEvents() []tio.Event {
	return []tio.Event{
		{Name: "shout", Lane: wire.Reliable, From: tio.FromClient, Payload: wire.CodecJSON},
		{Name: "heard", Lane: wire.Reliable, From: tio.FromServer, Payload: wire.CodecJSON},
		{Name: "move", Lane: wire.Unreliable, Payload: wire.CodecJSON, Fallback: tio.Newest},
		{Name: "echo", Lane: wire.Reliable, Kind: tio.Returns, Payload: wire.CodecJSON, Result: wire.CodecJSON},
		{Name: "count", Lane: wire.Reliable, Kind: tio.Yields, Payload: wire.CodecJSON, Result: wire.CodecJSON},
		{Name: "hang", Lane: wire.Reliable, Kind: tio.Returns, Payload: wire.CodecJSON, Result: wire.CodecJSON},
	}
}

var parityContract = tio.MustContract("parity", parityEvents()...)

// serverConfig shapes one test server.
type serverConfig struct {
	// contract is the server's; nil is parityContract.
	contract *tio.Contract
	// authorize is the door of both mappings (§4.3).
	authorize transport.AuthorizeFunc
	// idle is the WebTransport side's QUIC idle timeout; 0 is its default.
	idle time.Duration
	// handshakeTimeout shortens the server's §4.1 deadline; 0 is 5000 ms.
	handshakeTimeout time.Duration
	// holdWebTransport accepts WebTransport sessions and never runs the
	// engine on them, so no handshake ever arrives there (§4.1); the
	// WebSocket side is served as usual.
	holdWebTransport bool
}

// server is one tio server on one WebTransport listener on 127.0.0.1 with
// a development certificate, the WebSocket mapping mounted on the
// listener's HTTPS side at the same path: the two mappings share the
// engine, the door and the address.
type server struct {
	cert *devcert.Cert
	tio  *tio.Server
	wt   *webtransport.Server
	// peers receives each peer whose handshake was accepted.
	peers chan *tio.Peer
	// ended receives how each Serve ended.
	ended chan error
	// wsRequests counts requests that reached the WebSocket mapping.
	wsRequests atomic.Int32
}

var quiet = slog.New(slog.DiscardHandler)

func startServer(t *testing.T, cfg serverConfig) *server {
	t.Helper()
	cert, err := devcert.Ensure(devcert.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	contract := cfg.contract
	if contract == nil {
		contract = parityContract
	}
	s := &server{cert: cert, peers: make(chan *tio.Peer, 64), ended: make(chan error, 64)}
	s.tio, err = tio.NewServer(contract, tio.ServerOptions{Options: tio.Options{HandshakeTimeout: cfg.handshakeTimeout}, OnSession: func(p *tio.Peer) {
		select {
		case s.peers <- p:
		default:
			t.Errorf("more peers than the test reads")
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(c transport.Conn, _ *transport.Request, data any) {
		err := s.tio.Serve(c, data)
		select {
		case s.ended <- err:
		default:
			t.Errorf("more sessions ended than the test reads")
		}
	}
	ws := &websocket.Handler{Path: sessionPath, Authorize: cfg.authorize, OnSession: serve, Logger: quiet}
	wtHandler := serve
	if cfg.holdWebTransport {
		wtHandler = func(c transport.Conn, _ *transport.Request, _ any) { <-c.Done() }
	}
	s.wt, err = webtransport.Listen(webtransport.Options{
		Addr:      "127.0.0.1:0",
		Path:      sessionPath,
		Dev:       cert,
		Authorize: cfg.authorize,
		Handler:   wtHandler,
		TCPHandler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.wsRequests.Add(1)
			ws.ServeHTTP(w, r)
		}),
		IdleTimeout: cfg.idle,
		Logger:      quiet,
	})
	if err != nil {
		_ = s.tio.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.tio.Close()
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := ws.Shutdown(ctx); err != nil {
			t.Errorf("WebSocket handler shutdown: %v", err)
		}
		if err := s.wt.Shutdown(ctx); err != nil {
			t.Errorf("WebTransport listener shutdown: %v", err)
		}
	})
	// The handlers every test shares; tests add the emit handlers.
	s.tio.HandleCall(evEcho, func(_ context.Context, _ *tio.Peer, req []byte) ([]byte, error) { return req, nil })
	s.tio.HandleStream(evCount, func(_ context.Context, _ *tio.Peer, req []byte, send func([]byte) error) error {
		var n int
		if err := json.Unmarshal(req, &n); err != nil {
			return tio.Errorf(tio.ValidationFailed, "count wants a number: %v", err)
		}
		for i := range n {
			if err := send([]byte(strconv.Itoa(i))); err != nil {
				return err
			}
		}
		return nil
	})
	return s
}

// addr is host:port of both sides of the listener (UDP and TCP share it).
func (s *server) addr() string { return s.wt.TCPAddr().String() }

// wtOptions pin the development certificate by hash, as a browser does.
func (s *server) wtOptions() webtransport.DialOptions {
	return webtransport.DialOptions{CertHashes: [][32]byte{s.cert.SHA256}}
}

// wsOptions trust the development certificate for wss://.
func (s *server) wsOptions() websocket.DialOptions {
	pool := x509.NewCertPool()
	pool.AddCert(s.cert.Leaf)
	return websocket.DialOptions{TLSConfig: &tls.Config{RootCAs: pool}}
}

// nextPeer is the next peer whose handshake the server accepted.
func (s *server) nextPeer(t *testing.T) *tio.Peer {
	t.Helper()
	return next(t, s.peers, "a peer's accepted handshake")
}

// nextEnd is how the next served session ended.
func (s *server) nextEnd(t *testing.T) error {
	t.Helper()
	return next(t, s.ended, "the end of a served session")
}

// mapping is one of the two mappings the table runs over.
type mapping struct {
	name string
	kind transport.Mapping
}

var (
	webtransportMapping = mapping{name: "webtransport", kind: transport.WebTransport}
	websocketMapping    = mapping{name: "websocket", kind: transport.WebSocket}
	mappings            = []mapping{webtransportMapping, websocketMapping}
)

// target is where and how to dial.
type target struct {
	// hostport is the address dialled; "" is the server's own.
	hostport string
	// query is appended to the session URL, "?token=..." (never logged).
	query string
	// idle is the WebTransport client's QUIC idle timeout; 0 is its default.
	idle time.Duration
}

// url is the session URL of this mapping at hostport.
func (m mapping) url(hostport, query string) string {
	scheme := "https"
	if m.kind == transport.WebSocket {
		scheme = "wss"
	}
	return scheme + "://" + hostport + sessionPath + query
}

// dial opens a transport session on m.
func (s *server) dial(ctx context.Context, m mapping, to target) (transport.Conn, error) {
	hostport := to.hostport
	if hostport == "" {
		hostport = s.addr()
	}
	url := m.url(hostport, to.query)
	if m.kind == transport.WebSocket {
		return websocket.Dial(ctx, url, s.wsOptions())
	}
	opts := s.wtOptions()
	opts.IdleTimeout = to.idle
	return webtransport.Dial(ctx, url, opts)
}

// tryConnect runs a client of contract on a new session of m and returns
// NewClient's result. The client is closed after the test.
func (s *server) tryConnect(t *testing.T, m mapping, contract *tio.Contract, to target) (*tio.Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	conn, err := s.dial(ctx, m, to)
	if err != nil {
		t.Fatalf("dial %s: %v", m.name, err)
	}
	cl, err := tio.NewClient(ctx, conn, contract, tio.Options{})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		_ = cl.Close(tio.NoError, "")
		_ = cl.Wait()
	})
	return cl, nil
}

// connect is tryConnect for a session that must be established.
func (s *server) connect(t *testing.T, m mapping, to target) *tio.Client {
	t.Helper()
	cl, err := s.tryConnect(t, m, parityContract, to)
	if err != nil {
		t.Fatalf("NewClient over %s: %v", m.name, err)
	}
	return cl
}

// next receives from ch within wait.
func next[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// within polls cond until it holds, for at most wait.
func within(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ended waits for the client's session to end and reports how.
func ended(t *testing.T, cl *tio.Client) error {
	t.Helper()
	next(t, cl.Done(), "the client's session to end")
	return cl.Err()
}

// listen subscribes to event on the client; each payload arrives on the
// channel in order.
func listen(t *testing.T, cl *tio.Client, event uint32) <-chan string {
	ch := make(chan string, 1024)
	unsubscribe := cl.On(event, func(b []byte) error {
		select {
		case ch <- string(b):
		default:
			t.Errorf("more messages than the test reads")
		}
		return nil
	})
	t.Cleanup(unsubscribe)
	return ch
}

// wantErr fails unless err carries code and its text says each of says.
func wantErr(t *testing.T, what string, err error, code wire.Code, says ...string) {
	t.Helper()
	if got := wire.CodeOf(err); got != code {
		t.Fatalf("%s: %v (code %q), want %s", what, err, got, code)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("%s: %q does not say %q", what, err.Error(), s)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// rawPeer is a client that speaks the wire itself over a transport session:
// it sends what the engine never would (another protocol version, hand-made
// sequences) and sees the bytes the server sends.
type rawPeer struct {
	conn transport.Conn
	send transport.SendStream // nil until the first write
	// frames carries the server's emit-stream frames, payloads copied; it
	// is closed once the stream ends.
	frames    chan wire.Frame
	bytesRead atomic.Int64
	readDone  chan struct{}
}

func (s *server) raw(t *testing.T, m mapping, to target) *rawPeer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	conn, err := s.dial(ctx, m, to)
	if err != nil {
		t.Fatalf("dial %s: %v", m.name, err)
	}
	r := &rawPeer{conn: conn, frames: make(chan wire.Frame, 256), readDone: make(chan struct{})}
	var once sync.Once
	stop := func() {
		once.Do(func() { _ = conn.Close(wire.CloseNoError, "") })
		next(t, conn.Done(), "the raw session to end")
		next(t, r.readDone, "the raw reader to end")
	}
	go r.read()
	t.Cleanup(stop)
	return r
}

// read runs until the server's emit stream or the session ends.
func (r *rawPeer) read() {
	defer close(r.readDone)
	defer close(r.frames)
	rs, err := r.conn.AcceptEmit(context.Background())
	if err != nil {
		return
	}
	fr := wire.NewReader(countingReader{rs, &r.bytesRead})
	for {
		f, err := fr.Next()
		if err != nil {
			return
		}
		f.Payload = append([]byte(nil), f.Payload...)
		r.frames <- f
	}
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// write writes b on the raw peer's emit stream, opened by the first write:
// a peer that writes nothing never opens it (§4.1 makes the two alike).
func (r *rawPeer) write(t *testing.T, b []byte) {
	t.Helper()
	if r.send == nil {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		var err error
		if r.send, err = r.conn.OpenEmit(ctx); err != nil {
			t.Fatalf("opening the raw emit stream: %v", err)
		}
	}
	if _, err := r.send.Write(b); err != nil {
		t.Fatalf("raw write: %v", err)
	}
}

// next is the server's next frame on its emit stream.
func (r *rawPeer) next(t *testing.T) wire.Frame {
	t.Helper()
	var f wire.Frame
	var ok bool
	select {
	case f, ok = <-r.frames:
	case <-time.After(wait):
		t.Fatal("timed out waiting for the server's next frame")
	}
	if !ok {
		t.Fatalf("the server's emit stream ended: %+v", r.conn.CloseInfo())
	}
	return f
}

// closed waits for the session to end and reports how.
func (r *rawPeer) closed(t *testing.T) transport.CloseInfo {
	t.Helper()
	next(t, r.conn.Done(), "the raw session to end")
	return r.conn.CloseInfo()
}

// handshake sends frame 0 with protocol version v and contract's table, then
// checks the server's frame 0 and proves the server accepted ours: its emit
// handler answered an emit sent after it.
func (r *rawPeer) handshake(t *testing.T, s *server) *tio.Peer {
	t.Helper()
	r.write(t, handshakeFrame(t, wire.ProtocolVersion, parityContract))
	if f := r.next(t); f.Type != wire.FrameHandshake {
		t.Fatalf("the server's frame 0 is %s", f.Type)
	}
	r.write(t, emitFrame(t, evShout, `"sync"`))
	if f := r.next(t); f.Type != wire.FrameEmit || f.EventID != evHeard || string(f.Payload) != `"sync"` {
		t.Fatalf("the answer to sync is %s %d %q", f.Type, f.EventID, f.Payload)
	}
	return s.nextPeer(t)
}

func handshakeFrame(t *testing.T, v int, c *tio.Contract) []byte {
	t.Helper()
	payload := wire.AppendHandshake(nil, wire.Handshake{V: v, Events: c.Table()})
	b, err := wire.AppendFrame(nil, wire.FrameHandshake, wire.CodecJSON, 0, payload)
	must(t, err)
	return b
}

func emitFrame(t *testing.T, event uint32, payload string) []byte {
	t.Helper()
	b, err := wire.AppendFrame(nil, wire.FrameEmit, wire.CodecJSON, event, []byte(payload))
	must(t, err)
	return b
}

// echoShouts makes the server answer each shout with a heard carrying the
// same payload, to the shouting peer.
func (s *server) echoShouts() {
	s.tio.HandleEmit(evShout, func(_ context.Context, p *tio.Peer, b []byte) error { return p.Emit(evHeard, b) })
}
