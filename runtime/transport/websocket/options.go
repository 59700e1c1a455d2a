package websocket

import (
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/wire"
)

// The §3.3 liveness intervals.
const (
	// DefaultKeepaliveInterval is how long a peer may send nothing before it
	// sends an empty binary message (§3.3).
	DefaultKeepaliveInterval = 15000 * time.Millisecond
	// DefaultIdleTimeout is how long a peer may receive nothing before it
	// closes the session WT_IDLE_TIMEOUT (§3.3).
	DefaultIdleTimeout = 45000 * time.Millisecond
)

// Limits where the spec is silent (documented in docs/conformance.md).
const (
	// DefaultMaxMessageSize is the largest message accepted from the peer:
	// room for a maximum-size EMIT frame (12 + 1 MiB, §5.1) with the frames a
	// writer coalesced around it. Messages are read in pieces, straight
	// into the engine's buffer, so this bounds a message, not memory.
	DefaultMaxMessageSize = 2 << 20
	// DefaultCloseGrace is how long a closing peer lets its close frame and
	// the closing handshake take before it drops the TCP connection. The
	// session is closed at once either way (§3.3).
	DefaultCloseGrace = time.Second
	// DefaultMessageTimeout is how long a message may take to arrive whole
	// once it began, counting only time this side spends reading: a
	// maximum-size message (1 MiB frame) at 35 KiB/s. A peer that starts a
	// message and dribbles it on for ever would otherwise hold the session
	// while the idle deadline sees it as alive.
	DefaultMessageTimeout = 30 * time.Second

	// maxSendMessage is the largest message this side sends: one
	// maximum-size frame. A longer Write is sent as several messages,
	// which §3.3 allows since boundaries carry no meaning.
	maxSendMessage = wire.HeaderLen + wire.MaxPayload
)

// Options tunes a WebSocket session. The zero value means the spec's values
// and this package's defaults.
type Options struct {
	// Clock drives the keepalive, idle and close-grace timers; nil is the
	// wall clock. Tests inject clock.NewFake().
	Clock clock.Clock
	// KeepaliveInterval: an empty binary message is sent once this long has
	// passed with nothing sent. 0 means DefaultKeepaliveInterval.
	KeepaliveInterval time.Duration
	// IdleTimeout: the session closes WT_IDLE_TIMEOUT once this long has
	// passed with nothing received. 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxMessageSize is the largest message accepted; a longer one closes
	// the session WT_PROTOCOL_ERROR. 0 means DefaultMaxMessageSize.
	MaxMessageSize int64
	// CloseGrace bounds how long a local close waits for the close frame to
	// be written and answered before the TCP connection is dropped.
	// 0 means DefaultCloseGrace.
	CloseGrace time.Duration
	// MessageTimeout is how long a message may take to arrive whole once
	// its first bytes arrived, counting only time this side spends reading
	// it; later, the session closes WT_PROTOCOL_ERROR. 0 means
	// DefaultMessageTimeout.
	MessageTimeout time.Duration
}

func (o Options) withDefaults() Options {
	o.Clock = clock.Or(o.Clock)
	if o.KeepaliveInterval <= 0 {
		o.KeepaliveInterval = DefaultKeepaliveInterval
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxMessageSize <= 0 {
		o.MaxMessageSize = DefaultMaxMessageSize
	}
	if o.CloseGrace <= 0 {
		o.CloseGrace = DefaultCloseGrace
	}
	if o.MessageTimeout <= 0 {
		o.MessageTimeout = DefaultMessageTimeout
	}
	return o
}
