package wire

import "time"

// The spec's per-session numbers that the engine enforces and the
// transports size themselves by, defined here once.
const (
	// HandshakeDeadline is the handshake deadline (§4.1).
	HandshakeDeadline = 5000 * time.Millisecond
	// MaxCalls is the concurrent call streams a session serves; the next
	// is reset WT_TOO_MANY_STREAMS (§10.1).
	MaxCalls = 256
)
