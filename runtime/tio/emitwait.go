package tio

import (
	"context"

	"github.com/transport-io/tiogen/runtime/wire"
)

// EmitLowWater is the emit queue depth at or below which WaitEmit returns:
// a single sender that waits before it emits can then queue at least
// EmitQueueFrames-EmitLowWater frames before the queue is full (§9).
const EmitLowWater = EmitQueueFrames / 2

// waitEmit is Client.WaitEmit and Peer.WaitEmit.
func (s *session) waitEmit(ctx context.Context) error {
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
