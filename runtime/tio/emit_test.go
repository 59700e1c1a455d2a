package tio

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

// handshaken is a raw client past the handshake, with the server session.
func handshaken(t *testing.T) (*testServer, *rawPeer) {
	t.Helper()
	ts, raw, _ := serveRaw(t, loopback.Options{}, ServerOptions{})
	raw.handshake(testContract)
	raw.frame(wire.FrameEmit, wire.CodecJSON, evPing, []byte(`0`))
	if got := ts.got.next(t); got != "ping:0" {
		t.Fatalf("got %q", got)
	}
	return ts, raw
}

func onlyPeer(ts *testServer) *Peer {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	for _, p := range ts.peers.all() {
		return p
	}
	return nil
}

func TestSpec5_5_EmitLaneProtocolErrorsCloseTheSession(t *testing.T) {
	cases := []struct {
		name  string
		bytes []byte
		code  uint32
		has   string
	}{
		{"ZeroLength", rawHeader(0, 2, 1, 0, evPing)[:4], wire.CloseProtocolError, "below the minimum"},
		{"EmptyPayload", rawHeader(8, 2, 1, 0, evPing), wire.CloseProtocolError, "below the minimum"},
		{"ReservedBits", append(rawHeader(9, 2, 1, 1, evPing), '1'), wire.CloseProtocolError, "reserved bits"},
		{"ReservedType", append(rawHeader(9, 0x0a, 1, 0, evPing), '1'), wire.CloseProtocolError, "reserved frame"},
		{"TypeZero", append(rawHeader(9, 0, 1, 0, evPing), '1'), wire.CloseProtocolError, "reserved frame"},
		{"UnsupportedCodec", append(rawHeader(9, 2, 3, 0, evPing), '1'), wire.CloseProtocolError, "reserved codec"},
		{"EmitOverOneMiB", rawHeader(wire.MaxPayload+9, 2, 1, 0, evPing), wire.CloseProtocolError, "exceeds"},
		{"CallFrameOnEmitStream", append(rawHeader(9, 3, 1, 0, evEcho), '1'), wire.CloseProtocolError, "CALL_REQUEST frame on the emit stream"},
		{"EmitWithEventIDZero", append(rawHeader(9, 2, 1, 0, 0), '1'), wire.CloseProtocolError, "event id 0"},
		{"CodecMismatch", append(rawHeader(9, 2, 2, 0, evPing), '1'), wire.CloseProtocolError, "event 'ping' payload slot is json"},
		{"ClientSentJoin", append(rawHeader(8+16, 6, 1, 0, 0), `{"room":"lobby"}`...), wire.CloseProtocolError, "JOIN"},
		{"ClientSentLeave", append(rawHeader(8+16, 7, 1, 0, 0), `{"room":"lobby"}`...), wire.CloseProtocolError, "LEAVE"},
		{"DatagramFrameOnWebTransport", append(rawHeader(8+14, 9, 1, 0, 0),
			wire.AppendDatagram(nil, wire.Datagram{Codec: 1, EventID: evMove, Origin: 1, Seq: 1, Payload: []byte("1")})...),
			wire.CloseProtocolError, "DATAGRAM frame on the WebTransport mapping"},
		{"EmitForACall", append(rawHeader(9, 2, 1, 0, evEcho), '1'), wire.CloseProtocolError, "EMIT frame for event 'echo'"},
		{"CutInsideAFrame", rawHeader(20, 2, 1, 0, evPing), wire.CloseProtocolError, "inside a frame"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, raw := handshaken(t)
			raw.write(c.bytes)
			if c.name == "CutInsideAFrame" {
				_ = raw.out.Close()
			}
			wantClose(t, raw.conn, c.code, c.has)
		})
	}
}

func TestSpec5_5_EmitStreamResetClosesSession(t *testing.T) {
	_, raw := handshaken(t)
	raw.out.Reset(1)
	wantClose(t, raw.conn, wire.CloseProtocolError, "reset its emit stream")
}

