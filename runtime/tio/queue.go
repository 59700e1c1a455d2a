package tio

import (
	"sync"
	"time"
)

// frame is one encoded stream frame, immutable once queued. A frame built
// for one peer comes from a pool and returns to it once written; a room
// broadcast's frame is shared by every member's queue and left to the GC.
type frame struct {
	b      []byte
	pooled bool
}

// maxPooledFrame keeps one large emit from pinning its buffer in the pool.
const maxPooledFrame = 64 << 10

var framePool = sync.Pool{New: func() any { return &frame{b: make([]byte, 0, 512), pooled: true} }}

func getFrame() *frame { return framePool.Get().(*frame) }

func (f *frame) release() {
	if f.pooled && cap(f.b) <= maxPooledFrame {
		f.b = f.b[:0]
		framePool.Put(f)
	}
}

// emitQueue is a peer's bounded emit queue (§9): frames wait here for the
// writer. It never drops: a push onto a full queue fails, and the sender
// waits for the writer to take what it holds (see session.pushWithin); a
// queue that stays full closes its session WT_PEER_TOO_SLOW.
type emitQueue struct {
	mu     sync.Mutex
	ring   []*frame
	head   int
	n      int
	closed bool
	// wake holds one token when the writer has something to look at.
	wake chan struct{}
	// drained, when set, is closed by the next take or shutdown: senders
	// in WaitEmit and senders pushing back (§9) wait on it.
	drained chan struct{}
	// takes counts the writer's takes that found frames: a queue whose
	// count stands still for EmitStallTimeout is not being read.
	takes uint64
	// With a flush delay (Options.EmitFlushDelay), a frame pushed onto an
	// empty queue starts hold instead of waking the writer: the writer
	// wakes once, holdFor later, for whatever was queued meanwhile, or at
	// once when the queued bytes reach emitFlushEarly. hold is nil without
	// a delay.
	hold    *time.Timer
	holdFor time.Duration
	bytes   int // what the queued frames hold
}

// newEmitQueue makes a queue of capacity frames whose writer is woken at
// once (flushDelay 0) or after flushDelay (see hold).
func newEmitQueue(capacity int, flushDelay time.Duration) *emitQueue {
	q := &emitQueue{ring: make([]*frame, capacity), wake: make(chan struct{}, 1)}
	if flushDelay > 0 {
		q.hold, q.holdFor = time.NewTimer(flushDelay), flushDelay
		q.hold.Stop()
	}
	return q
}

// emitFlushEarly is a packet's worth of queued frame bytes: about what one
// QUIC packet carries. Reaching it ends a flush delay.
const emitFlushEarly = 1200

// held is the channel of the flush delay's timer, nil without a delay.
func (q *emitQueue) held() <-chan time.Time {
	if q.hold == nil {
		return nil
	}
	return q.hold.C
}

type pushResult uint8

const (
	pushed pushResult = iota
	pushFull
	pushClosed
)

func (q *emitQueue) push(f *frame) pushResult {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return pushClosed
	}
	if q.n == len(q.ring) {
		q.mu.Unlock()
		return pushFull
	}
	q.ring[(q.head+q.n)%len(q.ring)] = f
	q.n++
	before := q.bytes
	q.bytes += len(f.b)
	first := q.n == 1
	early := q.hold != nil && before < emitFlushEarly && q.bytes >= emitFlushEarly
	q.mu.Unlock()
	// A queue that already held frames has a wake-up pending (or its hold
	// running), or a writer that takes everything queued before it waits
	// again. With a delay, the first frame starts the hold, and a packet's
	// worth wakes the writer before it ends.
	switch {
	case early:
		q.signal()
	case first && q.hold != nil:
		q.hold.Reset(q.holdFor)
	case first:
		q.signal()
	}
	return pushed
}

func (q *emitQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take moves every queued frame onto dst, in order.
func (q *emitQueue) take(dst []*frame) []*frame {
	q.mu.Lock()
	if q.n > 0 {
		q.takes++
	}
	for ; q.n > 0; q.n-- {
		dst = append(dst, q.ring[q.head])
		q.ring[q.head] = nil
		q.head = (q.head + 1) % len(q.ring)
	}
	q.bytes = 0
	q.wakeWaitersLocked()
	q.mu.Unlock()
	return dst
}

// waitAbove returns a channel closed once the queue is next emptied by the
// writer, or nil when the queue holds at most mark frames or is shut down.
func (q *emitQueue) waitAbove(mark int) <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n <= mark || q.closed {
		return nil
	}
	if q.drained == nil {
		q.drained = make(chan struct{})
	}
	return q.drained
}

func (q *emitQueue) wakeWaitersLocked() {
	if q.drained != nil {
		close(q.drained)
		q.drained = nil
	}
}

// taken is the count of the writer's takes that found frames.
func (q *emitQueue) taken() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.takes
}

// depth is the number of frames waiting.
func (q *emitQueue) depth() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// shutdown refuses further pushes and releases what waits.
func (q *emitQueue) shutdown() {
	q.mu.Lock()
	q.closed = true
	if q.hold != nil {
		q.hold.Stop()
	}
	for ; q.n > 0; q.n-- {
		q.ring[q.head].release()
		q.ring[q.head] = nil
		q.head = (q.head + 1) % len(q.ring)
	}
	q.bytes = 0
	q.wakeWaitersLocked()
	q.mu.Unlock()
}
