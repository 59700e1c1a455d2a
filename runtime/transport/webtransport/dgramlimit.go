package webtransport

import (
	"sync/atomic"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
)

// DatagramLimitRefresh bounds how stale MaxDatagramSize may be. Asking
// quic-go for its limit means offering it an oversized datagram and reading
// the limit off the refusal, which cost more than the rest of an engine
// datagram send; the answer only moves with path MTU discovery, so it is
// asked again at most this often, and at once whenever quic-go refuses a
// send for size (the refusal carries the current limit). §7.4's "query the
// transport at send time" therefore holds to within this bound: a limit
// that grew is used at most this late (the sender refuses what would now
// fit, conservatively), and one that shrank is learnt at the first refused
// send.
const DatagramLimitRefresh = 250 * time.Millisecond

// datagramLimit caches the transport's maximum datagram size. A cached size
// is dropped by a timer DatagramLimitRefresh after it was learnt, so a read
// costs one atomic load and a session that sends no datagrams runs no
// timer.
type datagramLimit struct {
	clk  clock.Clock
	size atomic.Int64 // bytes; 0 when nothing is cached
}

// get returns the cached size, or asks probe. A probe that reports no
// limit (0) is not cached.
func (l *datagramLimit) get(probe func() int) int {
	if n := l.size.Load(); n > 0 {
		return int(n)
	}
	n := probe()
	if n > 0 && l.size.CompareAndSwap(0, int64(n)) {
		l.expire()
	}
	return n
}

// set records a size learnt now.
func (l *datagramLimit) set(n int) {
	if n > 0 && l.size.Swap(int64(n)) == 0 {
		l.expire()
	}
}

// expire drops the size learnt now after the refresh bound. It runs for
// each change from nothing cached to a size, so exactly one timer is
// pending while a size is cached; a later set keeps that timer, which only
// makes the new size's life shorter.
func (l *datagramLimit) expire() {
	l.clk.AfterFunc(DatagramLimitRefresh, func() { l.size.Store(0) })
}
