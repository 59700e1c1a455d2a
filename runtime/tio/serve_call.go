package tio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/transport-io/tiogen/runtime/metrics"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// errInitiatorFinished is the cancellation cause of a streaming call whose
// initiator sent FIN: no further credit is coming (§6.2).
var errInitiatorFinished = errors.New("the initiator finished its side of a streaming call, which cancels it (§6.2)")

// errCallerStopped is the cancellation cause of a call whose initiator
// stopped reading its response (§8).
var errCallerStopped = errors.New("the initiator stopped reading the call's response, which cancels it (§8)")

// errCallAnswered ends a call's context once its outcome is written.
var errCallAnswered = errors.New("the call was answered")

// acceptCalls accepts the peer's next call stream and answers it on this
// goroutine, once it has started the goroutine that accepts the one after:
// the call runs where its stream arrived, with no hand-off to another
// goroutine between the request and its handler. Past MaxCalls concurrent
// calls, a stream is reset WT_TOO_MANY_STREAMS without being read, and the
// session stays open (§10.1).
func (s *session) acceptCalls() {
	defer s.wg.Done()
	for {
		st, err := s.conn.AcceptCall(s.ctx)
		if err != nil {
			s.stopCallTimers()
			return
		}
		// Only the accepting goroutine increments, and the next one starts
		// after it did, so the check cannot be overtaken.
		a := s.answerState()
		if int(a.active.Load()) >= s.opts.MaxCalls {
			s.metrics.Hit(metrics.LimitMaxCalls)
			st.Stop(wire.ResetTooManyStreams)
			st.Reset(wire.ResetTooManyStreams)
			continue
		}
		a.active.Add(1)
		s.wg.Add(1)
		go s.acceptCalls()
		s.serveCall(st)
		return
	}
}

// answering is the state of the calls a session answers, made by the
// first call it accepts: a session that answers none, as a client answers
// none from a conforming server, holds none of it.
type answering struct {
	// active counts the calls being answered, at most MaxCalls (§10.1).
	active atomic.Int32
	// open counts answered calls still waiting for the initiator to
	// finish its side (serveCall); at most MaxCalls wait.
	open atomic.Int32
	// timers runs the deadlines of the calls answered.
	timers callTimers
	// requests bounds the bytes incoming call requests hold (§5.1):
	// budget, the session's, and on a server the bound across its
	// sessions.
	requests requestBudget
	budget   byteBudget
}

// answerState is the session's answering state, made by the first call
// accepted. Only the accepting goroutine calls it, and the next acceptor
// starts after it returned, so two are never made; the other goroutines
// that read it (the call's, its timer's) start after it was stored.
func (s *session) answerState() *answering {
	if a := s.answers.Load(); a != nil {
		return a
	}
	a := &answering{budget: byteBudget{max: int64(s.opts.MaxRequestBytes)}}
	a.requests = requestBudget{session: &a.budget, metrics: s.metrics}
	if p, ok := s.owner.(*Peer); ok {
		a.requests.server = p.srv.requestBytes
	}
	s.answers.Store(a)
	return a
}

// inboundCall is one call this side answers. Its state is recycled across
// calls (getInboundCall, recycle), and its deadlines are the session's
// callTimers, so a returns call allocates neither.
type inboundCall struct {
	s      *session
	st     transport.Stream
	ev     *Event
	ctx    context.Context
	cancel context.CancelCauseFunc
	// released is set once the call's slot is given back (release).
	released atomic.Bool
	// late is set once the request missed RequestTimeout.
	late atomic.Bool
	// credit is what the responder may still send (§6.6); creditIn wakes a
	// sender waiting at zero. sendMu makes send safe to call from several
	// goroutines: one element, one whole frame, one credit each.
	credit   atomic.Int64
	creditIn chan struct{}
	sendMu   sync.Mutex
	// out coalesces a streaming call's elements into few Writes.
	out *responseWriter

	// prev, next and queue place the call in one of the session's
	// callTimers queues while a deadline of its runs, due then; answered
	// and unwatch (the AfterStopped registration's cancel) are the stop
	// watch's. All of them are under callTimers.mu.
	prev, next *inboundCall
	queue      *callQueue
	due        time.Time
	answered   bool
	unwatch    func() bool
	// stopWatched says the stop watch was queued (serveCall's own).
	stopWatched bool

	// r reads the request, and charged is what the request holds of the
	// session's budget, until letGo; watched says watch reads r too.
	r       *wire.Reader
	charged int
	watched bool
}

