package tio

import (
	"context"
	"strings"
	"testing"

	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

// notUTF8JSON is a JSON string whose bytes are not UTF-8: encoding/json
// would read it as "\ufffd" without a word.
var notUTF8JSON = []byte("\"\xff\"")

// §5.3, §5.5: codec 0x01 is UTF-8 JSON; an EMIT whose payload is not UTF-8
// is a protocol error on the emit lane and closes the session, naming the
// event and the slot. The handler never sees a repaired payload.
func TestSpec5_3_EmitPayloadNotUTF8ClosesSession(t *testing.T) {
	ts, raw := handshaken(t)
	raw.frame(wire.FrameEmit, wire.CodecJSON, evPing, notUTF8JSON)
	wantClose(t, raw.conn, wire.CloseProtocolError, "event 'ping' payload slot is UTF-8 JSON; the payload is not UTF-8")
	for _, got := range ts.got.all() {
		if got != "ping:0" {
			t.Fatalf("the handler saw %q", got)
		}
	}
}

// §5.3, §5.2 (DATAGRAM on the WebSocket mapping carries a §7.1 datagram):
// a JSON datagram that is not UTF-8 closes the session like a codec
// mismatch does.
func TestSpec5_3_DatagramPayloadNotUTF8ClosesSession(t *testing.T) {
	_, raw := handshaken(t)
	_ = raw.conn.SendDatagram(dgram(evMove, 1, 1, string(notUTF8JSON)))
	wantClose(t, raw.conn, wire.CloseProtocolError, "event 'move' payload slot is UTF-8 JSON")
}

// §5.3, §6.4: a CALL_REQUEST whose JSON is not UTF-8 is answered with
// CALL_ERROR WT_PROTOCOL_ERROR naming the request slot; the handler does
// not run and the session stays up.
func TestSpec5_3_CallRequestNotUTF8IsCallError(t *testing.T) {
	_, raw := handshaken(t)
	_, rd := raw.rawCall(evEcho, wire.CodecJSON, notUTF8JSON, true)
	wantCallError(t, rd, wire.ProtocolError, "event 'echo' request slot is UTF-8 JSON")
	_, rd = raw.rawCall(evEcho, wire.CodecJSON, []byte(`"still up"`), true)
	if f := mustNext(t, rd); f.Type != wire.FrameCallResponse || string(f.Payload) != `"still up"` {
		t.Fatalf("after the bad request: %s %q", f.Type, f.Payload)
	}
}

// §5.3: a CALL_RESPONSE whose JSON is not UTF-8 fails the call
// WT_PROTOCOL_ERROR naming the returns slot.
func TestSpec5_3_CallResponseNotUTF8IsProtocolError(t *testing.T) {
	c := rawServer(t, func(st transport.Stream) {
		writeFrame(st, wire.FrameCallResponse, wire.CodecJSON, notUTF8JSON)
		_ = st.Close()
	})
	_, err := c.Call(context.Background(), evEcho, []byte(`1`))
	wantCode(t, err, wire.ProtocolError)
	if !strings.Contains(err.Error(), "event 'echo' returns slot is UTF-8 JSON") {
		t.Fatalf("error %v", err)
	}
}

// §5.3: a streamed element whose JSON is not UTF-8 ends the sequence with
// WT_PROTOCOL_ERROR naming the yields slot, after the valid elements.
func TestSpec5_3_StreamElementNotUTF8IsProtocolError(t *testing.T) {
	c := rawServer(t, func(st transport.Stream) {
		writeFrame(st, wire.FrameCallResponse, wire.CodecJSON, []byte(`{"i":0}`))
		writeFrame(st, wire.FrameCallResponse, wire.CodecJSON, notUTF8JSON)
		_ = st.Close()
	})
	var got []string
	var last error
	for elem, err := range c.Stream(context.Background(), evCount, []byte(`{"n":2}`)) {
		if err != nil {
			last = err
			break
		}
		got = append(got, string(elem))
	}
	wantCode(t, last, wire.ProtocolError)
	if len(got) != 1 || got[0] != `{"i":0}` || !strings.Contains(last.Error(), "event 'count' yields slot is UTF-8 JSON") {
		t.Fatalf("elements %q, then %v", got, last)
	}
}

// §4.1, §5.3: a handshake that is not UTF-8 (a feature token here) closes
// the session WT_PROTOCOL_ERROR rather than being read with U+FFFD.
func TestSpec5_3_HandshakeNotUTF8ClosesSession(t *testing.T) {
	_, raw, _ := serveRaw(t, loopback.Options{}, ServerOptions{})
	hs := wire.AppendHandshake(nil, wire.Handshake{V: wire.ProtocolVersion, Feat: []string{"x"}, Events: testContract.table})
	hs = []byte(strings.Replace(string(hs), `"x"`, "\"\xff\"", 1))
	raw.frame(wire.FrameHandshake, wire.CodecJSON, 0, hs)
	wantClose(t, raw.conn, wire.CloseProtocolError, "not UTF-8")
}

// §5.3, §6.5: a JOIN (a control frame, always UTF-8 JSON) whose room is not
// UTF-8 closes the client's session WT_PROTOCOL_ERROR.
func TestSpec5_3_JoinNotUTF8ClosesSession(t *testing.T) {
	cconn, sconn, _ := loopback.Pair(loopback.Options{})
	raw := newRawPeer(t, sconn)
	raw.handshake(testContract)
	c, err := NewClient(context.Background(), cconn, testContract, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(NoError, ""); _ = c.Wait() })
	raw.frame(wire.FrameJoin, wire.CodecJSON, 0, []byte("{\"room\":\"lob\xffby\"}"))
	wantClose(t, sconn, wire.CloseProtocolError, "not UTF-8")
	if rooms := c.Rooms(); len(rooms) != 0 {
		t.Fatalf("the client joined %q", rooms)
	}
}

// §5.3, §6.4: a CALL_ERROR whose message is not UTF-8 is no answer to
// report: the call fails WT_PROTOCOL_ERROR, not with a repaired message.
func TestSpec5_3_CallErrorNotUTF8IsProtocolError(t *testing.T) {
	c := rawServer(t, func(st transport.Stream) {
		writeFrame(st, wire.FrameCallError, wire.CodecJSON, []byte("{\"code\":\"WT_HANDLER_ERROR\",\"message\":\"\xff\"}"))
		_ = st.Close()
	})
	_, err := c.Call(context.Background(), evEcho, []byte(`1`))
	wantCode(t, err, wire.ProtocolError)
	if !strings.Contains(err.Error(), "not UTF-8") || strings.Contains(err.Error(), "\ufffd") {
		t.Fatalf("error %v", err)
	}
}
