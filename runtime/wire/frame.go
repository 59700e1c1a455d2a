package wire

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unicode/utf8"
)

// FrameType is the type byte of a stream frame (§5.2).
type FrameType uint8

// Frame types (§5.2). 0x00 and 0x0A–0xFF are reserved and invalid.
const (
	FrameHandshake    FrameType = 0x01
	FrameEmit         FrameType = 0x02
	FrameCallRequest  FrameType = 0x03
	FrameCallResponse FrameType = 0x04
	FrameCallError    FrameType = 0x05
	FrameJoin         FrameType = 0x06
	FrameLeave        FrameType = 0x07
	FrameCallCredit   FrameType = 0x08
	FrameDatagram     FrameType = 0x09
)

var frameNames = [...]string{
	FrameHandshake:    "HANDSHAKE",
	FrameEmit:         "EMIT",
	FrameCallRequest:  "CALL_REQUEST",
	FrameCallResponse: "CALL_RESPONSE",
	FrameCallError:    "CALL_ERROR",
	FrameJoin:         "JOIN",
	FrameLeave:        "LEAVE",
	FrameCallCredit:   "CALL_CREDIT",
	FrameDatagram:     "DATAGRAM",
}

// Known reports whether t is a type §5.2 defines.
func (t FrameType) Known() bool {
	return t >= FrameHandshake && t <= FrameDatagram
}

// String returns the spec's name, e.g. "CALL_REQUEST", or "type 0x0a" for a
// reserved value.
func (t FrameType) String() string {
	if t.Known() {
		return frameNames[t]
	}
	return fmt.Sprintf("type 0x%02x", uint8(t))
}

// MaxPayload is the largest payload a frame of this type may carry (§5.1):
// 16 MiB on the call frames, 1 MiB on every other type.
func (t FrameType) MaxPayload() int {
	switch t {
	case FrameCallRequest, FrameCallResponse, FrameCallError:
		return MaxCallPayload
	}
	return MaxPayload
}

// control reports whether t is a control frame, which always carries codec
// 0x01 (§5.3).
func (t FrameType) control() bool {
	switch t {
	case FrameHandshake, FrameJoin, FrameLeave, FrameCallError, FrameCallCredit, FrameDatagram:
		return true
	}
	return false
}

// hasEventID reports whether frames of type t carry a non-zero event id
// (§5.4): EMIT and CALL_REQUEST name their event; every other frame takes
// its meaning from the stream or its own payload and carries 0.
func (t FrameType) hasEventID() bool {
	return t == FrameEmit || t == FrameCallRequest
}

// Types is a set of frame types: the ones valid on one kind of stream
// (§5.2), which a Reader checks on the header, before buffering a payload.
type Types uint16

// TypesOf returns the set of the given types.
func TypesOf(ts ...FrameType) Types {
	var s Types
	for _, t := range ts {
		s |= 1 << t
	}
	return s
}

// Has reports whether t is in the set.
func (s Types) Has(t FrameType) bool { return t.Known() && s&(1<<t) != 0 }

// EmitStreamTypes are the types valid on an emit stream (§5.2): frame 0 and
// server-to-client or WebSocket-only types included, which the session
// judges by role and mapping; the call frames are not among them.
var EmitStreamTypes = TypesOf(FrameHandshake, FrameEmit, FrameJoin, FrameLeave, FrameDatagram)

// Codec is the codec byte of a frame or datagram (§5.3).
type Codec uint8

// Codecs (§5.3). 0x00 and 0x03–0xFF are reserved.
const (
	CodecJSON  Codec = 0x01
	CodecBytes Codec = 0x02
)

// Known reports whether c is a codec version 0 accepts.
func (c Codec) Known() bool { return c == CodecJSON || c == CodecBytes }

