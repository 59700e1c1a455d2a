package wire

// Close-reason limits (§3.3, §4, §10.2).
const (
	// MaxCloseReason is the longest session close reason, in bytes (§10.2).
	MaxCloseReason = 1024
	// MaxWebSocketReason is the longest reason the WebSocket mapping carries,
	// and so the longest refusal reason (§3.3, §4).
	MaxWebSocketReason = 123
)

// CutReason cuts s to at most n bytes without splitting a UTF-8 character.
func CutReason(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	// Step back over continuation bytes (10xxxxxx) to a character start.
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i]
}
