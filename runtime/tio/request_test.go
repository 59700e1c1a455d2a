package tio

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

// partialCall opens a call stream and writes a CALL_REQUEST header for a
// blob of announced bytes, then sent bytes of it: a request that never
// arrives whole.
func (r *rawPeer) partialCall(announced, sent int) (transport.Stream, *wire.Reader) {
	r.t.Helper()
	st, err := r.conn.OpenCall(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	b := make([]byte, wire.HeaderLen, wire.HeaderLen+sent)
	wire.PutHeader(b, wire.FrameCallRequest, wire.CodecBytes, evBlob, announced)
	b = append(b, make([]byte, sent)...)
	if _, err := st.Write(b); err != nil {
		r.t.Fatal(err)
	}
	return st, wire.NewReader(st)
}

func handshakenWith(t *testing.T, sopts ServerOptions) (*testServer, *rawPeer) {
	t.Helper()
	ts, raw, _ := serveRaw(t, loopback.Options{StreamWindow: 32 << 20}, sopts)
	raw.handshake(testContract)
	raw.frame(wire.FrameEmit, wire.CodecJSON, evPing, []byte(`0`))
	if got := ts.got.next(t); got != "ping:0" {
		t.Fatalf("got %q", got)
	}
	return ts, raw
}

// §5.1, §6.4: the bytes a session's incoming requests hold are bounded.
// Requests that would take more are answered CALL_ERROR
// WT_PAYLOAD_TOO_LARGE naming the bound, the rest of them unread, while the
// others carry on; a request that fits still arrives once bytes are free.
func TestSpec5_1_RequestBytesAreBoundedPerSession(t *testing.T) {
	// The buffer doubles as bytes arrive, and both its sizes are held while
	// it grows: 1.5 MiB sent holds 2 MiB, and a second such request cannot
	// grow past 1 MiB within 4 MiB.
	ts, raw := handshakenWith(t, ServerOptions{Options: Options{MaxRequestBytes: 4 << 20}})
	first, _ := raw.partialCall(wire.MaxCallPayload, 3<<19)
	waitFor(t, "the first request to be buffered", func() bool { return ts.requestBytes.held.Load() >= 3<<19 })
	_, rd := raw.partialCall(wire.MaxCallPayload, 3<<19)
	wantCallError(t, rd, wire.PayloadTooLarge, "4194304 bytes")
	// The first request is still pending; once it is given up, its bytes
	// are free again and a whole request is answered.
	first.Reset(wire.ResetAborted)
	first.Stop(wire.ResetAborted)
	_, rd = raw.rawCall(evBlob, wire.CodecBytes, make([]byte, 900<<10), true)
	if f := mustNext(t, rd); f.Type != wire.FrameCallResponse || len(f.Payload) != 900<<10 {
		t.Fatalf("got %s of %d bytes, want the 900 KiB blob back", f.Type, len(f.Payload))
	}
}

// The bound across every session of a server holds too.
func TestSpec5_1_RequestBytesAreBoundedPerServer(t *testing.T) {
	ts := newTestServer(t, ServerOptions{MaxRequestBytesTotal: 4 << 20})
	var raws []*rawPeer
	for range 2 {
		cconn, sconn, link := loopback.Pair(loopback.Options{StreamWindow: 32 << 20})
		served := make(chan error, 1)
		go func() { served <- ts.Serve(sconn, nil) }()
		t.Cleanup(func() {
			_ = sconn.Close(0, "test over")
			link.Lose()
			<-served
		})
		raw := newRawPeer(t, cconn)
		raw.handshake(testContract)
		raws = append(raws, raw)
	}
	raws[0].partialCall(wire.MaxCallPayload, 3<<19)
	waitFor(t, "the first request to be buffered", func() bool { return ts.requestBytes.held.Load() >= 3<<19 })
	_, rd := raws[1].partialCall(wire.MaxCallPayload, 3<<19)
	wantCallError(t, rd, wire.PayloadTooLarge, "all sessions")
}

// A request header announcing far more than has arrived costs the bytes
// that arrived, not what was announced: 12 bytes of a 16 MiB request hold
// a few KiB.
func TestSpec5_1_RequestBufferGrowsAsBytesArrive(t *testing.T) {
	ts, raw := handshakenWith(t, ServerOptions{})
	for range 16 {
		raw.partialCall(wire.MaxCallPayload, 1)
	}
	waitFor(t, "16 calls to be read", func() bool { return onlyPeer(ts).activeCallsNow() == 16 })
	time.Sleep(10 * time.Millisecond) // let the readers reach their first Read
	if held := ts.requestBytes.held.Load(); held > 16*8<<10 {
		t.Fatalf("16 requests of one byte each hold %d bytes", held)
	}
}

// A request must arrive whole within RequestTimeout of its stream being
// read; a later one is answered CALL_ERROR WT_ABORTED naming the deadline,
// its bytes given back. The deadline runs on an injected clock.
func TestSpec6_2_RequestMustArriveWithinItsDeadline(t *testing.T) {
	fake := clock.NewFake()
	ts, raw := handshakenWith(t, ServerOptions{Options: Options{Clock: fake}})
	armed := fake.Pending()
	_, rd := raw.partialCall(wire.MaxCallPayload, 100<<10)
	waitFor(t, "the request deadline to be armed", func() bool { return fake.Pending() > armed })
	fake.Advance(DefaultRequestTimeout - time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	if onlyPeer(ts).activeCallsNow() != 1 {
		t.Fatal("the call ended before its deadline")
	}
	fake.Advance(time.Millisecond)
	wantCallError(t, rd, wire.Aborted, "120000 ms")
	waitFor(t, "the request's bytes to be given back", func() bool { return ts.requestBytes.held.Load() == 0 })
}

// §5.1, §6.4: a request refused for the byte budget while the caller is
// still writing it (the responder answers CALL_ERROR and stops reading the
// rest) reaches the caller as the responder's WT_PAYLOAD_TOO_LARGE, not as
// a reset of its write: the answer is read from the stream after the stop.
func TestSpec5_1_CallerReadsTheRefusalOfARequestItIsStillWriting(t *testing.T) {
	p := newPair(t, loopback.Options{StreamWindow: 16 << 10}, ServerOptions{Options: Options{MaxRequestBytes: 64 << 10}}, Options{})
	_, err := p.client.Call(context.Background(), evBlob, make([]byte, 1<<20))
	if wire.CodeOf(err) != wire.PayloadTooLarge || !strings.Contains(err.Error(), "65536 bytes") {
		t.Fatalf("a 1 MiB request over a 64 KiB budget: %v, want the responder's WT_PAYLOAD_TOO_LARGE", err)
	}
	if got, err := p.client.Call(context.Background(), evBlob, []byte("small")); err != nil || string(got) != "small" {
		t.Fatalf("the next call: %q, %v", got, err)
	}
}
