package wire

import (
	"strings"
	"testing"
)

// §5.3: codec 0x01 is UTF-8 JSON. Every control payload that is not UTF-8
// is refused by its parser, never read with U+FFFD in place of the bytes.
func TestSpec5_3_ControlPayloadsNotUTF8Refused(t *testing.T) {
	hs := string(AppendHandshake(nil, Handshake{V: ProtocolVersion, Feat: []string{"x"}}))
	if _, err := DecodeHandshake([]byte(strings.Replace(hs, `"x"`, "\"\xff\"", 1))); err == nil || !strings.Contains(err.Error(), "not UTF-8") {
		t.Errorf("handshake: %v", err)
	}
	if room, err := ParseRoom([]byte("{\"room\":\"\xff\"}")); err == nil || CodeOf(err) != ProtocolError || !strings.Contains(err.Error(), "not UTF-8") {
		t.Errorf("room: %q, %v", room, err)
	}
	if ce, err := ParseCallError([]byte("{\"code\":\"WT_HANDLER_ERROR\",\"message\":\"\xff\"}")); err == nil || !strings.Contains(err.Error(), "not UTF-8") {
		t.Errorf("call error: %+v, %v", ce, err)
	}
	if n, ok := ParseCredit([]byte("{\"credit\":16,\"note\":\"\xff\"}")); ok {
		t.Errorf("credit: granted %d", n)
	}
}

// §5.3: Carries judges a payload by its codec: JSON must be UTF-8, bytes
// carry anything.
func TestSpec5_3_CodecCarries(t *testing.T) {
	for _, tc := range []struct {
		codec   Codec
		payload string
		want    bool
	}{
		{CodecJSON, `"ünïcødé ✓"`, true},
		{CodecJSON, "\"\xff\"", false},
		{CodecJSON, "\"\xed\xa0\x80\"", false}, // an encoded surrogate is not UTF-8
		{CodecBytes, "\xff\x00", true},
	} {
		if got := tc.codec.Carries([]byte(tc.payload)); got != tc.want {
			t.Errorf("%v carries %q: %v, want %v", tc.codec, tc.payload, got, tc.want)
		}
	}
}
