package tio

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/transport-io/tiogen/internal/leakcheck"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

// TestMain fails the package if any goroutine the tests started outlives
// them: every session goroutine must end after close (§11).
func TestMain(m *testing.M) { leakcheck.Main(m, 5*time.Second) }

// The test contract, shaped like the conformance contract.
var (
	evEcho          = wire.EventID("echo")
	evFail          = wire.EventID("fail")
	evCount         = wire.EventID("count")
	evCountThenFail = wire.EventID("countThenFail")
	evHang          = wire.EventID("hang")
	evBlob          = wire.EventID("blob")
	evShout         = wire.EventID("shout")
	evHeard         = wire.EventID("heard")
	evPing          = wire.EventID("ping")
	evMove          = wire.EventID("move")
	evSaid          = wire.EventID("said")
)

func testEvents() []Event {
	return []Event{
		{Name: "echo", Lane: wire.Reliable, Kind: Returns, Payload: wire.CodecJSON, Result: wire.CodecJSON},
		{Name: "fail", Lane: wire.Reliable, Kind: Returns, Payload: wire.CodecJSON, Result: wire.CodecJSON},
		{Name: "count", Lane: wire.Reliable, Kind: Yields, Payload: wire.CodecJSON, Result: wire.CodecJSON},
		{Name: "countThenFail", Lane: wire.Reliable, Kind: Yields, Payload: wire.CodecJSON, Result: wire.CodecJSON},
		{Name: "hang", Lane: wire.Reliable, Kind: Returns, Payload: wire.CodecJSON, Result: wire.CodecJSON},
		{Name: "blob", Lane: wire.Reliable, Kind: Returns, Payload: wire.CodecBytes, Result: wire.CodecBytes},
		{Name: "shout", Lane: wire.Reliable, From: FromClient, Payload: wire.CodecJSON},
		{Name: "heard", Lane: wire.Reliable, From: FromServer, Payload: wire.CodecJSON},
		{Name: "said", Lane: wire.Reliable, From: FromServer, Payload: wire.CodecJSON},
		{Name: "ping", Lane: wire.Reliable, Payload: wire.CodecJSON},
		{Name: "move", Lane: wire.Unreliable, Payload: wire.CodecJSON, Fallback: Newest},
	}
}

var testContract = MustContract("test", testEvents()...)

// recorder collects what handlers received.
type recorder struct {
	mu   sync.Mutex
	msgs []string
	ch   chan string
}

func newRecorder() *recorder { return &recorder{ch: make(chan string, 4096)} }

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.msgs = append(r.msgs, s)
	r.mu.Unlock()
	select {
	case r.ch <- s:
	default:
	}
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}

// next waits for the next recorded message.
func (r *recorder) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-r.ch:
		return s
	case <-time.After(5 * time.Second):
		t.Fatal("timed out waiting for a message")
		return ""
	}
}

// testServer is a server with the conformance-style handlers.
type testServer struct {
	*Server
	got      *recorder
	hangs    chan context.Context
	release  chan struct{} // closing it answers every hanging call
	streamed chan int
}

func newTestServer(t *testing.T, opts ServerOptions) *testServer {
	t.Helper()
	srv, err := NewServer(testContract, opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: srv, got: newRecorder(), hangs: make(chan context.Context, 1024), release: make(chan struct{}), streamed: make(chan int, 1<<16)}
	srv.HandleCall(evEcho, func(ctx context.Context, p *Peer, req []byte) ([]byte, error) { return req, nil })
	srv.HandleCall(evFail, func(ctx context.Context, p *Peer, req []byte) ([]byte, error) {
		return nil, errors.New(string(req))
	})
	srv.HandleCall(evBlob, func(ctx context.Context, p *Peer, req []byte) ([]byte, error) { return req, nil })
	srv.HandleCall(evHang, func(ctx context.Context, p *Peer, req []byte) ([]byte, error) {
		ts.hangs <- ctx
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ts.release:
			return req, nil
		}
	})
	count := func(fail bool) StreamHandler {
		return func(ctx context.Context, p *Peer, req []byte, send func([]byte) error) error {
			var n int
			if _, err := fmt.Sscanf(string(req), `{"n":%d}`, &n); err != nil {
				return Errorf(ValidationFailed, "request %q is not {\"n\":N}", req)
			}
			for i := range n {
				if err := send(fmt.Appendf(nil, `{"i":%d}`, i)); err != nil {
					ts.streamed <- -1
					return err
				}
				ts.streamed <- i
			}
			if fail {
				return errors.New("failed after the elements")
			}
			return nil
		}
	}
	srv.HandleStream(evCount, count(false))
	srv.HandleStream(evCountThenFail, count(true))
	srv.HandleEmit(evShout, func(_ context.Context, p *Peer, payload []byte) error {
		if string(payload) == `"invalid"` {
			return Errorf(ValidationFailed, "shout must not be invalid")
		}
		ts.got.add("shout:" + string(payload))
		return p.Emit(evHeard, payload)
	})
	srv.HandleEmit(evPing, func(_ context.Context, p *Peer, payload []byte) error {
		ts.got.add("ping:" + string(payload))
		return nil
	})
	srv.HandleEmit(evMove, func(_ context.Context, p *Peer, payload []byte) error {
		if string(payload) == `"invalid"` {
			return Errorf(ValidationFailed, "move must not be invalid")
		}
		ts.got.add("move:" + string(payload))
		return nil
	})
	t.Cleanup(func() { _ = srv.Close() })
	return ts
}

