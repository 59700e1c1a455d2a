package tio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"iter"
	"slices"
	"sync"

	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// creditFrame is the refill every consumer grants: CALL_CREDIT of one batch,
// which never exceeds the initial window (§6.6).
var creditFrame = func() []byte {
	b, err := wire.AppendFrame(nil, wire.FrameCallCredit, wire.CodecJSON, 0, wire.AppendCredit(nil, CreditBatch))
	if err != nil {
		panic(err)
	}
	return b
}()

// call is Client.Call.
func (s *session) call(ctx context.Context, event uint32, req []byte) ([]byte, error) {
	ev, err := s.lookupSend(event, Returns, wire.Reliable)
	if err != nil {
		return nil, err
	}
	st, f, err := s.openCall(ctx, ev, req)
	if err != nil {
		return nil, err
	}
	// The watch and the reader are ready before the request is written:
	// the transport's goroutine the write wakes runs once this one blocks
	// reading the response, so whatever comes between delays the request.
	defer s.abandonOnCancel(ctx, st).end()
	r := wire.AcquireReader(st)
	defer r.Recycle()
	if err := s.writeRequest(ctx, st, ev, f, true); err != nil {
		return nil, err
	}
	var resp []byte
	got := false
	for {
		f, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				if got {
					return resp, nil
				}
				return nil, Errorf(wire.ProtocolError, "the responder of '%s' closed the call with no response (§3.2)", ev.Name)
			}
			return nil, s.callFailed(ctx, st, ev, err)
		}
		switch f.Type {
		case wire.FrameCallResponse:
			if f.Codec != ev.Result {
				abandon(st)
				return nil, Errorf(wire.ProtocolError, "%s", codecMismatch(ev, true, f.Codec))
			}
			if !f.Codec.Carries(f.Payload) {
				abandon(st)
				return nil, Errorf(wire.ProtocolError, "%s", notUTF8(ev, true))
			}
			// Any number of responses is accepted (§3.2); the first is
			// the answer.
			if !got {
				resp, got = bytes.Clone(f.Payload), true
			}
		case wire.FrameCallError:
			st.Stop(wire.ResetAborted) // terminal: nothing more to read (0 is never sent, §10.1)
			return nil, remoteCallError(f.Payload)
		default:
			abandon(st)
			return nil, Errorf(wire.ProtocolError, "%s frame in the response to '%s' (§5.2)", f.Type, ev.Name)
		}
	}
}

// stream is Client.Stream.
func (s *session) stream(ctx context.Context, event uint32, req []byte) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		ev, err := s.lookupSend(event, Yields, wire.Reliable)
		if err != nil {
			yield(nil, err)
			return
		}
		st, f, err := s.openCall(ctx, ev, req)
		if err != nil {
			yield(nil, err)
			return
		}
		defer s.abandonOnCancel(ctx, st).end()
		r := wire.AcquireReader(st)
		defer r.Recycle()
		if err := s.writeRequest(ctx, st, ev, f, false); err != nil {
			yield(nil, err)
			return
		}
		consumed := 0
		for {
			f, err := r.Next()
			if err != nil {
				if errors.Is(err, io.EOF) {
					_ = st.Close() // the sequence is complete
					return
				}
				yield(nil, s.callFailed(ctx, st, ev, err))
				return
			}
			switch f.Type {
			case wire.FrameCallResponse:
				if f.Codec != ev.Result {
					abandon(st)
					yield(nil, Errorf(wire.ProtocolError, "%s", codecMismatch(ev, true, f.Codec)))
					return
				}
				if !f.Codec.Carries(f.Payload) {
					abandon(st)
					yield(nil, Errorf(wire.ProtocolError, "%s", notUTF8(ev, true)))
					return
				}
				if !yield(f.Payload, nil) {
					abandon(st)
					return
				}
				if s.opts.noCredit {
					continue
				}
				if consumed++; consumed == CreditBatch {
					consumed = 0
					// A failed grant shows up as the next read's error.
					_, _ = st.Write(creditFrame)
				}
			case wire.FrameCallError:
				_ = st.Close()
				st.Stop(wire.ResetAborted) // terminal: nothing more to read (0 is never sent, §10.1)
				yield(nil, remoteCallError(f.Payload))
				return
			default:
				abandon(st)
				yield(nil, Errorf(wire.ProtocolError, "%s frame in the response to '%s' (§5.2)", f.Type, ev.Name))
				return
			}
		}
	}
}

