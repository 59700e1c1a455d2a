package tio

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

// stopLink pairs loopback conns whose responder streams also report when
// the request's FIN was read, so the test cancels at the one moment when
// only Stopped can tell the responder (§8). Streams are matched in the order
// they are opened, which is the order loopback accepts them.
type stopLink struct {
	mu       sync.Mutex
	opening  sync.Mutex
	pending  []stopSignal
	accepted chan *notifyingStream
}

type stopConn struct {
	*loopback.Conn
	link *stopLink
}

func newStopPair() (client, server transport.Conn, l *stopLink) {
	c, s, _ := loopback.Pair(loopback.Options{})
	l = &stopLink{accepted: make(chan *notifyingStream, 16)}
	return &stopConn{c, l}, &stopConn{s, l}, l
}

func (c *stopConn) OpenCall(ctx context.Context) (transport.Stream, error) {
	c.link.opening.Lock()
	defer c.link.opening.Unlock()
	ended, stop := context.WithCancel(context.Background())
	stopped := stopSignal{ended, stop}
	st, err := c.Conn.OpenCall(ctx)
	if err != nil {
		return nil, err
	}
	c.link.mu.Lock()
	c.link.pending = append(c.link.pending, stopped)
	c.link.mu.Unlock()
	return &stoppingStream{Stream: st, stopped: stopped}, nil
}

func (c *stopConn) AcceptCall(ctx context.Context) (transport.Stream, error) {
	st, err := c.Conn.AcceptCall(ctx)
	if err != nil {
		return nil, err
	}
	// The opener holds opening from before loopback has the stream until it
	// registered it, so once this side holds it the stream's entry is there.
	c.link.opening.Lock()
	c.link.mu.Lock()
	stopped := c.link.pending[0]
	c.link.pending = c.link.pending[1:]
	c.link.mu.Unlock()
	c.link.opening.Unlock()
	ns := &notifyingStream{Stream: st, stopped: stopped, eof: make(chan struct{})}
	c.link.accepted <- ns
	return ns, nil
}

// stopSignal is one stream's stop, from the initiator's Stop to the
// responder's AfterStopped.
type stopSignal struct {
	ended context.Context
	stop  context.CancelFunc
}

// stoppingStream is the initiator's end: Stop tells the responder's end.
type stoppingStream struct {
	transport.Stream
	stopped stopSignal
}

func (s *stoppingStream) Stop(code uint8) {
	s.Stream.Stop(code)
	s.stopped.stop()
}

// notifyingStream is the responder's end; eof closes once its reader has
// seen the initiator's FIN. Its first Read takes the initiator's whole side,
// to the FIN, and hands the request over with io.EOF, as a QUIC stream does
// whose request and FIN came in one packet: the engine then always finds
// the returns request ended (the delayed stop watch's path, serveCall),
// where loopback could hand it the request before the FIN.
type notifyingStream struct {
	transport.Stream
	stopped  stopSignal
	readOnce sync.Once
	rest     []byte
	err      error
	eof      chan struct{}
}

func (s *notifyingStream) Read(p []byte) (int, error) {
	s.readOnce.Do(func() {
		if s.rest, s.err = io.ReadAll(s.Stream); s.err == nil {
			s.err = io.EOF
			close(s.eof)
		}
	})
	n := copy(p, s.rest)
	if s.rest = s.rest[n:]; len(s.rest) > 0 {
		return n, nil
	}
	return n, s.err
}

func (s *notifyingStream) AfterStopped(f func()) (stop func() bool) {
	return context.AfterFunc(s.stopped.ended, f)
}

func TestSpec8_ReturnsResponderAbandonsOnStopSending(t *testing.T) {
	ts := newTestServer(t, ServerOptions{})
	cconn, sconn, link := newStopPair()
	served := make(chan error, 1)
	go func() { served <- ts.Serve(sconn, nil) }()
	c, err := NewClient(context.Background(), cconn, testContract, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(NoError, ""); _ = c.Wait(); <-served }()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, evHang, []byte(`1`))
		errc <- err
	}()
	hctx := <-ts.hangs
	<-(<-link.accepted).eof // the request and its FIN were read: only a stop can cancel now
	cancel()
	wantCode(t, <-errc, wire.Aborted)
	select {
	case <-hctx.Done():
		if context.Cause(hctx) != errCallerStopped {
			t.Fatalf("cause %v", context.Cause(hctx))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the responder never abandoned the cancelled call")
	}
	// An answered call is not cancelled by its own completion.
	if resp, err := c.Call(context.Background(), evEcho, []byte(`2`)); err != nil || string(resp) != "2" {
		t.Fatalf("%q %v", resp, err)
	}
}
