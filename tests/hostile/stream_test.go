package hostile

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"testing"
	"time"

	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/internal/leakcheck"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/wire"
	"github.com/transport-io/tiogen/tests/internal/conformancetest"
)

// ready is a raw WebTransport session past the handshake, with the server's
// emit frames.
func (s *server) ready(t *testing.T) (*wtPeer, <-chan wire.Frame) {
	t.Helper()
	p := s.dialWT(t)
	p.write(t, goodHandshake)
	return p, p.serverFrames(t)
}

// call opens a call stream and writes frames on it; fin finishes the send
// side after them.
func (p *wtPeer) call(t *testing.T, fin bool, frames ...[]byte) *wt.Stream {
	t.Helper()
	st, err := p.sess.OpenStreamSync(conformancetest.Context(t))
	if err != nil {
		t.Fatalf("opening a call stream: %v", err)
	}
	for _, f := range frames {
		if _, err := st.Write(f); err != nil {
			t.Fatalf("writing a call stream: %v", err)
		}
	}
	if fin {
		_ = st.Close()
	}
	return st
}

// answer reads a call stream to its end.
func answer(t *testing.T, st *wt.Stream) []wire.Frame {
	t.Helper()
	_ = st.SetReadDeadline(time.Now().Add(wait))
	r := wire.NewReader(st)
	var out []wire.Frame
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		f.Payload = bytes.Clone(f.Payload)
		out = append(out, f)
	}
}

// stillUp checks the session serves its emit lane: shout is answered by
// heard.
func stillUp(t *testing.T, p *wtPeer, frames <-chan wire.Frame, marker string) {
	t.Helper()
	p.write(t, frame(wire.FrameEmit, wire.CodecJSON, conformancetest.Shout, text(marker)))
	f := nextFrame(t, frames)
	if f.Type != wire.FrameEmit || f.EventID != conformancetest.Heard || string(f.Payload) != string(text(marker)) {
		t.Fatalf("after shout %q the server sent %s %d %q", marker, f.Type, f.EventID, f.Payload)
	}
}

// §5.4, §6.4: a call to an event the server does not know is answered
// CALL_ERROR WT_UNKNOWN_EVENT on its stream; the session stays up.
func TestSpec5_4_HostileUnknownEventCallIsCallError(t *testing.T) {
	p, frames := startServer(t).ready(t)
	st := p.call(t, true, frame(wire.FrameCallRequest, wire.CodecJSON, 0xdeadbeef, text("?")))
	got := answer(t, st)
	if len(got) != 1 || got[0].Type != wire.FrameCallError {
		t.Fatalf("answer %v, want one CALL_ERROR", got)
	}
	ce, err := wire.ParseCallError(got[0].Payload)
	if err != nil || ce.Code != wire.UnknownEvent {
		t.Fatalf("CALL_ERROR %s (%v), want WT_UNKNOWN_EVENT", got[0].Payload, err)
	}
	stillUp(t, p, frames, "after unknown call")
}

// §5.4: an EMIT of an event the server does not know is dropped and
// counted (unknownDropped), not a session fault.
func TestSpec5_4_HostileUnknownEmitDroppedAndCounted(t *testing.T) {
	p, frames := startServer(t).ready(t)
	p.write(t, frame(wire.FrameEmit, wire.CodecJSON, 0xdeadbeef, text("?")))
	stillUp(t, p, frames, "marker") // the server read the unknown emit before it
	got := answer(t, p.call(t, true, frame(wire.FrameCallRequest, wire.CodecJSON, conformancetest.Counters, text(""))))
	if len(got) != 1 || got[0].Type != wire.FrameCallResponse || !bytes.Contains(got[0].Payload, []byte(`"unknownDropped":"1"`)) {
		t.Fatalf("counters answer %v, want unknownDropped \"1\" (int64 travels as a decimal string)", got)
	}
}

// §10.1: past 256 concurrent call streams the next is reset
// WT_TOO_MANY_STREAMS (9) without being read, and the session stays open.
func TestSpec10_1_Hostile257thCallResetNine(t *testing.T) {
	leakcheck.Check(t, wait)
	p, frames := startServer(t).ready(t)
	type outcome struct {
		i   int
		err error
	}
	outcomes := make(chan outcome, tio.DefaultMaxCalls+1)
	for i := range tio.DefaultMaxCalls + 1 {
		st := p.call(t, true, frame(wire.FrameCallRequest, wire.CodecJSON, conformancetest.Hang, text("hold")))
		go func() {
			_, err := io.ReadAll(st)
			outcomes <- outcome{i, err}
		}()
	}
	var first outcome
	select {
	case first = <-outcomes:
	case <-time.After(wait):
		t.Fatal("no call stream was refused")
	}
	var se *wt.StreamError
	if !errors.As(first.err, &se) || se.ErrorCode != wt.StreamErrorCode(wire.ResetTooManyStreams) || !se.Remote {
		t.Fatalf("call %d ended with %v, want a reset with code 9", first.i, first.err)
	}
	stillUp(t, p, frames, "257")
	// Every other call still hangs: exactly one was over the cap.
	select {
	case o := <-outcomes:
		t.Fatalf("call %d ended too (%v); only one of %d was over the cap", o.i, o.err, tio.DefaultMaxCalls+1)
	default:
	}
	// The 256 calls hang until the session ends (§6.6: a responder is
	// aborted with its session); then nothing of it is left.
	p.hangUp()
	for range tio.DefaultMaxCalls {
		select {
		case <-outcomes:
		case <-time.After(wait):
			t.Fatal("a call stream outlived its session")
		}
	}
}

// §5.1: the cap is decided by type: a CALL_REQUEST twice the size an EMIT
// may carry is within the call frames' 16 MiB and answered in full. (The
// exact 16 MiB edge is the wire package's test; over QUIC under -race it
// costs seconds.)
func TestSpec5_1_HostileCallRequestOverEmitCap(t *testing.T) {
	p, _ := startServer(t).ready(t)
	blob := make([]byte, 2*wire.MaxPayload)
	_, _ = rand.Read(blob)
	got := answer(t, p.call(t, true, frame(wire.FrameCallRequest, wire.CodecBytes, conformancetest.Blob, blob)))
	if len(got) != 1 || got[0].Type != wire.FrameCallResponse || got[0].Codec != wire.CodecBytes || !bytes.Equal(got[0].Payload, blob) {
		t.Fatalf("blob of 2 MiB: %d frames back", len(got))
	}
}

// §5.1: a CALL_REQUEST over 16 MiB abandons its stream (no response) on the
// header alone; the session stays up.
func TestSpec5_1_HostileOversizeCallRequestAbandonsStream(t *testing.T) {
	p, frames := startServer(t).ready(t)
	st := p.call(t, false, header(wire.FrameCallRequest, wire.CodecBytes, conformancetest.Blob, wire.MaxCallPayload+1))
	_ = st.SetReadDeadline(time.Now().Add(wait))
	_, err := io.ReadAll(st)
	var se *wt.StreamError
	if !errors.As(err, &se) || !se.Remote {
		t.Fatalf("the oversized call ended with %v, want the stream abandoned", err)
	}
	stillUp(t, p, frames, "after oversize call")
}
