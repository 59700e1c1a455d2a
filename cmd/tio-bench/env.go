package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// The bench contract: one event per lane and shape.
var (
	evPing  = wire.EventID("ping")  // emit, client → server
	evSaid  = wire.EventID("said")  // emit, server → client (broadcast)
	evMove  = wire.EventID("move")  // unreliable, client → server
	evEcho  = wire.EventID("echo")  // returns call
	evCount = wire.EventID("count") // yields call

	benchContract = tio.MustContract("bench",
		tio.Event{Name: "ping", Lane: wire.Reliable, From: tio.FromClient, Payload: wire.CodecJSON},
		tio.Event{Name: "said", Lane: wire.Reliable, From: tio.FromServer, Payload: wire.CodecJSON},
		tio.Event{Name: "move", Lane: wire.Unreliable, From: tio.FromClient, Payload: wire.CodecJSON, Fallback: tio.Newest},
		tio.Event{Name: "echo", Lane: wire.Reliable, Kind: tio.Returns, Payload: wire.CodecJSON, Result: wire.CodecJSON},
		tio.Event{Name: "count", Lane: wire.Reliable, Kind: tio.Yields, Payload: wire.CodecJSON, Result: wire.CodecJSON},
	)
)

const benchPath = "/bench"

// jsonPayload is a JSON object of exactly n bytes (n ≥ 20).
func jsonPayload(n int) []byte {
	const head, tail = `{"seq":1,"text":"`, `"}`
	pad := max(n-len(head)-len(tail), 0)
	return []byte(head + strings.Repeat("x", pad) + tail)
}

// frames is count copies of one §5 frame: the bytes a raw program writes
// where the engine writes the same frame.
func frames(t wire.FrameType, event uint32, payload []byte, count int) ([]byte, int) {
	one, err := wire.AppendFrame(nil, t, wire.CodecJSON, event, payload)
	if err != nil {
		panic(err) // a bug in this harness: its frames are fixed and valid
	}
	out := make([]byte, 0, len(one)*count)
	for range count {
		out = append(out, one...)
	}
	return out, len(one)
}

var (
	certOnce sync.Once
	cert     *devcert.Cert
	certErr  error
)

// benchCert is one development certificate for the whole run.
func benchCert() (*devcert.Cert, error) {
	certOnce.Do(func() { cert, certErr = devcert.Mint(time.Now(), 0) })
	return cert, certErr
}

// ourWT is a tio server on our WebTransport listener on 127.0.0.1.
type ourWT struct {
	srv  *tio.Server
	ln   *webtransport.Server
	cert *devcert.Cert
}

func startOurWT(opts tio.ServerOptions) (*ourWT, error) {
	c, err := benchCert()
	if err != nil {
		return nil, err
	}
	srv, err := tio.NewServer(benchContract, opts)
	if err != nil {
		return nil, err
	}
	ln, err := webtransport.Listen(webtransport.Options{
		Addr: "127.0.0.1:0", Path: benchPath, Dev: c,
		Handler:    func(conn transport.Conn, _ *transport.Request, data any) { _ = srv.Serve(conn, data) },
		CloseGrace: 200 * time.Millisecond,
		// Every bench session comes from 127.0.0.1.
		MaxSessionsPerAddress:    transport.DefaultMaxSessions,
		MaxConnectionsPerAddress: webtransport.DefaultMaxConnections,
	})
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	return &ourWT{srv: srv, ln: ln, cert: c}, nil
}

func (o *ourWT) dial(ctx context.Context) (*tio.Client, error) {
	return o.dialCounting(ctx, nil)
}

// dialCounting dials a client whose emit-stream Writes are counted in w
// (when not nil).
func (o *ourWT) dialCounting(ctx context.Context, w *writeCounter) (*tio.Client, error) {
	conn, err := webtransport.Dial(ctx, o.ln.URL(), webtransport.DialOptions{
		CertHashes: [][32]byte{o.cert.SHA256},
		CloseGrace: 200 * time.Millisecond,
	})
	if err != nil {
		return nil, err
	}
	return tio.NewClient(ctx, w.wrap(conn), benchContract, tio.Options{})
}

func (o *ourWT) close() {
	_ = o.srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = o.ln.Shutdown(ctx)
}

// closeClient ends a client session and waits for its goroutines.
func closeClient(c *tio.Client) {
	_ = c.Close(tio.NoError, "")
	_ = c.Wait()
}