// callWatch abandons the call streams in flight with one context once it
// ends (§8). A session has one, for the calls made with the context it
// watches: calls made with the same context, one after another or at once,
// register with it once, instead of a context.AfterFunc each (its two
// allocations, the context's lock taken twice). It stays registered
// between calls once a second call used its context, holding that context
// until another takes its place or the session ends; a context used for
// one call is let go of at that call's end, as a watch of the call's own
// would be, so that the cancel which usually follows starts nothing. A
// call with another context while calls with this one are in flight gets
// a cancelWatch of its own.
type callWatch struct {
	mu     sync.Mutex
	ctx    context.Context // watched while stop is set; the last one watched otherwise
	stop   func() bool
	calls  []transport.Stream // in flight with ctx
	reused bool               // a call after the first used ctx: registered between calls
	ended  bool               // the session ended: nothing is watched here any more
	hooked bool               // the session's end lets the watch go (sessionEnded)
	fire   func()             // abandonAll, bound once
}

// callWatcher is the session's callWatch, made by its first call.
func (s *session) callWatcher() *callWatch {
	if w := s.callWatch.Load(); w != nil {
		return w
	}
	s.callWatch.CompareAndSwap(nil, new(callWatch))
	return s.callWatch.Load()
}

// join watches st with ctx, unless the watch is busy with another context.
func (w *callWatch) join(s *session, ctx context.Context, st transport.Stream) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return false
	}
	same := sameContext(w.ctx, ctx)
	if w.stop != nil && same {
		w.reused = true
	} else {
		if w.stop != nil {
			if len(w.calls) > 0 {
				return false
			}
			w.stop()
		}
		if !w.hooked {
			w.hooked, w.fire = true, w.abandonAll
			context.AfterFunc(s.ctx, w.sessionEnded)
		}
		w.ctx, w.reused = ctx, same
		w.stop = context.AfterFunc(ctx, w.fire)
	}
	w.calls = append(w.calls, st)
	return true
}

// leave stops watching st, and lets the context go if no call is left
// and no second call used it.
func (w *callWatch) leave(st transport.Stream) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if i := slices.Index(w.calls, st); i >= 0 {
		last := len(w.calls) - 1
		w.calls[i], w.calls[last] = w.calls[last], nil
		w.calls = w.calls[:last]
	}
	if len(w.calls) == 0 && w.stop != nil && !w.reused {
		w.stop()
		w.stop = nil
	}
}

// abandonAll abandons every call in flight once the watched context ended.
// A registration let go of as its context ended finds the watch moved on
// (not set, or on a context that has not ended) and does nothing.
func (w *callWatch) abandonAll() {
	w.mu.Lock()
	if w.stop == nil || w.ctx.Err() == nil {
		w.mu.Unlock()
		return
	}
	calls := w.calls
	w.calls, w.stop = nil, nil
	w.mu.Unlock()
	for _, st := range calls {
		abandon(st)
	}
}

// sessionEnded lets the watched context go: the session's calls end with
// it, and the context would otherwise hold the session.
func (w *callWatch) sessionEnded() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ended = true
	if w.stop != nil {
		w.stop()
		w.stop = nil
	}
	w.ctx, w.calls = nil, nil
}

// sameContext reports whether a and b are the same context; one of a type
// that cannot be compared is never the same.
func sameContext(a, b context.Context) (same bool) {
	defer func() { _ = recover() }()
	return a == b
}

// cancelWatch abandons a call stream once the caller's context ends, for
// a call the session's callWatch does not take. It is recycled, with the
// function context.AfterFunc runs, when that never ran.
type cancelWatch struct {
	st   transport.Stream
	fire func() // w.abandon, bound once
	stop func() bool
}

var cancelWatches = sync.Pool{New: func() any {
	w := new(cancelWatch)
	w.fire = w.abandon
	return w
}}

func (w *cancelWatch) abandon() { abandon(w.st) }

// end stops the watch; one whose abandon ran or is running keeps its
// state.
func (w *cancelWatch) end() {
	if w == nil || !w.stop() {
		return
	}
	w.st, w.stop = nil, nil
	cancelWatches.Put(w)
}

