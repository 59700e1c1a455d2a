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
	// DefaultEmitStallTimeout is how long a send waits for a full emit
	// queue to be taken from before the queue's session is closed
	// WT_PEER_TOO_SLOW (§9). A peer reading at full speed empties its
	// queue within milliseconds; one that stopped reading never does.
	DefaultEmitStallTimeout = time.Second
	// DefaultMaxRequestBytes bounds the bytes a session's incoming call
	// requests hold, buffered or being handled: four 16 MiB requests (§5.1)
	// at once, with room for their buffers' growth.
	DefaultMaxRequestBytes = 64 << 20
	// DefaultMaxRequestBytesTotal bounds the same across every session of
	// a server.
	DefaultMaxRequestBytesTotal = 512 << 20
	// DefaultRequestTimeout is how long a call request may take to arrive
	// whole once its stream is read: a 16 MiB request at 1.1 Mbit/s.
	DefaultRequestTimeout = 120 * time.Second
	// MaxEmitFlushDelay bounds Options.EmitFlushDelay.
	MaxEmitFlushDelay = 100 * time.Millisecond
	// DatagramLaneMark is the emit queue depth under which queued unreliable
	// frames move onto the emit lane on the WebSocket mapping (§3.3).
	DatagramLaneMark = 32
)

// Options shape a session; the zero value is the spec's defaults.
type Options struct {
	// Clock drives every timer (handshake deadline, datagram TTL, sequence
	// state retention, probes, a call's request deadline and the 1 ms
	// after which a running returns handler's stream is watched for the
	// initiator's stop, §8); nil is the real clock.
	Clock clock.Clock
	// HandshakeTimeout is the handshake deadline; 0 means 5000 ms (§4.1).
	HandshakeTimeout time.Duration
	// MaxCalls bounds concurrent inbound call streams; 0 means 256 (§10.1).
	MaxCalls int
	// EmitStallTimeout is how long a send onto a full emit queue waits for
	// the writer to take from it before the session is closed
	// WT_PEER_TOO_SLOW (§9); 0 means DefaultEmitStallTimeout. The wait is
	// the push-back: a server's handler that emits waits, so the sender's
	// emit stream is not read meanwhile, and a burst from one peer slows
	// that peer instead of closing the peers that read.
	EmitStallTimeout time.Duration
	// EmitFlushDelay is how long after a frame is queued onto an empty
	// emit queue the writer is woken, so that frames queued meanwhile
	// share a Write and, on WebTransport, a packet: with a broadcast every
	// 10 ms, 20 ms sends each member about half the packets. It adds up to
	// that much latency to every emit. A packet's worth queued (1,200
	// bytes) wakes the writer at once, so a burst is not slowed, and the
	// §9 queue is unchanged: still 256 frames, still closed
	// WT_PEER_TOO_SLOW. 0, the default, wakes the writer at once; values
	// above MaxEmitFlushDelay are MaxEmitFlushDelay.
	EmitFlushDelay time.Duration
	// MaxRequestBytes bounds the bytes the session's incoming call
	// requests hold, from their first byte until their handler returns; a
	// request that would take more is answered CALL_ERROR
	// WT_PAYLOAD_TOO_LARGE and not read further. 0 means
	// DefaultMaxRequestBytes.
	MaxRequestBytes int
	// RequestTimeout is how long a call request may take to arrive whole;
	// a later one is answered CALL_ERROR WT_ABORTED. 0 means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
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
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.EmitStallTimeout <= 0 {
		o.EmitStallTimeout = DefaultEmitStallTimeout
	}
	o.EmitFlushDelay = min(max(o.EmitFlushDelay, 0), MaxEmitFlushDelay)
	return o
}