// rawWT is a plain webtransport-go server on 127.0.0.1: the baseline. Every
// session it accepts goes to onSession, on the request's goroutine.
type rawWT struct {
	udp *net.UDPConn
	srv *wt.Server
	url string
	tr  *wt.Transport
}

func startRawWT(onSession func(*wt.Session)) (*rawWT, error) {
	c, err := benchCert()
	if err != nil {
		return nil, err
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	h3 := &http3.Server{
		TLSConfig:  http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{c.TLS}}),
		QUICConfig: &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true},
	}
	wt.ConfigureHTTP3Server(h3)
	r := &rawWT{udp: udp, url: fmt.Sprintf("https://%s%s", udp.LocalAddr(), benchPath)}
	r.srv = &wt.Server{H3: h3, CheckOrigin: func(*http.Request) bool { return true }}
	h3.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		sess, err := r.srv.Upgrade(w, req)
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		onSession(sess)
	})
	r.tr = &wt.Transport{TLSClientConfig: &tls.Config{RootCAs: certPool(c)}}
	go func() { _ = r.srv.Serve(udp) }()
	return r, nil
}

func (r *rawWT) dial(ctx context.Context) (*wt.Session, error) {
	_, sess, err := r.tr.Dial(ctx, r.url, nil)
	return sess, err
}

func (r *rawWT) close() {
	_ = r.tr.Close()
	_ = r.srv.Close()
	_ = r.udp.Close()
}

// ourWS is a tio server on the WebSocket mapping, plain ws:// on 127.0.0.1.
type ourWS struct {
	srv *tio.Server
	h   *websocket.Handler
	hs  *http.Server
	url string
}

func startOurWS(opts tio.ServerOptions) (*ourWS, error) {
	srv, err := tio.NewServer(benchContract, opts)
	if err != nil {
		return nil, err
	}
	h := &websocket.Handler{
		Path:        benchPath,
		OnSession:   func(c transport.Conn, _ *transport.Request, data any) { _ = srv.Serve(c, data) },
		MaxSessions: 100_000,
		// Every bench session comes from 127.0.0.1.
		MaxSessionsPerAddress: 100_000,
	}
	url, hs, err := serveHTTP(h)
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	return &ourWS{srv: srv, h: h, hs: hs, url: "ws://" + url + benchPath}, nil
}

func (o *ourWS) dial(ctx context.Context) (*tio.Client, error) {
	return o.dialCounting(ctx, nil)
}

// dialCounting dials a client whose emit-stream Writes are counted in w
// (when not nil).
func (o *ourWS) dialCounting(ctx context.Context, w *writeCounter) (*tio.Client, error) {
	conn, err := websocket.Dial(ctx, o.url, websocket.DialOptions{})
	if err != nil {
		return nil, err
	}
	return tio.NewClient(ctx, w.wrap(conn), benchContract, tio.Options{})
}

func (o *ourWS) close() {
	_ = o.srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = o.h.Shutdown(ctx)
	_ = o.hs.Close()
}

// serveHTTP serves h on a fresh 127.0.0.1 port and returns host:port.
func serveHTTP(h http.Handler) (string, *http.Server, error) {
	return serveHTTPOn("127.0.0.1:0", h)
}

// serveHTTPOn serves h on addr and returns host:port.
func serveHTTPOn(addr string, h http.Handler) (string, *http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Println("tio-bench: http server:", err)
		}
	}()
	return ln.Addr().String(), hs, nil
}

// certPool trusts the development certificate, so the raw client verifies
// the server as ours does by pin.
func certPool(c *devcert.Cert) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.Leaf)
	return p
}

// writeCounter counts the Writes and bytes the engine makes on its emit
// stream: how well its writer coalesces frames under the load at hand.
type writeCounter struct {
	writes, bytes atomic.Int64
}

// wrap returns conn with its emit stream counted; a nil counter returns
// conn itself.
func (w *writeCounter) wrap(conn transport.Conn) transport.Conn {
	if w == nil {
		return conn
	}
	return countedConn{Conn: conn, w: w}
}

type countedConn struct {
	transport.Conn
	w *writeCounter
}

func (c countedConn) OpenEmit(ctx context.Context) (transport.SendStream, error) {
	st, err := c.Conn.OpenEmit(ctx)
	if err != nil {
		return nil, err
	}
	return countedStream{SendStream: st, w: c.w}, nil
}

type countedStream struct {
	transport.SendStream
	w *writeCounter
}

func (s countedStream) Write(p []byte) (int, error) {
	s.w.writes.Add(1)
	s.w.bytes.Add(int64(len(p)))
	return s.SendStream.Write(p)
}