// Carries reports whether payload may travel in codec c: codec 0x01 is
// UTF-8 JSON (§5.3), so a JSON payload that is not UTF-8 is a protocol
// error, never text to repair; bytes (0x02) carry anything. Whether the
// JSON is well formed is the decoder's to judge.
func (c Codec) Carries(payload []byte) bool { return c != CodecJSON || utf8.Valid(payload) }

func (c Codec) String() string {
	switch c {
	case CodecJSON:
		return "json"
	case CodecBytes:
		return "bytes"
	}
	return fmt.Sprintf("codec 0x%02x", uint8(c))
}

// Frame sizes (§5.1).
const (
	// HeaderLen is the fixed overhead of a frame: 4 length bytes and the 8
	// header bytes the length counts.
	HeaderLen = 12
	// MaxPayload is the payload cap of every frame type but the call frames.
	MaxPayload = 1 << 20
	// MaxCallPayload is the payload cap of CALL_REQUEST, CALL_RESPONSE and
	// CALL_ERROR.
	MaxCallPayload = 16 << 20
	// minLength is the smallest Length: 8 header bytes and one payload byte.
	minLength = 9
)

// Frame is one decoded stream frame.
type Frame struct {
	Type    FrameType
	Codec   Codec
	EventID uint32
	Payload []byte
}

// PutHeader writes the 12-byte header of a frame carrying payloadLen bytes
// into b[:12]. It does not validate; AppendFrame does. It panics if b is
// shorter than HeaderLen.
func PutHeader(b []byte, t FrameType, c Codec, eventID uint32, payloadLen int) {
	_ = b[HeaderLen-1]
	binary.BigEndian.PutUint32(b[0:4], uint32(8+payloadLen))
	b[4] = byte(t)
	b[5] = byte(c)
	b[6], b[7] = 0, 0
	binary.BigEndian.PutUint32(b[8:12], eventID)
}

// AppendFrame appends one frame to dst. It refuses to build a frame a
// receiver would reject: an empty payload or a wrong type, codec or event
// id is WT_PROTOCOL_ERROR (WT_UNSUPPORTED_CODEC for a reserved codec), and a
// payload over the type's cap is WT_PAYLOAD_TOO_LARGE (§5.1–§5.4).
func AppendFrame(dst []byte, t FrameType, c Codec, eventID uint32, payload []byte) ([]byte, error) {
	if len(payload) == 0 {
		return dst, Errorf(ProtocolError, "%s frame with an empty payload (§5.1)", t)
	}
	if err := checkHeader(t, c, eventID, len(payload)); err != nil {
		return dst, err
	}
	n := len(dst)
	dst = slices.Grow(dst, HeaderLen+len(payload))[:n+HeaderLen]
	PutHeader(dst[n:], t, c, eventID, len(payload))
	return append(dst, payload...), nil
}

// checkHeader applies §5.1–§5.4 to a header, in the order a receiver can
// read them: type, cap, codec, control-frame codec, event id. Reserved bits
// and the minimum length are checked by the reader, which sees them.
func checkHeader(t FrameType, c Codec, eventID uint32, payloadLen int) *Error {
	if !t.Known() {
		return Errorf(ProtocolError, "reserved frame %s (§5.2)", t)
	}
	if payloadLen > t.MaxPayload() {
		return Errorf(PayloadTooLarge, "%s payload of %d bytes exceeds the %d-byte cap (§5.1)", t, payloadLen, t.MaxPayload())
	}
	if !c.Known() {
		return Errorf(UnsupportedCodec, "%s frame with reserved %s (§5.3)", t, c)
	}
	if t.control() && c != CodecJSON {
		return Errorf(ProtocolError, "%s frame with %s; control frames carry codec 0x01 (§5.3)", t, c)
	}
	if t.hasEventID() && eventID == 0 {
		return Errorf(ProtocolError, "%s frame with event id 0 (§5.4)", t)
	}
	if !t.hasEventID() && eventID != 0 {
		return Errorf(ProtocolError, "%s frame with event id %d; it must be 0 (§5.4)", t, eventID)
	}
	return nil
}
