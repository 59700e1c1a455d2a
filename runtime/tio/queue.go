package tio

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/transport-io/tiogen/runtime/wire"
)

// frame is one encoded stream frame, immutable once queued. A frame built
// for one peer comes from a pool and returns to it once written; a room
// broadcast's frame is shared by every member's queue and left to the GC.
type frame struct {
	b      []byte
	pooled bool
	// extra counts the frames after the first that b holds: consecutive
	// emits of one session share an entry (emitQueue.pushEmit), open while
	// it is the queue's last entry.
	extra int
	open  bool
}

// frames is the count of frames f holds.
func (f *frame) frames() int { return 1 + f.extra }

// maxPooledFrame keeps one large emit from pinning its buffer in the pool.
const maxPooledFrame = 64 << 10

var framePool = sync.Pool{New: func() any { return &frame{b: make([]byte, 0, 512), pooled: true} }}

func getFrame() *frame { return framePool.Get().(*frame) }

func (f *frame) release() {
	if f.pooled && cap(f.b) <= maxPooledFrame {
		f.b, f.extra, f.open = f.b[:0], 0, false
		framePool.Put(f)
	}
}

// emitQueue is a peer's bounded emit queue (§9): frames wait here for the
// writer. It never drops: a push onto a full queue fails, and the sender
// waits for the writer to take what it holds (see session.pushWithin); a
// queue that stays full closes its session WT_PEER_TOO_SLOW.
type emitQueue struct {
	mu sync.Mutex
	// ring, of capacity frames, is allocated by the first push: an idle
	// session holds none.
	ring     []*frame
	capacity int
	head     int
	n        int // entries in ring
	frames   int // frames in those entries: the §9 bound counts these
	closed   bool
	// parked says no writer runs (it ended its run on an empty queue, see
	// session.writeRun): the push that finds the queue so starts one with
	// writer.startWriter, under mu, so an idle session holds no writer
	// goroutine. A queue without a writer (tests of the queue alone) never
	// parks. Beside closed, so the queue takes 128 B.
	parked bool
	// lingered says the writer's linger timer expired: set with a token on
	// wake (lingerFired), taken by the writer (session.writeRun).
	lingered atomic.Bool
	// wake holds one token when the writer has something to look at. It
	// is made, under mu, by the first push or kick, or by a writer's run
	// (wakeLocked), and never replaced: a session that never queued
	// anything holds none.
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
	// writer is the session whose writer the queue starts, set once its
	// handshake is written: the session itself rather than a method value,
	// which would cost every session a closure.
	writer *session
}

// newEmitQueue makes a queue of capacity frames whose writer is woken at
// once (flushDelay 0) or after flushDelay (see hold).
func newEmitQueue(capacity int, flushDelay time.Duration) *emitQueue {
	q := &emitQueue{capacity: capacity}
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

// grewLocked counts n more queued bytes and says whether they end a flush
// delay early: the queue just reached a packet's worth.
func (q *emitQueue) grewLocked(n int) (early bool) {
	before := q.bytes
	q.bytes += n
	return q.hold != nil && before < emitFlushEarly && q.bytes >= emitFlushEarly
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
	if q.ring == nil {
		q.ring = make([]*frame, q.capacity)
		q.wakeLocked()
	}
	if q.frames == q.capacity {
		q.mu.Unlock()
		return pushFull
	}
	q.ring[(q.head+q.n)%len(q.ring)] = f
	q.n++
	q.frames++
	first := q.frames == 1
	early := q.grewLocked(len(f.b))
	q.unparkLocked()
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

// coalesceAt bounds the bytes of one coalesced entry (pushEmit).
const coalesceAt = 16 << 10

// pushEmit queues an EMIT frame of this session's own: appended to the
// queue's last entry while that entry is open and under coalesceAt bytes,
// so a run of emits costs one entry, one pooled buffer and one copy into
// the writer's Write per coalesceAt bytes rather than per frame. The
// frame counts towards the §9 bound as one frame all the same. An encoding
// error leaves the queue as it was; so does a full or shut-down queue, for
// the caller's push-back (session.pushBack).
func (q *emitQueue) pushEmit(c wire.Codec, event uint32, payload []byte) (pushResult, error) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return pushClosed, nil
	}
	if q.frames == q.capacity {
		q.mu.Unlock()
		return pushFull, nil
	}
	if q.n > 0 {
		if last := q.ring[(q.head+q.n-1)%len(q.ring)]; last.open && len(last.b)+wire.HeaderLen+len(payload) <= coalesceAt {
			b, err := wire.AppendFrame(last.b, wire.FrameEmit, c, event, payload)
			early := false
			if err == nil {
				early = q.grewLocked(len(b) - len(last.b))
				last.b = b
				last.extra++
				q.frames++
			}
			q.mu.Unlock()
			if early {
				q.signal()
			}
			return pushed, err
		}
	}
	q.mu.Unlock()
	f := getFrame()
	var err error
	if f.b, err = wire.AppendFrame(f.b[:0], wire.FrameEmit, c, event, payload); err != nil {
		f.release()
		return pushFull, err
	}
	f.open = true
	res := q.push(f)
	if res != pushed {
		f.release()
	}
	return res, nil
}

