package tio

import (
	"context"
	"iter"
)

// The public methods of the two sides of a session. Both run on the same
// engine (session), but each side has only what it can do: a server's Peer
// answers calls and has no Call or Stream; a Client makes them. They are
// declared here, not promoted from the engine, so that the engine's surface
// is never the API.

// Emit sends an event on the emit lane (§6.1): payload is the encoded
// payload, in the codec the contract declares. It queues the frame and
// returns. A full queue (§9) makes it wait for the writer to take from it;
// a queue nobody takes from for EmitStallTimeout closes the session
// WT_PEER_TOO_SLOW (§9).
func (c *Client) Emit(event uint32, payload []byte) error { return c.emit(event, payload) }

// SendDatagram sends an unreliable event (§7): over WebTransport as a
// datagram, over the WebSocket mapping as a DATAGRAM frame on the emit lane
// (§3.3). It queues it in the send ring (§9) and returns; a payload over the
// size ceiling is refused with WT_DATAGRAM_TOO_LARGE and nothing is sent
// (§7.4).
func (c *Client) SendDatagram(event uint32, payload []byte) error {
	return c.sendDatagram(event, payload)
}

// WaitEmit blocks while this side's emit queue holds more than
// EmitLowWater frames, and returns nil once it holds no more (at once when
// it already does). It is how a sender applies back-pressure without
// polling Stats: Emit waits only once the queue is full, up to
// EmitStallTimeout, after which the session closes WT_PEER_TOO_SLOW (§9),
// so a sender that emits in bursts waits here between them. The writer wakes it when it takes the queued frames,
// which it does as soon as its previous Write returned. It fails with
// WT_SESSION_CLOSED once the session ended, and with WT_ABORTED wrapping
// ctx's error when ctx ends first.
func (c *Client) WaitEmit(ctx context.Context) error { return c.waitEmit(ctx) }

// Call makes a returns call (§3.2): it sends the request, then FIN, and
// waits for the response. Cancelling ctx resets the stream WT_ABORTED (§8)
// and returns an *Error with code WT_ABORTED wrapping ctx's error. A
// CALL_ERROR comes back as an *Error with the responder's code and message
// (§6.4). On the WebSocket mapping it fails at once with
// WT_LANE_UNAVAILABLE, and the session stays up (§3.3). The response is
// the caller's own.
func (c *Client) Call(ctx context.Context, event uint32, req []byte) ([]byte, error) {
	return c.call(ctx, event, req)
}

// Stream makes a yields call (§3.2). The sequence yields each element, and
// an error last if the call fails: a CALL_ERROR after elements is yielded
// after them (§6.4). The element slice is valid until the loop body
// returns. Consuming elements grants credit in batches of 16 (§6.6);
// breaking out of the loop or cancelling ctx resets the stream WT_ABORTED
// (§8). On the WebSocket mapping it yields WT_LANE_UNAVAILABLE (§3.3).
func (c *Client) Stream(ctx context.Context, event uint32, req []byte) iter.Seq2[[]byte, error] {
	return c.stream(ctx, event, req)
}

// Close ends the session with a §10.2 code (WT_NO_ERROR for a normal close)
// and a reason of at most 1024 bytes. The session is over at once: frames
// still queued are not sent (§3.3). Close returns once the close has been
// delivered, or the transport's close grace (2 s by default) passed: a
// process may exit as soon as Close returns and the peer still learns the
// code and reason. A session closed right after it was established first
// finishes writing its handshake (§4.1), so the peer knows whom the close
// is from. Closing a closed session waits the same way and does nothing
// more.
func (c *Client) Close(code Code, reason string) error { return c.closeSession(code, reason) }

// Done is closed once the session has ended.
func (c *Client) Done() <-chan struct{} { return c.ended.Done() }

// Err reports how the session ended: the close code and reason, or
// WT_SESSION_CLOSED for a lost connection, which carries no code (§11); it
// wraps a *SessionEnd. It is nil while the session runs.
func (c *Client) Err() error { return c.endErr() }

// Features are the feature tokens both peers support (§4.2), known once the
// handshake is accepted.
func (c *Client) Features() []string { return c.agreedFeatures() }

// Stats returns the session's counters now.
func (c *Client) Stats() Stats { return c.snapshot() }

// Emit sends an event to this peer on the emit lane (§6.1), as
// [Client.Emit] does: a full queue makes it wait, and one nobody takes from
// for EmitStallTimeout closes the session WT_PEER_TOO_SLOW (§9).
func (p *Peer) Emit(event uint32, payload []byte) error { return p.emit(event, payload) }

// SendDatagram sends an unreliable event to this peer (§7), stamped with
// the server's origin, as [Client.SendDatagram] does.
func (p *Peer) SendDatagram(event uint32, payload []byte) error {
	return p.sendDatagram(event, payload)
}

// WaitEmit blocks while the emit queue to this peer holds more than
// EmitLowWater frames, as [Client.WaitEmit] does.
func (p *Peer) WaitEmit(ctx context.Context) error { return p.waitEmit(ctx) }

// Close ends the peer's session with a §10.2 code and a reason of at most
// 1024 bytes, as [Client.Close] does.
func (p *Peer) Close(code Code, reason string) error { return p.closeSession(code, reason) }

// Done is closed once the peer's session has ended.
func (p *Peer) Done() <-chan struct{} { return p.ended.Done() }

// Err reports how the peer's session ended, as [Client.Err] does; nil while
// it runs.
func (p *Peer) Err() error { return p.endErr() }

// Features are the feature tokens both sides support (§4.2), known once the
// handshake is accepted.
func (p *Peer) Features() []string { return p.agreedFeatures() }

// Stats returns the peer's session counters now.
func (p *Peer) Stats() Stats { return p.snapshot() }
