package wire

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// §10.2 (1024 bytes) and §3.3 (123 bytes): reasons are cut to the cap on a
// character boundary, never inside a UTF-8 sequence.
func TestSpec3_3_ReasonIsCutOnACharacterBoundary(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", MaxWebSocketReason, "short"},
		{strings.Repeat("a", 200), MaxWebSocketReason, strings.Repeat("a", 123)},
		{strings.Repeat("a", 122) + "é", MaxWebSocketReason, strings.Repeat("a", 122)}, // é is 2 bytes
		{strings.Repeat("a", 121) + "😀", MaxWebSocketReason, strings.Repeat("a", 121)}, // 4 bytes
		{strings.Repeat("a", 119) + "😀", MaxWebSocketReason, strings.Repeat("a", 119) + "😀"},
		{strings.Repeat("é", 600), MaxCloseReason, strings.Repeat("é", 512)},
		{"😀", 3, ""},
		{"", 0, ""},
	} {
		got := CutReason(c.in, c.n)
		if got != c.want || len(got) > c.n || !utf8.ValidString(got) {
			t.Errorf("CutReason(%d bytes, %d) = %d bytes %q", len(c.in), c.n, len(got), got)
		}
	}
}