// callCancel is one call's registration with a watch.
type callCancel struct {
	shared *callWatch
	own    *cancelWatch
	st     transport.Stream
}

// abandonOnCancel abandons st once ctx ends, until end is called; a context
// that never ends costs nothing.
func (s *session) abandonOnCancel(ctx context.Context, st transport.Stream) callCancel {
	if ctx.Done() == nil {
		return callCancel{}
	}
	if w := s.callWatcher(); w.join(s, ctx, st) {
		return callCancel{shared: w, st: st}
	}
	w := cancelWatches.Get().(*cancelWatch)
	w.st = st
	w.stop = context.AfterFunc(ctx, w.fire)
	return callCancel{own: w}
}

// end stops watching the call.
func (c callCancel) end() {
	if c.shared != nil {
		c.shared.leave(c.st)
		return
	}
	c.own.end()
}

// openCall opens a call stream for the request req, and returns it with
// the request's frame (pooled), which writeRequest writes.
func (s *session) openCall(ctx context.Context, ev *Event, req []byte) (transport.Stream, *frame, error) {
	if s.mapping == transport.WebSocket {
		return nil, nil, Errorf(wire.LaneUnavailable, "'%s' is a call, and the WebSocket mapping has no bidirectional streams (§3.3)", ev.Name)
	}
	f := getFrame()
	var err error
	if f.b, err = wire.AppendFrame(f.b[:0], wire.FrameCallRequest, ev.Payload, ev.ID, req); err != nil {
		f.release()
		return nil, nil, err
	}
	if err := s.waitHandshake(ctx); err != nil {
		f.release()
		return nil, nil, err
	}
	st, err := s.conn.OpenCall(ctx)
	if err != nil {
		f.release()
		return nil, nil, s.callFailed(ctx, nil, ev, err)
	}
	return st, f, nil
}

// writeRequest writes the request frame f, which it releases, on st; fin
// finishes the send side after it (returns, §6.2). A failure abandons st.
func (s *session) writeRequest(ctx context.Context, st transport.Stream, ev *Event, f *frame, fin bool) error {
	defer f.release()
	if _, err := st.Write(f.b); err != nil {
		var se *transport.StreamError
		if errors.As(err, &se) && se.Remote {
			// The responder stopped reading the request: its answer, such as
			// the CALL_ERROR of a request over its byte budget (§5.1), or
			// its reset is on the stream; the caller reads that.
			return nil
		}
		abandon(st)
		return s.callFailed(ctx, nil, ev, err)
	}
	if fin {
		_ = st.Close()
	}
	return nil
}

// callFailed names why a call ended without its outcome: the session's end
// (WT_SESSION_CLOSED, §11), the caller's cancellation (WT_ABORTED), or a
// fault of the responder (WT_PROTOCOL_ERROR: a reset, an oversized or
// malformed frame, a stream cut short, §5.1).
func (s *session) callFailed(ctx context.Context, st transport.Stream, ev *Event, err error) error {
	select {
	case <-s.conn.Done():
		return s.closedError()
	default:
	}
	if transportEnded(err) {
		return s.closedError()
	}
	if ctx.Err() != nil {
		return &Error{Code: wire.Aborted, Message: "the call to '" + ev.Name + "' was cancelled: " + ctx.Err().Error(), Remedy: "Nothing to do.", Err: ctx.Err()}
	}
	if st != nil {
		abandon(st)
	}
	var se *transport.StreamError
	if errors.As(err, &se) && se.Code == wire.ResetTooManyStreams {
		return Errorf(wire.TooManyStreams, "the peer refused the call to '%s': over 256 concurrent call streams (§10.1)", ev.Name)
	}
	if errors.As(err, &se) {
		return Errorf(wire.ProtocolError, "the responder of '%s' reset the call stream with code %d before completing it", ev.Name, se.Code)
	}
	return Errorf(wire.ProtocolError, "the call to '%s' failed: %w", ev.Name, err)
}

// remoteCallError is the *Error a CALL_ERROR carries (§6.4); unknown codes
// are kept as they are.
func remoteCallError(payload []byte) error {
	ce, err := wire.ParseCallError(payload)
	if err != nil {
		return err
	}
	return &Error{Code: ce.Code, Message: ce.Message, Remedy: ce.Code.Remedy()}
}
