package hostile

import (
	"strings"
	"testing"

	"github.com/transport-io/tiogen/cmd/tio-conformance/conformance"
	"github.com/transport-io/tiogen/runtime/wire"
	"github.com/transport-io/tiogen/tests/internal/conformancetest"
)

// onBoth and wtOnly say which mappings a case applies to.
var (
	onBoth = []string{"webtransport", "websocket"}
	wtOnly = []string{"webtransport"}
)

// sessionCase is one rule broken on the emit lane and the close it earns.
// Every case sends its bytes right after the session opens; the cases are
// shared by both mappings, so the emit lane cannot drift between them.
type sessionCase struct {
	name     string
	mappings []string
	// send is this side's emit stream; nil sends nothing at all.
	send [][]byte
	// datagram, sent after send, is a §7.1 datagram: a QUIC datagram on
	// WebTransport, a DATAGRAM frame on the WebSocket (§3.3).
	datagram  []byte
	code      uint32
	reasonHas []string
}

func withMove(lane wire.Lane) []wire.EventEntry {
	table := conformance.Contract.Table()
	for i := range table {
		if table[i].Name == "move" {
			table[i].Lane = lane
		}
	}
	return table
}

func withEchoID(id uint32) []wire.EventEntry {
	table := conformance.Contract.Table()
	for i := range table {
		if table[i].Name == "echo" {
			table[i].ID = id
		}
	}
	return table
}

func reservedBits() []byte {
	b := frame(wire.FrameEmit, wire.CodecJSON, conformancetest.Shout, text("x"))
	b[7] = 0x01
	return b
}

