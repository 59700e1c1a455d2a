package websocket

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	cws "github.com/coder/websocket"

	"github.com/transport-io/tiogen/internal/leakcheck"
	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/wire"
)

// waitStalled waits until progress stops moving for 200 ms of wall time:
// the writer is held back by TCP.
func waitStalled(t *testing.T, progress *atomic.Int64) int64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	last := progress.Load()
	for {
		time.Sleep(200 * time.Millisecond)
		now := progress.Load()
		if now == last && now > 0 {
			return now
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer never stalled")
		}
		last = now
	}
}

func TestPeerHeldBackWhileEngineDoesNotRead(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	clk := clock.NewFake()
	srv := startServer(t, &Handler{Options: Options{Clock: clk}})
	ws := rawDial(t, srv.url)
	c := srv.session(t).(*conn)
	rs, _ := c.AcceptEmit(context.Background())

	const total = 64 << 20
	var written atomic.Int64
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		msg := make([]byte, 64<<10)
		for written.Load() < total {
			if err := ws.Write(context.Background(), cws.MessageBinary, msg); err != nil {
				return
			}
			written.Add(int64(len(msg)))
		}
	}()
	// The engine reads once, then is busy: nothing reads the socket, and
	// nothing but the socket's own buffers holds the peer's bytes.
	buf := make([]byte, 64<<10)
	if _, err := rs.Read(buf); err != nil {
		t.Fatal(err)
	}
	stalledAt := waitStalled(t, &written)
	if stalledAt >= total {
		t.Fatal("the peer wrote everything: nothing held it back")
	}
	// This side not reading is not the peer's silence (§3.3 idle deadline).
	clk.Advance(2 * DefaultIdleTimeout)
	waitFor(t, "the liveness timers (keepalive, idle, message) to rearm", func() bool { return clk.Pending() == 3 })
	if c.endedErr() != nil {
		t.Fatalf("closed %+v while the peer was held back", c.CloseInfo())
	}

	// Reading again lets the peer go on.
	for read := 0; read < 8<<20; {
		n, err := rs.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		read += n
	}
	waitFor(t, "the peer to write more", func() bool { return written.Load() > stalledAt })
	// The peer goes away; the engine reads on and meets the end of the
	// stream after the bytes that were held back.
	_ = ws.CloseNow()
	<-writerDone
	for {
		if _, err := rs.Read(buf); err != nil {
			if wire.CodeOf(err) != wire.SessionClosed {
				t.Fatalf("Read after the peer left: %v", err)
			}
			break
		}
	}
	waitDone(t, c)
	if info := c.CloseInfo(); !info.Lost {
		t.Fatalf("CloseInfo %+v, want a lost connection", info)
	}
	waitFinished(t, c)
}

func TestSpec3_3_CloseUnblocksStuckWrite(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	clk := clock.NewFake()
	srv := startServer(t, &Handler{Options: Options{Clock: clk}})
	_ = rawDial(t, srv.url) // a peer that never reads
	c := srv.session(t)
	ss, _ := c.OpenEmit(context.Background())

	var written atomic.Int64
	writeErr := make(chan error, 1)
	go func() {
		chunk := make([]byte, 64<<10)
		for {
			n, err := ss.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				writeErr <- err
				return
			}
		}
	}()
	waitStalled(t, &written)

	_ = c.Close(wire.ClosePeerTooSlow, "256 frames behind")
	select {
	case <-c.Done():
	default:
		t.Fatal("Done did not fire when Close returned")
	}
	// The close frame cannot pass the stuck bytes; after the grace the
	// TCP connection is dropped and the Write returns.
	waitFor(t, "the close grace timer", func() bool { return clk.Pending() == 1 })
	clk.Advance(DefaultCloseGrace)
	select {
	case err := <-writeErr:
		if wire.CodeOf(err) != wire.SessionClosed {
			t.Fatalf("the stuck Write returned %v, want WT_SESSION_CLOSED", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stuck Write did not return after the close grace")
	}
	if info := c.CloseInfo(); info.Code != wire.ClosePeerTooSlow || info.Remote {
		t.Fatalf("CloseInfo %+v", info)
	}
	waitFinished(t, c)
}