// inboundCalls recycles inboundCall states.
var inboundCalls = sync.Pool{New: func() any { return new(inboundCall) }}

// getInboundCall returns a call state for st, recycled when one is free.
func (s *session) getInboundCall(st transport.Stream) *inboundCall {
	c := inboundCalls.Get().(*inboundCall)
	c.s, c.st = s, st
	return c
}

// recycle returns the state for the next call. A yields handler may still
// hold send, which reaches the state, so a yields call's is left to the
// collector.
func (c *inboundCall) recycle() {
	if c.ev != nil && c.ev.Kind != Returns {
		return
	}
	*c = inboundCall{}
	inboundCalls.Put(c)
}

// release gives the call's slot back, once the outcome is decided: before
// it is written, so an initiator that waits for its answer before its next
// call can never find this side still counting the previous one (§10.1).
func (c *inboundCall) release() {
	if c.released.CompareAndSwap(false, true) {
		c.s.answers.Load().active.Add(-1)
	}
}

// serveCall answers one call on the goroutine that accepted it.
// A returns request that arrived with the initiator's FIN, which a
// conforming initiator sends with it, leaves nothing to read: the stream's
// AfterStopped is then all that can cancel the call (§8), registered once
// the handler has run for stopWatchDelay, and no second goroutine watches
// it. Otherwise watch reads the initiator's side while the handler runs.
func (s *session) serveCall(st transport.Stream) {
	c := s.getInboundCall(st)
	defer c.recycle() // last: after everything below let go of it
	defer c.release()
	// A call may arrive before this side has read the peer's handshake,
	// which travels on another stream: it waits for it, bounded by the
	// handshake deadline, rather than failing a well-behaved peer.
	if s.waitHandshake(s.ctx) != nil {
		abandon(st)
		return
	}
	r := wire.AcquireReader(st)
	a := s.answers.Load()
	r.Limit(&a.requests)
	c.r = r
	// Let go last: after watch, the only other user of r, has returned.
	watching := false
	var watched chan struct{}
	defer func() {
		if watching {
			<-watched
		}
		c.letGo(true)
	}()
	// One clock read starts both the request's deadline and, for a
	// returns handler, its stop watch's delay (requestDone): the watch is
	// registered no later than stopWatchDelay after the handler began.
	now := s.opts.Clock.Now()
	f, err := c.readRequest(r, now)
	if err != nil {
		s.requestDone(c, false, time.Time{})
		c.release()
		if (wire.CodeOf(err) != "" && wire.CodeOf(err) != wire.PayloadTooLarge) || errors.Is(err, errOverBudget) {
			// The framing is lost, or the rest is not wanted: answer, and
			// read nothing more.
			s.traffic.Out(metrics.LaneCall, writeCallError(st, callErrorOf(err)))
			st.Stop(wire.ResetAborted)
			return
		}
		// §5.1: an oversized request abandons the stream; the initiator's
		// call rejects WT_PROTOCOL_ERROR because no response arrives. A
		// stream reset or cut short, or the session's end, leaves nothing
		// to answer.
		abandon(st)
		return
	}
	ev, fail := s.checkRequest(f)
	if fail != nil {
		s.requestDone(c, false, time.Time{})
		c.release()
		s.traffic.Out(metrics.LaneCall, writeCallError(st, *fail))
		drain(r)
		return
	}
	// The request stays charged to the budget until its handler returned
	// (settle).
	var req []byte
	req, c.charged = r.Keep(f.Payload)
	c.ev = ev
	c.credit.Store(InitialCredit)
	c.ctx, c.cancel = context.WithCancelCause(s.ctx)
	if ev.Kind == Yields {
		c.creditIn = make(chan struct{}, 1)
		c.out = newResponseWriter(st, c.ctx, c.cancel)
	}
	// tio_call_duration_seconds counts from the whole request; without
	// metrics the clock is not read again.
	began := now
	if s.callMetrics(ev) != nil {
		began = s.opts.Clock.Now()
	}
	if ev.Kind == Returns && r.Ended() {
		s.requestDone(c, true, now)
		c.answer(req, began)
		return
	}
	// The stream ends once the initiator has finished its side too, which
	// a conforming one does at once (FIN after a returns request, FIN or
	// reset once a stream ends). One that never does holds a stream of the
	// transport's, bounded by its stream limit, until the session ends.
	s.requestDone(c, false, began)
	watching, watched = true, make(chan struct{})
	c.watched = true
	go c.watch(r, watched)
	c.answer(req, began)
	// Answered, the call no longer holds a slot of MaxCalls, but watch
	// still waits for the initiator's FIN. One that withholds it, or resets
	// with WT_SESSION_GONE (a read webtransport-go holds until the session
	// ends), would keep this goroutine and watch's for the session's life:
	// past MaxCalls such calls, reading stops at once (§8).
	if a.open.Add(1) > int32(s.opts.MaxCalls) {
		st.Stop(wire.ResetAborted)
	}
	<-watched
	watching = false
	a.open.Add(-1)
}

