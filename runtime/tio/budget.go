package tio

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/transport-io/tiogen/runtime/metrics"
	"github.com/transport-io/tiogen/runtime/wire"
)

// byteBudget bounds bytes held by many goroutines at once.
type byteBudget struct {
	held atomic.Int64
	max  int64
}

func newByteBudget(max int) *byteBudget { return &byteBudget{max: int64(max)} }

func (b *byteBudget) take(n int) bool {
	if b.held.Add(int64(n)) > b.max {
		b.held.Add(-int64(n))
		return false
	}
	return true
}

func (b *byteBudget) give(n int) { b.held.Add(-int64(n)) }

// errOverBudget marks a request refused for the bytes it would hold, which
// is answered CALL_ERROR rather than abandoned like an oversized frame.
var errOverBudget = errors.New("over the request byte budget")

// requestBudget is a session's wire.Budget for its incoming call requests:
// the session's bound and, on a server, the bound across its sessions.
type requestBudget struct {
	session *byteBudget
	server  *byteBudget // nil on a client
	metrics *metrics.Metrics
}

func (b *requestBudget) Take(n int) error {
	if !b.session.take(n) {
		b.metrics.Hit(metrics.LimitRequestBytes)
		return &wire.Error{Code: wire.PayloadTooLarge, Err: errOverBudget, Remedy: "Send fewer or smaller requests at once.",
			Message: fmt.Sprintf("the call requests of this session would hold more than %d bytes (§5.1)", b.session.max)}
	}
	if b.server != nil && !b.server.take(n) {
		b.session.give(n)
		b.metrics.Hit(metrics.LimitRequestBytesTotal)
		return &wire.Error{Code: wire.PayloadTooLarge, Err: errOverBudget, Remedy: "Retry later, or send smaller requests.",
			Message: fmt.Sprintf("the call requests of all sessions would hold more than %d bytes (§5.1)", b.server.max)}
	}
	return nil
}

func (b *requestBudget) Give(n int) {
	b.session.give(n)
	if b.server != nil {
		b.server.give(n)
	}
}