var sessionCases = []sessionCase{
	{"Spec4_2_VersionMismatch", onBoth,
		[][]byte{handshake(1, conformance.Contract.Table())},
		nil, wire.CloseProtocolVersionMismatch, []string{"version", "1"}},
	// §4.2: what a later version adds or reshapes is its own, so the
	// version alone is answered.
	{"Spec4_2_VersionMismatchWithFieldsV0Lacks", onBoth,
		[][]byte{frame(wire.FrameHandshake, wire.CodecJSON, 0, []byte(`{"v":1,"feat":[],"events":{"move":1},"resume":true}`))},
		nil, wire.CloseProtocolVersionMismatch, []string{"version 0 here, 1 at the peer"}},
	{"Spec4_3_ContractMismatchLane", onBoth,
		[][]byte{handshake(0, withMove(wire.Reliable))},
		nil, wire.CloseContractMismatch, []string{"event 'move'", "reliable"}},
	{"Spec4_3_ContractMismatchID", onBoth,
		[][]byte{handshake(0, withEchoID(7))},
		nil, wire.CloseContractMismatch, []string{"event 'echo'", "id"}},
	{"Spec4_1_HandshakeTimeoutNothingSent", onBoth,
		nil,
		nil, wire.CloseHandshakeTimeout, []string{"handshake", "1000 ms"}},
	{"Spec4_1_HandshakeTimeoutPartialFrame", onBoth,
		[][]byte{goodHandshake[:7]},
		nil, wire.CloseHandshakeTimeout, []string{"handshake"}},
	{"Spec3_1_FrameZeroNotHandshake", onBoth,
		[][]byte{frame(wire.FrameEmit, wire.CodecJSON, conformancetest.Shout, text("early"))},
		nil, wire.CloseProtocolError, []string{"frame 0", "EMIT", "HANDSHAKE"}},
	{"Spec5_1_ZeroLength", onBoth,
		[][]byte{goodHandshake, {0, 0, 0, 0}},
		nil, wire.CloseProtocolError, []string{"length 0"}},
	{"Spec5_1_EmptyPayload", onBoth,
		[][]byte{goodHandshake, header(wire.FrameEmit, wire.CodecJSON, conformancetest.Shout, 0)},
		nil, wire.CloseProtocolError, []string{"length 8"}},
	// Only the header is sent: the cap is decided from the type before a
	// payload byte is buffered (§5.1).
	{"Spec5_1_OversizeEmitByType", onBoth,
		[][]byte{goodHandshake, header(wire.FrameEmit, wire.CodecJSON, conformancetest.Shout, wire.MaxPayload+1)},
		nil, wire.CloseProtocolError, []string{"EMIT", "exceeds", "cap"}},
	{"Spec5_1_ReservedBits", onBoth,
		[][]byte{goodHandshake, reservedBits()},
		nil, wire.CloseProtocolError, []string{"reserved bits"}},
	{"Spec5_2_ReservedType0x0A", onBoth,
		[][]byte{goodHandshake, header(0x0A, wire.CodecJSON, conformancetest.Shout, 1), {'1'}},
		nil, wire.CloseProtocolError, []string{"reserved frame type 0x0a"}},
	{"Spec5_2_ReservedType0x00", onBoth,
		[][]byte{goodHandshake, header(0x00, wire.CodecJSON, conformancetest.Shout, 1), {'1'}},
		nil, wire.CloseProtocolError, []string{"reserved frame type 0x00"}},
	{"Spec6_5_ClientSentJoin", onBoth,
		[][]byte{goodHandshake, frame(wire.FrameJoin, wire.CodecJSON, 0, wire.AppendRoom(nil, "lobby"))},
		nil, wire.CloseProtocolError, []string{"JOIN", "server-authoritative"}},
	{"Spec6_5_ClientSentLeave", onBoth,
		[][]byte{goodHandshake, frame(wire.FrameLeave, wire.CodecJSON, 0, wire.AppendRoom(nil, "lobby"))},
		nil, wire.CloseProtocolError, []string{"LEAVE"}},
	{"Spec5_3_CodecMismatch", onBoth,
		[][]byte{goodHandshake, frame(wire.FrameEmit, wire.CodecBytes, conformancetest.Shout, text("x"))},
		nil, wire.CloseProtocolError, []string{"event 'shout'", "payload", "bytes"}},
	{"Spec5_3_ReservedCodec", onBoth,
		[][]byte{goodHandshake, header(wire.FrameEmit, 0x03, conformancetest.Shout, 1), {'1'}},
		nil, wire.CloseProtocolError, []string{"codec 0x03"}},
	{"Spec5_2_CallRequestOnEmitStream", onBoth,
		[][]byte{goodHandshake, frame(wire.FrameCallRequest, wire.CodecJSON, conformancetest.Echo, text("x"))},
		nil, wire.CloseProtocolError, []string{"CALL_REQUEST"}},
	// A call frame's header on the emit stream closes the session on the
	// header, before a payload byte is buffered (§5.1, §5.2): each
	// announces the 16 MiB call cap and sends a little of it, in two
	// messages on the WebSocket, so only the header can have been judged.
	{"Spec5_2_CallRequestHeaderOnEmitStream", onBoth,
		[][]byte{goodHandshake, header(wire.FrameCallRequest, wire.CodecJSON, conformancetest.Echo, wire.MaxCallPayload), []byte(`{"text":"`), make([]byte, 1000)},
		nil, wire.CloseProtocolError, []string{"CALL_REQUEST", "emit stream"}},
	{"Spec5_2_CallResponseHeaderOnEmitStream", onBoth,
		[][]byte{goodHandshake, header(wire.FrameCallResponse, wire.CodecJSON, 0, wire.MaxCallPayload), make([]byte, 1000)},
		nil, wire.CloseProtocolError, []string{"CALL_RESPONSE", "emit stream"}},
	{"Spec5_2_CallErrorHeaderOnEmitStream", onBoth,
		[][]byte{goodHandshake, header(wire.FrameCallError, wire.CodecJSON, 0, wire.MaxCallPayload), make([]byte, 1000)},
		nil, wire.CloseProtocolError, []string{"CALL_ERROR", "emit stream"}},
	{"Spec5_2_CallCreditHeaderOnEmitStream", onBoth,
		[][]byte{goodHandshake, header(wire.FrameCallCredit, wire.CodecJSON, 0, wire.MaxPayload), make([]byte, 1000)},
		nil, wire.CloseProtocolError, []string{"CALL_CREDIT", "emit stream"}},
	{"Spec3_1_FrameZeroCallRequestHeader", onBoth,
		[][]byte{header(wire.FrameCallRequest, wire.CodecJSON, conformancetest.Echo, wire.MaxCallPayload), make([]byte, 1000)},
		nil, wire.CloseProtocolError, []string{"CALL_REQUEST"}},
	{"Spec5_2_SecondHandshake", onBoth,
		[][]byte{goodHandshake, goodHandshake},
		nil, wire.CloseProtocolError, []string{"HANDSHAKE"}},
	{"Spec3_DatagramForReliableEvent", onBoth,
		[][]byte{goodHandshake}, wire.AppendDatagram(nil, wire.Datagram{
			Codec: wire.CodecJSON, EventID: conformancetest.Shout, Origin: 1, Seq: 1, Payload: text("x")}),
		wire.CloseProtocolError, []string{"datagram", "event 'shout'", "reliable"}},
	{"Spec5_3_DatagramCodecMismatch", onBoth,
		[][]byte{goodHandshake}, wire.AppendDatagram(nil, wire.Datagram{
			Codec: wire.CodecBytes, EventID: conformancetest.Move, Origin: 1, Seq: 1, Payload: []byte(`{"x":1,"y":2}`)}),
		wire.CloseProtocolError, []string{"event 'move'", "payload", "bytes"}},
	{"Spec3_3_DatagramFrameOnWebTransport", wtOnly,
		[][]byte{goodHandshake, frame(wire.FrameDatagram, wire.CodecJSON, 0, wire.AppendDatagram(nil, wire.Datagram{
			Codec: wire.CodecJSON, EventID: conformancetest.Move, Origin: 1, Seq: 1, Payload: []byte(`{"x":1,"y":2}`)}))},
		nil, wire.CloseProtocolError, []string{"DATAGRAM", "WebTransport"}},
}

// Each session-closing protocol error, provoked by a raw peer over each
// mapping it applies to, closes the session with its §10.2 code (on the
// WebSocket, 3000 + code, §3.3) and a reason that names the problem.
func TestHostileSessionErrors(t *testing.T) {
	srv := startServer(t)
	for _, c := range sessionCases {
		for _, m := range c.mappings {
			t.Run(c.name+"/"+m, func(t *testing.T) {
				t.Parallel()
				var p peer
				if m == "webtransport" {
					p = srv.dialWT(t)
				} else {
					p = srv.dialWS(t)
				}
				for _, b := range c.send {
					p.write(t, b)
				}
				if c.datagram != nil {
					p.datagram(t, c.datagram)
				}
				code, reason := p.closed(t)
				if code != c.code {
					t.Errorf("closed with %d %q, want %d", code, reason, c.code)
				}
				for _, s := range c.reasonHas {
					if !strings.Contains(reason, s) {
						t.Errorf("reason %q does not name the problem (%q)", reason, s)
					}
				}
			})
		}
	}
}