// unparkLocked starts a writer for what was just queued when none runs.
// Only a push onto an empty queue finds it parked.
func (q *emitQueue) unparkLocked() {
	if q.parked && !q.closed {
		q.parked = false
		q.writer.startWriter()
	}
}

// kick starts a writer, or wakes the one that runs, for what the writer
// moves besides the queue's frames (the WebSocket mapping's datagram ring).
func (q *emitQueue) kick() {
	q.mu.Lock()
	q.wakeLocked()
	q.unparkLocked()
	q.mu.Unlock()
	q.signal()
}

// park ends the writer's run if nothing is queued: the next push starts
// another. False when frames wait, or when the queue has no writer.
func (q *emitQueue) park() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n > 0 || q.writer == nil {
		return false
	}
	q.parked = true
	return true
}

// resume takes back a park whose writer has not been started again: true
// when the caller goes on as the writer.
func (q *emitQueue) resume() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.parked || q.closed {
		return false
	}
	q.parked = false
	return true
}

// wakeLocked returns the writer's wake-up channel, making it if no push or
// kick has yet; q.mu is held. signal reads it without the lock, always
// after its caller held mu since it was made.
func (q *emitQueue) wakeLocked() chan struct{} {
	if q.wake == nil {
		q.wake = make(chan struct{}, 1)
	}
	return q.wake
}

// wakeChan is wakeLocked for a writer's run, which takes it once.
func (q *emitQueue) wakeChan() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.wakeLocked()
}

// lingerFired is the writer's linger timer expiring: it wakes the writer,
// which parks if it wrote nothing since the last expiry.
func (q *emitQueue) lingerFired() {
	q.lingered.Store(true)
	q.mu.Lock() // signal reads wake after holding mu since it was made
	q.mu.Unlock()
	q.signal()
}

func (q *emitQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take moves every queued frame onto dst, in order; open is false once
// the queue is shut down, which ends its writer (session.writeQueued).
func (q *emitQueue) take(dst []*frame) (_ []*frame, open bool) {
	q.mu.Lock()
	if q.n > 0 {
		q.takes++
	}
	q.frames, q.bytes = 0, 0
	for ; q.n > 0; q.n-- {
		dst = append(dst, q.ring[q.head])
		q.ring[q.head] = nil
		q.head = (q.head + 1) % len(q.ring)
	}
	q.wakeWaitersLocked()
	open = !q.closed
	q.mu.Unlock()
	return dst, open
}

// waitAbove returns a channel closed once the queue is next emptied by the
// writer, or nil when the queue holds at most mark frames or is shut down.
func (q *emitQueue) waitAbove(mark int) <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.frames <= mark || q.closed {
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
	return q.frames
}

// shutdown refuses further pushes and releases what waits.
func (q *emitQueue) shutdown() {
	q.mu.Lock()
	q.closed = true
	if q.hold != nil {
		q.hold.Stop()
	}
	q.frames, q.bytes = 0, 0
	for ; q.n > 0; q.n-- {
		q.ring[q.head].release()
		q.ring[q.head] = nil
		q.head = (q.head + 1) % len(q.ring)
	}
	q.wakeWaitersLocked()
	q.mu.Unlock()
	q.signal() // a writer waiting for frames ends (its take finds the queue shut)
}
