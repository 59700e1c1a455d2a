package tio

import (
	"context"

	"github.com/transport-io/tiogen/runtime/wire"
)

// EmitLowWater is the emit queue depth at or below which WaitEmit returns:
// a single sender that waits before it emits can then queue at least
// EmitQueueFrames-EmitLowWater frames before the queue is full (§9).
const EmitLowWater = EmitQueueFrames / 2

// WaitEmit blocks while this side's emit queue holds more than
// EmitLowWater frames, and returns nil once it holds no more (at once when
// it already does). It is how a sender applies back-pressure without
// polling Stats: Emit waits only once the queue is full, up to
// EmitStallTimeout, after which the session closes WT_PEER_TOO_SLOW (§9),
// so a sender that emits in bursts waits here between them. The writer wakes it when it takes the queued frames,
// which it does as soon as its previous Write returned. It fails with
// WT_SESSION_CLOSED once the session ended, and with WT_ABORTED wrapping
// ctx's error when ctx ends first.
func (s *session) WaitEmit(ctx context.Context) error {
	for {
		drained := s.q.waitAbove(EmitLowWater)
		if drained == nil {
			if s.isEnded() {
				return s.closedError()
			}
			return nil
		}
		select {
		case <-drained:
		case <-s.ctx.Done():
			return s.closedError()
		case <-ctx.Done():
			return asError(wire.Aborted, ctx.Err())
		}
	}
}