// answer runs the call from began, when its request was whole, and counts
// its outcome; its context has ended by then (run).
func (c *inboundCall) answer(req []byte, began time.Time) {
	outcome := c.run(req)
	if m := c.s.callMetrics(c.ev); m != nil {
		m.Done(outcome, c.s.opts.Clock.Now().Sub(began))
	}
}

// settle ends the call's context and lets go of its request once the
// handler returned and the call was not cancelled, before the outcome is
// written: the transport's goroutine that write wakes runs once this one
// blocks or ends, so after the write nothing is left but the FIN.
func (c *inboundCall) settle() {
	c.cancel(errCallAnswered)
	c.letGo(!c.watched)
}

// letGo gives the request's bytes back to the budget and, with reader,
// recycles the reader; each happens once.
func (c *inboundCall) letGo(reader bool) {
	if c.charged != 0 {
		c.s.answers.Load().requests.Give(c.charged)
		c.charged = 0
	}
	if reader && c.r != nil {
		c.r.Recycle()
		c.r = nil
	}
}

// cancelWith is a function cancelling with cause; it holds the cancel
// function itself, not the call's state, which is recycled.
func cancelWith(cancel context.CancelCauseFunc, cause error) func() {
	return func() { cancel(cause) }
}

// readRequest reads a call stream's first frame within RequestTimeout of
// now: a
// request dribbled on for ever would hold its stream and bytes for ever.
// Past the deadline the stream is stopped and the error is WT_ABORTED,
// which the responder answers as a CALL_ERROR (§6.4, §10.1: it abandons
// the work).
func (c *inboundCall) readRequest(r *wire.Reader, now time.Time) (wire.Frame, error) {
	c.s.awaitRequest(c, now)
	f, err := r.Next()
	if err == nil {
		c.s.traffic.In(metrics.LaneCall, frameLen(f))
	}
	if err != nil && c.late.Load() {
		c.s.metrics.Hit(metrics.LimitRequestTimeout)
		return f, wire.Errorf(wire.Aborted, "the call request did not arrive whole within %d ms; this side abandoned it", c.s.opts.RequestTimeout.Milliseconds())
	}
	return f, err
}