// session is one running server session with its client.
type pairT struct {
	srv    *testServer
	client *Client
	link   *loopback.Link
	sconn  *loopback.Conn
	cconn  *loopback.Conn
	peer   *Peer
	served chan error
}

// newPair runs a server session and connects a client over loopback.
func newPair(t *testing.T, lo loopback.Options, sopts ServerOptions, copts Options) *pairT {
	t.Helper()
	peers := make(chan *Peer, 1)
	prev := sopts.OnSession
	sopts.OnSession = func(p *Peer) {
		if prev != nil {
			prev(p)
		}
		peers <- p
	}
	ts := newTestServer(t, sopts)
	cconn, sconn, link := loopback.Pair(lo)
	served := make(chan error, 1)
	go func() { served <- ts.Serve(sconn, "data") }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := NewClient(ctx, cconn, testContract, copts)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	p := &pairT{srv: ts, client: c, link: link, sconn: sconn, cconn: cconn, served: served}
	select {
	case p.peer = <-peers:
	case <-time.After(5 * time.Second):
		t.Fatal("no server session")
	}
	t.Cleanup(p.close)
	return p
}

func (p *pairT) close() {
	_ = p.client.Close(NoError, "test over")
	_ = p.client.Wait()
	<-p.served
	p.served <- nil // let a second close return at once
}

// waitFor polls cond until it holds or 5 s pass. It never stands in for a
// spec timeout: those run on a fake clock.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func waitDone(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("timed out waiting for the session to end")
	}
}

func wantCode(t *testing.T, err error, code Code) {
	t.Helper()
	if got := wire.CodeOf(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}

func wantClose(t *testing.T, c transport.Conn, code uint32, reasonHas string) {
	t.Helper()
	waitDone(t, c.Done())
	info := c.CloseInfo()
	if info.Code != code || !strings.Contains(info.Reason, reasonHas) {
		t.Fatalf("closed with %d %q, want %d with a reason containing %q", info.Code, info.Reason, code, reasonHas)
	}
}

// rawPeer speaks frames by hand over one end of a loopback pair, to break
// the rules the engine must catch.
type rawPeer struct {
	t    *testing.T
	conn *loopback.Conn
	lk   *loopback.Link
	out  transport.SendStream
	in   *wire.Reader
}

func newRawPeer(t *testing.T, conn *loopback.Conn) *rawPeer {
	t.Helper()
	out, err := conn.OpenEmit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return &rawPeer{t: t, conn: conn, out: out}
}

// handshake writes a valid handshake for c.
func (r *rawPeer) handshake(c *Contract) {
	r.t.Helper()
	b, err := handshakeFrame(c, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	r.write(b)
}

func (r *rawPeer) write(b []byte) {
	r.t.Helper()
	if _, err := r.out.Write(b); err != nil {
		select {
		case <-r.conn.Done(): // the engine closed the session in reply; the test checks how
		default:
			r.t.Fatalf("raw write: %v", err)
		}
	}
}

func (r *rawPeer) frame(t wire.FrameType, c wire.Codec, id uint32, payload []byte) {
	r.t.Helper()
	b, err := wire.AppendFrame(nil, t, c, id, payload)
	if err != nil {
		r.t.Fatal(err)
	}
	r.write(b)
}

// readFrame reads the peer's next emit-lane frame.
func (r *rawPeer) readFrame() (wire.Frame, error) {
	if r.in == nil {
		rs, err := r.conn.AcceptEmit(context.Background())
		if err != nil {
			return wire.Frame{}, err
		}
		r.in = wire.NewReader(rs)
	}
	return r.in.Next()
}

func (r *rawPeer) mustFrame() wire.Frame {
	r.t.Helper()
	f, err := r.readFrame()
	if err != nil {
		r.t.Fatalf("raw read: %v", err)
	}
	return f
}

// rawHeader builds a frame header with any field values, valid or not.
func rawHeader(length uint32, t, codec byte, reserved uint16, id uint32) []byte {
	b := make([]byte, 12)
	binary.BigEndian.PutUint32(b, length)
	b[4], b[5] = t, codec
	binary.BigEndian.PutUint16(b[6:], reserved)
	binary.BigEndian.PutUint32(b[8:], id)
	return b
}

// serveRaw runs the test server on one end of a pair and returns the other
// end for a raw client.
func serveRaw(t *testing.T, lo loopback.Options, sopts ServerOptions) (*testServer, *rawPeer, chan error) {
	t.Helper()
	ts := newTestServer(t, sopts)
	cconn, sconn, link := loopback.Pair(lo)
	served := make(chan error, 1)
	go func() { served <- ts.Serve(sconn, nil) }()
	t.Cleanup(func() {
		_ = sconn.Close(0, "test over")
		link.Lose()
		<-served
	})
	raw := newRawPeer(t, cconn)
	raw.lk = link
	return ts, raw, served
}

func (r *rawPeer) link() *loopback.Link { return r.lk }

// activeCallsNow is the count of calls s answers now.
func (s *session) activeCallsNow() int32 {
	if a := s.answers.Load(); a != nil {
		return a.active.Load()
	}
	return 0
}
