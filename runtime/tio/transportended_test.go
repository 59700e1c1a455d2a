package tio

import (
	"context"
	"testing"

	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

// endingConn is a server Conn whose peer emit stream fails with the
// transport's WT_SESSION_CLOSED before Done fires, as a QUIC transport may
// while the peer's close is still on its way.
type endingConn struct {
	*loopback.Conn
	failed chan struct{}
}

func (c *endingConn) AcceptEmit(ctx context.Context) (transport.ReceiveStream, error) {
	rs, err := c.Conn.AcceptEmit(ctx)
	if err != nil {
		return nil, err
	}
	return &endingStream{ReceiveStream: rs, failed: c.failed}, nil
}

type endingStream struct {
	transport.ReceiveStream
	reads  int
	failed chan struct{}
}

func (s *endingStream) Read(p []byte) (int, error) {
	// The handshake arrives; the read after it reports the session ending.
	if s.reads++; s.reads > 1 {
		close(s.failed)
		return 0, wire.Errorf(wire.SessionClosed, "the webtransport session is closed")
	}
	return s.ReceiveStream.Read(p)
}

// §11: a transport saying the session is over is no framing fault of this
// side: the session reports the peer's close code once it arrives, never a
// local WT_PROTOCOL_ERROR.
func TestSpec11_TransportEndingIsNotAProtocolError(t *testing.T) {
	ts := newTestServer(t, ServerOptions{})
	cconn, sconn, _ := loopback.Pair(loopback.Options{})
	failed := make(chan struct{})
	served := make(chan error, 1)
	go func() { served <- ts.Serve(&endingConn{Conn: sconn, failed: failed}, nil) }()
	c, err := NewClient(context.Background(), cconn, testContract, Options{})
	if err != nil {
		t.Fatal(err)
	}
	<-failed
	if err := c.Close(wire.Unauthorized, "expired"); err != nil {
		t.Fatal(err)
	}
	err = <-served
	wantCode(t, err, wire.Unauthorized)
	_ = c.Wait()
}