// checkRequest applies the per-message rules to a CALL_REQUEST (§5.2–§5.4);
// a failure is the CALL_ERROR to answer.
func (s *session) checkRequest(f wire.Frame) (*Event, *wire.CallError) {
	if f.Type != wire.FrameCallRequest {
		return nil, &wire.CallError{Code: wire.ProtocolError, Message: fmt.Sprintf("the first frame of a call stream is %s, not CALL_REQUEST (§5.2)", f.Type)}
	}
	ev, ok := s.contract.Event(f.EventID)
	if !ok {
		return nil, &wire.CallError{Code: wire.UnknownEvent, Message: fmt.Sprintf("event id %d is not in contract %s (§5.4)", f.EventID, s.contract.name)}
	}
	if ev.Kind == Emit {
		return nil, &wire.CallError{Code: wire.ProtocolError, Message: fmt.Sprintf("event '%s' is an emit, not a call (§3.2)", ev.Name)}
	}
	if f.Codec != ev.Payload {
		return nil, &wire.CallError{Code: wire.ProtocolError, Message: codecMismatch(ev, false, f.Codec)}
	}
	if !f.Codec.Carries(f.Payload) {
		return nil, &wire.CallError{Code: wire.ProtocolError, Message: notUTF8(ev, false)}
	}
	if !ev.sentBy(s.role.peer()) {
		s.counted().directionDropped.Add(1)
		return nil, &wire.CallError{Code: wire.ProtocolError, Message: fmt.Sprintf("event '%s' is a call, which only the client makes", ev.Name)}
	}
	return ev, nil
}

// watch reads the initiator's side after the request: CALL_CREDIT on a
// streaming call (§6.6), then FIN, which cancels a streaming call (§6.2);
// a reset cancels any call (§8).
func (c *inboundCall) watch(r *wire.Reader, done chan<- struct{}) {
	defer close(done)
	for {
		f, err := r.Next()
		if err != nil {
			switch {
			case !errors.Is(err, io.EOF):
				c.cancel(err)
			case c.ev.Kind == Yields:
				c.cancel(errInitiatorFinished)
			default:
				c.awaitStop()
			}
			return
		}
		c.s.traffic.In(metrics.LaneCall, frameLen(f))
		if f.Type != wire.FrameCallCredit || c.ev.Kind != Yields {
			c.cancel(wire.Errorf(wire.ProtocolError, "%s frame from the initiator after CALL_REQUEST (§5.2)", f.Type))
			return
		}
		if n, ok := wire.ParseCredit(f.Payload); ok {
			c.credit.Add(int64(n))
			select {
			case c.creditIn <- struct{}{}:
			default:
			}
		}
	}
}

// awaitStop waits, once a returns request is complete, for the initiator
// to stop reading: after its FIN that is the only way it can cancel (§8),
// and the transport's Stopped lets the responder abandon the work before it
// writes.
func (c *inboundCall) awaitStop() {
	stop := c.st.AfterStopped(cancelWith(c.cancel, errCallerStopped))
	defer stop()
	<-c.ctx.Done()
}

// run calls the handler, writes its outcome and reports which it was.
func (c *inboundCall) run(req []byte) metrics.CallOutcome {
	var err error
	var resp []byte
	var found bool
	func() {
		defer func() {
			if p := recover(); p != nil {
				c.s.logPanic(c.ev, p)
				err, found = wire.Errorf(wire.HandlerError, "the handler of '%s' panicked: %v", c.ev.Name, p), true
			}
		}()
		if c.ev.Kind == Returns {
			resp, found, err = c.s.owner.serveReturns(c.ctx, c.ev, req)
		} else {
			found, err = c.s.owner.serveYields(c.ctx, c.ev, req, c.send)
		}
	}()
	if c.stopWatched {
		c.s.handlerDone(c)
	}
	c.release()
	if c.out != nil {
		c.out.finish() // the elements go before the outcome
	}
	if c.ctx.Err() != nil {
		// Cancelled by the initiator or ended with the session: nobody
		// reads an outcome (§8, §6.6).
		abandon(c.st)
		return metrics.CallCancelled
	}
	c.settle()
	switch {
	case !found:
		c.s.traffic.Out(metrics.LaneCall, writeCallError(c.st, wire.CallError{Code: wire.HandlerError, Message: fmt.Sprintf("this side has no handler for '%s'", c.ev.Name)}))
		return metrics.CallError
	case err != nil:
		c.s.traffic.Out(metrics.LaneCall, writeCallError(c.st, callErrorOf(err)))
		return metrics.CallError
	case c.ev.Kind == Returns:
		f := getFrame()
		var ferr error
		f.b, ferr = wire.AppendFrame(f.b[:0], wire.FrameCallResponse, c.ev.Result, 0, resp)
		if ferr != nil {
			f.release()
			c.s.traffic.Out(metrics.LaneCall, writeCallError(c.st, wire.CallError{Code: wire.HandlerError, Message: fmt.Sprintf("the handler of '%s' returned a response that cannot be sent: %s", c.ev.Name, wire.CodeOf(ferr))}))
			return metrics.CallError
		}
		_, werr := c.st.Write(f.b)
		n := len(f.b)
		f.release()
		if werr != nil {
			abandon(c.st)
			return metrics.CallCancelled
		}
		c.s.traffic.Out(metrics.LaneCall, n)
		_ = c.st.Close()
	default:
		_ = c.st.Close()
	}
	return metrics.CallOK
}

