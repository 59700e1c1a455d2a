package tio

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

// flushDelayed is a raw client past the handshake of a server whose writers
// hold back for delay, with the server's emit stream and its peer. The
// server's handshake frame has been read off the stream.
func flushDelayed(t *testing.T, delay time.Duration) (*rawPeer, transport.ReceiveStream, *Peer) {
	t.Helper()
	ts, raw, _ := serveRaw(t, loopback.Options{}, ServerOptions{Options: Options{EmitFlushDelay: delay}})
	raw.handshake(testContract)
	raw.frame(wire.FrameEmit, wire.CodecJSON, evPing, []byte(`0`))
	if got := ts.got.next(t); got != "ping:0" {
		t.Fatalf("got %q", got)
	}
	rs, err := raw.conn.AcceptEmit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var length [4]byte
	if _, err := io.ReadFull(rs, length[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(rs, make([]byte, binary.BigEndian.Uint32(length[:]))); err != nil {
		t.Fatal(err)
	}
	return raw, rs, onlyPeer(ts)
}

// Two emits within the flush delay reach the transport in one Write: the
// loopback's Read returns them together, where without the delay the first
// is written alone at once.
func TestSpec9_EmitFlushDelaySharesAWrite(t *testing.T) {
	const delay = MaxEmitFlushDelay
	_, rs, p := flushDelayed(t, delay)
	a, _ := wire.AppendFrame(nil, wire.FrameEmit, wire.CodecJSON, evHeard, []byte(`"a"`))
	b, _ := wire.AppendFrame(nil, wire.FrameEmit, wire.CodecJSON, evHeard, []byte(`"b"`))
	start := time.Now()
	if err := p.Emit(evHeard, []byte(`"a"`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(delay / 10) // the second emit comes well after the first, within the delay
	if err := p.Emit(evHeard, []byte(`"b"`)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1024)
	n, err := rs.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(buf[:n]), string(a)+string(b); got != want {
		t.Fatalf("first Read after the emits = %q, want both frames %q in one", got, want)
	}
	if took := time.Since(start); took < delay*3/4 {
		t.Fatalf("the frames arrived %v after the first emit, before the %v delay", took, delay)
	}
}

// The flush delay does not slow a burst or change the §9 queue: the writer
// stops holding back once a packet's worth is queued, so 1,024 emits through
// the 256-frame queue arrive, in order, long before 4 delays (the least a
// writer that always held back would take) and the session stays open.
func TestSpec9_EmitFlushDelayEndsEarlyForABurst(t *testing.T) {
	_, rs, p := flushDelayed(t, MaxEmitFlushDelay)
	const n = 4 * EmitQueueFrames
	start := time.Now()
	sent := make(chan error, 1)
	go func() {
		for i := range n {
			if err := p.Emit(evHeard, fmt.Appendf(nil, `"%0100d"`, i)); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	r := wire.NewReader(rs)
	for i := range n {
		f, err := r.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if want := fmt.Sprintf(`"%0100d"`, i); string(f.Payload) != want {
			t.Fatalf("frame %d carries %q, want %q", i, f.Payload, want)
		}
		// The last frames may be held back for one delay.
		if i == n-EmitQueueFrames {
			if took := time.Since(start); took >= 3*MaxEmitFlushDelay {
				t.Fatalf("%d frames took %v: the writer held back for every batch", i+1, took)
			}
		}
	}
	if err := <-sent; err != nil {
		t.Fatalf("emit: %v", err)
	}
	if err := p.Err(); err != nil {
		t.Fatalf("the session ended: %v", err)
	}
}

// Values beyond the bound are the bound.
func TestEmitFlushDelayIsBounded(t *testing.T) {
	if got := (Options{EmitFlushDelay: time.Hour}).withDefaults().EmitFlushDelay; got != MaxEmitFlushDelay {
		t.Fatalf("EmitFlushDelay of an hour became %v, want %v", got, MaxEmitFlushDelay)
	}
	if got := (Options{EmitFlushDelay: -time.Second}).withDefaults().EmitFlushDelay; got != 0 {
		t.Fatalf("a negative EmitFlushDelay became %v, want 0", got)
	}
}
