package tio

import (
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Spec defaults (§4.1, §9, §10.1, §6.6, §3.3, §7.2).
const (
	// DefaultHandshakeTimeout is the handshake deadline (§4.1).
	DefaultHandshakeTimeout = wire.HandshakeDeadline
	// DefaultMaxCalls is the concurrent inbound call streams a session
	// serves; the next is reset WT_TOO_MANY_STREAMS (§10.1).
	DefaultMaxCalls = wire.MaxCalls
	// EmitQueueFrames bounds a peer's emit queue (§9).
	EmitQueueFrames = 256
	// InitialCredit is a responder's starting credit (§6.6).
	InitialCredit = 32
	// CreditBatch is the refill an initiator grants per consumed batch
	// (§6.6); it never exceeds InitialCredit.
	CreditBatch = 16
	// DatagramLaneMark is the emit queue depth under which queued unreliable
	// frames move onto the emit lane on the WebSocket mapping (§3.3).
	DatagramLaneMark = 32
)

// Options shape a session; the zero value is the spec's defaults.
type Options struct {
	// Clock drives every timer (handshake deadline, datagram TTL, sequence
	// state retention, probes); nil is the real clock.
	Clock clock.Clock
	// HandshakeTimeout is the handshake deadline; 0 means 5000 ms (§4.1).
	HandshakeTimeout time.Duration
	// MaxCalls bounds concurrent inbound call streams; 0 means 256 (§10.1).
	MaxCalls int
	// Features are the feature tokens this side offers (§4.2). Version 0
	// implements none.
	Features []string

	// noCredit disables the §6.6 window on both roles. It exists only so a
	// benchmark can measure the window's cost; no conforming peer runs so.
	noCredit bool
}

func (o Options) withDefaults() Options {
	o.Clock = clock.Or(o.Clock)
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if o.MaxCalls <= 0 {
		o.MaxCalls = DefaultMaxCalls
	}
	return o
}