// send hands one element of a streaming call to its writer (§6.3),
// waiting while the credit is zero with no deadline of its own (§6.6). The
// element's credit is spent once its frame is held for the writer, which
// writes it at once or with the elements offered while it was busy. It
// fails once the initiator cancelled or the session ended.
func (c *inboundCall) send(elem []byte) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if !c.s.opts.noCredit {
		for c.credit.Load() <= 0 {
			select {
			case <-c.creditIn:
			case <-c.ctx.Done():
				return c.cancelled()
			}
		}
	}
	if c.ctx.Err() != nil {
		return c.cancelled()
	}
	held, err := c.out.add(c.ev.Result, elem)
	switch {
	case held:
		c.credit.Add(-1)
		c.s.traffic.Out(metrics.LaneCall, wire.HeaderLen+len(elem))
		return nil
	case errors.Is(err, errHandlerReturned):
		return &Error{Code: wire.Aborted, Message: fmt.Sprintf("send was called after the handler of '%s' returned", c.ev.Name), Remedy: "Call send only from the handler, before it returns.", Err: err}
	case err != nil:
		return err
	}
	return c.cancelled()
}

// cancelled is the error send reports once the call cannot continue.
func (c *inboundCall) cancelled() error {
	if c.s.isEnded() {
		return c.s.closedError()
	}
	return &Error{Code: wire.Aborted, Message: fmt.Sprintf("the caller of '%s' is gone: %v", c.ev.Name, context.Cause(c.ctx)), Remedy: wire.Aborted.Remedy(), Err: context.Cause(c.ctx)}
}

// writeCallError answers a call with CALL_ERROR and closes (§6.4); it
// reports the bytes written, 0 when the write failed.
func writeCallError(st transport.Stream, ce wire.CallError) int {
	payload := wire.AppendCallError(nil, ce)
	b, err := wire.AppendFrame(nil, wire.FrameCallError, wire.CodecJSON, 0, payload)
	if err != nil {
		// Only a message over 16 MiB gets here: say so instead.
		payload = wire.AppendCallError(nil, wire.CallError{Code: ce.Code, Message: "the error message exceeded the 16 MiB cap"})
		b, _ = wire.AppendFrame(nil, wire.FrameCallError, wire.CodecJSON, 0, payload)
	}
	if _, err := st.Write(b); err != nil {
		abandon(st)
		return 0
	}
	_ = st.Close()
	return len(b)
}

// drain reads what the initiator still sends on a call this side answered
// without running it, until it finishes its side, so the stream ends in
// both directions.
func drain(r *wire.Reader) {
	for {
		if _, err := r.Next(); err != nil {
			return
		}
	}
}

// abandon gives a call stream up in both directions with WT_ABORTED: the
// reset code that says to drop the work (§8, §10.1).
func abandon(st transport.Stream) {
	st.Reset(wire.ResetAborted)
	st.Stop(wire.ResetAborted)
}
