package tio

import (
	"context"
	"errors"
	"sync"

	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Bounds on the CALL_RESPONSE frames a streaming call holds encoded but not
// yet written. The frame bound is the initial window (§6.6): each held frame
// has already spent its credit, so a conforming consumer never lets more
// than that be outstanding, and a peer granting more does not grow the
// buffer. The byte bound keeps large elements from piling up; a single
// element over it is held alone.
const (
	responseBatchFrames = InitialCredit
	responseBatchBytes  = 64 << 10
)

// responseBufPool recycles the batch buffers of streaming calls, so a call
// allocates none once the pool is warm.
var responseBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

func getResponseBuf() []byte { return (*responseBufPool.Get().(*[]byte))[:0] }

func putResponseBuf(b []byte) {
	if cap(b) > 0 && cap(b) <= 2*responseBatchBytes {
		b = b[:0]
		responseBufPool.Put(&b)
	}
}

// responseWriter coalesces a streaming call's CALL_RESPONSE frames into as
// few stream Writes as possible: one Write per QUIC stream frame costs a
// packet each, while the engine's encode costs nanoseconds.
//
// send appends each element's frame to pending once the element has credit,
// and spends one credit per frame held (§6.6: nothing is held that the
// window does not allow; one element per frame, §6.3). The call's writer goroutine, started at the first element,
// writes everything pending in one Write whenever it is idle, so a batch
// forms exactly while the previous Write is in progress. There is no timer:
// an element offered while the writer is idle is written at once, so a slow
// producer's latency is one goroutine wake-up, and a fast producer's
// elements are batched up to its credit. The handler's return flushes what
// remains before the outcome is written.
type responseWriter struct {
	st     transport.Stream
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	pending  []byte
	frames   int
	started  bool
	finished bool

	wake chan struct{} // cap 1: pending became non-empty, or finished was set
	room chan struct{} // cap 1: the writer took pending
	done chan struct{} // closed when the writer ends
}

func newResponseWriter(st transport.Stream, ctx context.Context, cancel context.CancelCauseFunc) *responseWriter {
	return &responseWriter{st: st, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), room: make(chan struct{}, 1), done: make(chan struct{})}
}

// errHandlerReturned is what add reports once finish was called.
var errHandlerReturned = errors.New("send was called after the call's handler returned")

// add encodes one element as a CALL_RESPONSE frame and hands it to the
// writer, waiting while the batch is at its bounds; it reports true once
// the frame is in, which spends one credit (the caller's). It fails with
// the frame's encoding error, with errHandlerReturned, or with false and
// no error once the call's context ended.
func (w *responseWriter) add(result wire.Codec, elem []byte) (bool, error) {
	need := wire.HeaderLen + len(elem)
	w.mu.Lock()
	for w.frames > 0 && (w.frames >= responseBatchFrames || len(w.pending)+need > responseBatchBytes) {
		w.mu.Unlock()
		select {
		case <-w.room:
		case <-w.ctx.Done():
			return false, nil
		}
		w.mu.Lock()
	}
	if w.finished {
		w.mu.Unlock()
		return false, errHandlerReturned
	}
	if w.pending == nil {
		w.pending = getResponseBuf()
	}
	var err error
	if w.pending, err = wire.AppendFrame(w.pending, wire.FrameCallResponse, result, 0, elem); err != nil {
		w.mu.Unlock()
		return false, err
	}
	w.frames++
	first := w.frames == 1
	if !w.started {
		w.started = true
		go w.run()
	}
	w.mu.Unlock()
	// A batch that already held frames has a wake-up pending, or a writer
	// that takes it whole before it waits again.
	if first {
		signal(w.wake)
	}
	return true, nil
}

// run is the call's writer: it writes pending batches until the handler has
// returned and everything is written, or the call ends.
func (w *responseWriter) run() {
	defer close(w.done)
	out := getResponseBuf()
	defer func() { putResponseBuf(out) }()
	for {
		w.mu.Lock()
		for w.frames == 0 && !w.finished {
			w.mu.Unlock()
			select {
			case <-w.wake:
			case <-w.ctx.Done():
				return
			}
			w.mu.Lock()
		}
		if w.frames == 0 {
			putResponseBuf(w.pending)
			w.pending = nil
			w.mu.Unlock()
			return
		}
		out, w.pending = w.pending, out[:0]
		w.frames = 0
		w.mu.Unlock()
		signal(w.room)
		if _, err := w.st.Write(out); err != nil {
			w.cancel(err)
			return
		}
	}
}

// finish is called once the handler returned: no element follows. It
// returns once every held element is written, or the call was cancelled
// (then the stream is abandoned).
func (w *responseWriter) finish() {
	w.mu.Lock()
	w.finished = true
	started := w.started
	w.mu.Unlock()
	if !started {
		return
	}
	signal(w.wake)
	select {
	case <-w.done:
	case <-w.ctx.Done():
		// A Write may be blocked under the transport's flow control for a
		// consumer that is gone: the reset ends it.
		abandon(w.st)
		<-w.done
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
