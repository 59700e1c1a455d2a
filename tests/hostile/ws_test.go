package hostile

import (
	"strings"
	"testing"

	cws "github.com/coder/websocket"

	"github.com/transport-io/tiogen/runtime/wire"
	"github.com/transport-io/tiogen/tests/internal/conformancetest"
)

// §3.3: a text message on the WebSocket mapping is a protocol error:
// WebSocket close 4004 (3000 + WT_PROTOCOL_ERROR) naming it.
func TestSpec3_3_HostileTextMessageIsProtocolError(t *testing.T) {
	p := startServer(t).dialWS(t)
	p.write(t, goodHandshake)
	if err := p.c.Write(conformancetest.Context(t), cws.MessageText, frame(wire.FrameEmit, wire.CodecJSON, conformancetest.Shout, text("x"))); err != nil {
		t.Fatal(err)
	}
	code, reason := p.closed(t)
	if code != wire.CloseProtocolError || !strings.Contains(reason, "text message") {
		t.Fatalf("closed with %d %q, want %d naming the text message", code, reason, wire.CloseProtocolError)
	}
}

// moveFrame is a DATAGRAM frame (§3.3: header codec 0x01, event id 0)
// carrying a move datagram with the given sequence.
func moveFrame(seq uint32, payload string) []byte {
	return frame(wire.FrameDatagram, wire.CodecJSON, 0, wire.AppendDatagram(nil, wire.Datagram{
		Codec: wire.CodecJSON, EventID: conformancetest.Move, Origin: 1, Seq: seq, Payload: []byte(payload)}))
}

// §3.3, §7.3: on the WebSocket a DATAGRAM frame is applied as a datagram:
// a stale or duplicate sequence is discarded, and what the gate accepts the
// conformance server echoes back as a DATAGRAM frame. The lane is ordered,
// so the echoes show exactly which frames were accepted.
func TestSpec7_3_HostileStaleDatagramFramesDiscarded(t *testing.T) {
	p := startServer(t).dialWS(t)
	p.write(t, goodHandshake)
	sent := []struct {
		seq     uint32
		payload string
	}{
		{5, `{"x":5,"y":0}`},
		{5, `{"x":55,"y":0}`}, // duplicate
		{3, `{"x":3,"y":0}`},  // stale
		{6, `{"x":6,"y":0}`},
	}
	for _, s := range sent {
		p.write(t, moveFrame(s.seq, s.payload))
	}
	for _, want := range []string{`{"x":5,"y":0}`, `{"x":6,"y":0}`} {
		f := nextFrame(t, p.frames)
		if f.Type != wire.FrameDatagram || f.Codec != wire.CodecJSON || f.EventID != 0 {
			t.Fatalf("server sent %s codec %s event %d, want a DATAGRAM frame", f.Type, f.Codec, f.EventID)
		}
		d, ok, err := wire.ParseDatagram(f.Payload)
		if err != nil || !ok || d.EventID != conformancetest.Move || string(d.Payload) != want {
			t.Fatalf("echo %+v (%v), want move %s", d, err, want)
		}
	}
	// Everything after the stale ones arrived, so they were read and
	// dropped; the session is still up.
	p.write(t, frame(wire.FrameEmit, wire.CodecJSON, conformancetest.Shout, text("up")))
	if f := nextFrame(t, p.frames); f.Type != wire.FrameEmit || f.EventID != conformancetest.Heard {
		t.Fatalf("after the datagrams the server sent %s %d", f.Type, f.EventID)
	}
}