func TestSpec5_4_UnknownEmitCountedAndDropped(t *testing.T) {
	ts, raw := handshaken(t)
	raw.frame(wire.FrameEmit, wire.CodecJSON, 12345, []byte(`1`))
	raw.frame(wire.FrameEmit, wire.CodecJSON, evPing, []byte(`2`))
	if got := ts.got.next(t); got != "ping:2" {
		t.Fatalf("got %q", got)
	}
	if s := onlyPeer(ts).Stats(); s.UnknownDropped != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestSpec5_4_UnknownDatagramCountedAndDropped(t *testing.T) {
	ts, raw := handshaken(t)
	_ = raw.conn.SendDatagram(wire.AppendDatagram(nil, wire.Datagram{Codec: 1, EventID: 999, Origin: 1, Seq: 1, Payload: []byte("1")}))
	waitFor(t, "the unknown datagram to be counted", func() bool { return onlyPeer(ts).Stats().UnknownDropped == 1 })
}

func TestSpecValidationFailureOnEmitCountedNeverCloses(t *testing.T) {
	ts, raw := handshaken(t)
	raw.frame(wire.FrameEmit, wire.CodecJSON, evShout, []byte(`"invalid"`))
	raw.frame(wire.FrameEmit, wire.CodecJSON, evShout, []byte(`"ok"`))
	if got := ts.got.next(t); got != `shout:"ok"` {
		t.Fatalf("got %q", got)
	}
	if s := onlyPeer(ts).Stats(); s.ValidationDropped != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestSpecValidationFailureOnDatagramCountedNeverCloses(t *testing.T) {
	ts, raw := handshaken(t)
	_ = raw.conn.SendDatagram(dgram(evMove, 1, 1, `"invalid"`))
	_ = raw.conn.SendDatagram(dgram(evMove, 1, 2, `"ok"`))
	if got := ts.got.next(t); got != `move:"ok"` {
		t.Fatalf("got %q", got)
	}
	if s := onlyPeer(ts).Stats(); s.ValidationDropped != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestSpecDirectionViolationDroppedAndCounted(t *testing.T) {
	ts, raw := handshaken(t)
	raw.frame(wire.FrameEmit, wire.CodecJSON, evHeard, []byte(`"from the wrong side"`))
	raw.frame(wire.FrameEmit, wire.CodecJSON, evPing, []byte(`3`))
	if got := ts.got.next(t); got != "ping:3" {
		t.Fatalf("got %q", got)
	}
	if s := onlyPeer(ts).Stats(); s.DirectionDropped != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestSpecDirectionRefusedLocallyOnSend(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	wantCode(t, p.client.Emit(evHeard, []byte(`1`)), wire.ProtocolError)
	wantCode(t, p.peer.Emit(evShout, []byte(`1`)), wire.ProtocolError)
	wantCode(t, p.srv.Room("r").Emit(context.Background(), evShout, []byte(`1`)), wire.ProtocolError)
	wantCode(t, p.client.Emit(99, []byte(`1`)), wire.UnknownEvent)
	wantCode(t, p.client.Emit(evMove, []byte(`1`)), wire.ProtocolError) // unreliable: SendDatagram
	wantCode(t, p.client.SendDatagram(evPing, []byte(`1`)), wire.ProtocolError)
	wantCode(t, p.client.Emit(evPing, nil), wire.ProtocolError) // §5.1: no empty payload
	// Nothing of it reached the server, and the session is up.
	if err := p.client.Emit(evPing, []byte(`4`)); err != nil {
		t.Fatal(err)
	}
	if got := p.srv.got.next(t); got != "ping:4" {
		t.Fatalf("got %q", got)
	}
}

func TestSpec6_1_EmitsArriveInOrder(t *testing.T) {
	p := newPair(t, loopback.Options{SplitWrites: true}, ServerOptions{}, Options{})
	// Paced in batches below the 256-frame bound: emitting faster than the
	// peer reads is TestSpec9_EmitOverflowClosesPeerTooSlow.
	const n, batch = 2000, 100
	for i := 0; i < n; i += batch {
		for j := i; j < i+batch; j++ {
			if err := p.client.Emit(evPing, fmt.Appendf(nil, "%d", j)); err != nil {
				t.Fatal(err)
			}
		}
		for j := i; j < i+batch; j++ {
			if got, want := p.srv.got.next(t), fmt.Sprintf("ping:%d", j); got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		}
	}
}

func TestSpec9_EmitQueueHoldsExactly256(t *testing.T) {
	q := newEmitQueue(EmitQueueFrames, 0)
	for i := range EmitQueueFrames {
		if r := q.push(getFrame()); r != pushed {
			t.Fatalf("push %d: %d", i, r)
		}
	}
	if r := q.push(getFrame()); r != pushFull {
		t.Fatalf("257th push: %d", r)
	}
	if q.depth() != EmitQueueFrames {
		t.Fatalf("depth %d", q.depth())
	}
}

// §9: a peer that stops reading is closed WT_PEER_TOO_SLOW once its queue
// holds 256 frames and nothing is taken from it for EmitStallTimeout: the
// 257th Emit waits that long (the push-back), then fails.
func TestSpec9_EmitOverflowClosesPeerTooSlow(t *testing.T) {
	fake := clock.NewFake()
	p := newPair(t, loopback.Options{StreamWindow: 4 << 10}, ServerOptions{Options: Options{Clock: fake}}, Options{})
	p.link.StallReader(loopback.Client, true)
	payload := []byte(`"0123456789012345678901234567890123456789"`)
	var err error
	var sent, deepest int
	var waiting atomic.Bool
	armed := fake.Pending() // the session's own timers; the stall adds one
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ; sent < 100000; sent++ {
			if p.peer.Stats().EmitQueueDepth == EmitQueueFrames {
				waiting.Store(true)
			}
			if err = p.peer.Emit(evHeard, payload); err != nil {
				break
			}
			deepest = max(deepest, p.peer.Stats().EmitQueueDepth)
		}
	}()
	waitFor(t, "an Emit to wait on the full queue", func() bool { return waiting.Load() && fake.Pending() > armed })
	fake.Advance(DefaultEmitStallTimeout - time.Millisecond)
	select {
	case <-done:
		t.Fatalf("Emit gave up before EmitStallTimeout: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	// The writer may still take what the transport's window lets through
	// after the wait began, which renews it: the deadline runs from the
	// last take.
	for deadline := time.Now().Add(5 * time.Second); ; {
		fake.Advance(time.Millisecond)
		select {
		case <-done:
		case <-time.After(5 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("Emit still waits on a queue nobody takes from")
			}
			fake.Advance(DefaultEmitStallTimeout)
			continue
		}
		break
	}
	if deepest != EmitQueueFrames {
		t.Fatalf("the queue reached %d frames before the close, want %d", deepest, EmitQueueFrames)
	}
	wantCode(t, err, wire.PeerTooSlow)
	wantClose(t, p.sconn, wire.ClosePeerTooSlow, "256 frames")
	// It never dropped: every emit before the failure was queued or
	// written, and the queue held 256 when it refused.
	if sent < EmitQueueFrames {
		t.Fatalf("closed after %d emits, below the 256-frame bound", sent)
	}
	waitDone(t, p.client.Done())
	wantCode(t, p.client.Err(), wire.PeerTooSlow)
	_, err = p.client.Call(context.Background(), evEcho, []byte(`1`))
	wantCode(t, err, wire.SessionClosed)
}

// countingConn counts the Writes on this side's emit stream.
type countingConn struct {
	*loopback.Conn
	writes atomic.Int64
}

func (c *countingConn) OpenEmit(ctx context.Context) (transport.SendStream, error) {
	st, err := c.Conn.OpenEmit(ctx)
	if err != nil {
		return nil, err
	}
	return &countingStream{SendStream: st, writes: &c.writes}, nil
}

type countingStream struct {
	transport.SendStream
	writes *atomic.Int64
}

func (s *countingStream) Write(p []byte) (int, error) {
	s.writes.Add(1)
	return s.SendStream.Write(p)
}

func TestWriterCoalescesQueuedFrames(t *testing.T) {
	cconn, sconn, link := loopback.Pair(loopback.Options{StreamWindow: 16})
	counted := &countingConn{Conn: cconn}
	ts := newTestServer(t, ServerOptions{})
	served := make(chan error, 1)
	go func() { served <- ts.Serve(sconn, nil) }()
	c, err := NewClient(context.Background(), counted, testContract, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(NoError, ""); _ = c.Wait(); <-served }()
	link.StallReader(loopback.Server, true)
	before := counted.writes.Load()
	const n = 200
	for i := range n {
		if err := c.Emit(evPing, fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	link.StallReader(loopback.Server, false)
	for i := range n {
		if got := ts.got.next(t); got != fmt.Sprintf("ping:%d", i) {
			t.Fatalf("got %q", got)
		}
	}
	// While the peer was stalled the frames queued up; the writer took
	// them in a handful of batches, one Write each, not one per frame.
	if w := counted.writes.Load() - before; w > 10 {
		t.Fatalf("%d Writes for %d queued frames", w, n)
	}
}
