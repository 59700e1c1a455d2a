package tio

import (
	"sync"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/wire"
)

// stopWatchDelay is how long a returns call's handler runs before its
// stream is watched for the initiator's STOP_SENDING (§8). Registering the
// watch costs about six allocations on quic-go (the stream context's done
// channel and children map, context.AfterFunc's own); most handlers have
// returned well before this, so their calls pay none, and a handler still
// running is cancelled at most about this long after its start. A handler
// shorter than this that the initiator stopped runs to its end, and its
// outcome's write fails.
const stopWatchDelay = time.Millisecond

// callTimers is the one timer a session runs for every call it answers:
// each call's request deadline (RequestTimeout) and, once a returns
// handler runs with nothing left to read, the moment its stream starts
// being watched for the initiator's stop (stopWatchDelay, §8). Each delay
// is the same for every call, so each queue is in deadline order and the
// timer is set for the earlier head. A call leaves its queue in O(1) when
// its request arrived or its handler returned, and the timer is left as it
// is: firing early finds nothing due and sets itself for the next head. A
// call therefore costs no timer operation of its own, and a session with
// calls running fires about once per stopWatchDelay.
type callTimers struct {
	mu      sync.Mutex
	timer   clock.Timer
	at      time.Time // when timer fires; zero when it is not set
	reading callQueue // calls whose request has not arrived whole
	running callQueue // returns calls whose handler runs unwatched
	stopped bool      // the session ended: the timer is not set again
}

// callQueue is a list of calls, oldest first, linked through the calls.
type callQueue struct{ head, tail *inboundCall }

func (q *callQueue) push(c *inboundCall) {
	c.prev, c.next, c.queue = q.tail, nil, q
	if q.tail != nil {
		q.tail.next = c
	} else {
		q.head = c
	}
	q.tail = c
}

func (q *callQueue) remove(c *inboundCall) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		q.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		q.tail = c.prev
	}
	c.prev, c.next, c.queue = nil, nil, nil
}

// awaitRequest starts c's request deadline at now.
func (s *session) awaitRequest(c *inboundCall, now time.Time) {
	t := &s.answers.Load().timers
	t.mu.Lock()
	defer t.mu.Unlock()
	c.due = now.Add(s.opts.RequestTimeout)
	t.reading.push(c)
	s.setCallTimerLocked(now, c.due)
}

// requestDone ends c's request deadline. With watch, the handler of a
// returns call with nothing left to read begins now, its request read since
// since: its stop watch is registered stopWatchDelay after since, or after
// the watch queued before it if that is later, which keeps the queue in
// deadline order and is never later than stopWatchDelay after now, unless
// the handler has returned by then (handlerDone).
func (s *session) requestDone(c *inboundCall, watch bool, since time.Time) {
	c.stopWatched = watch
	t := &s.answers.Load().timers
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.queue != nil {
		c.queue.remove(c)
	}
	if watch {
		c.due = since.Add(stopWatchDelay)
		if last := t.running.tail; last != nil && last.due.After(c.due) {
			c.due = last.due
		}
		t.running.push(c)
		s.setCallTimerLocked(since, c.due)
	}
}

// handlerDone is called once c's handler returned, before the outcome is
// written: the stop watch is no longer wanted, and its registration, if it
// was made, is cancelled (the outcome's FIN would fire it: quic-go ends
// the stream's context on it).
func (s *session) handlerDone(c *inboundCall) {
	t := &s.answers.Load().timers
	t.mu.Lock()
	if c.queue != nil {
		c.queue.remove(c)
	}
	c.answered = true
	unwatch := c.unwatch
	t.mu.Unlock()
	if unwatch != nil {
		unwatch()
	}
}

// setCallTimerLocked makes the timer fire by due; t.mu is held.
func (s *session) setCallTimerLocked(now, due time.Time) {
	t := &s.answers.Load().timers
	if t.stopped || (!t.at.IsZero() && !due.Before(t.at)) {
		return
	}
	t.at = due
	if t.timer == nil {
		t.timer = s.opts.Clock.AfterFunc(due.Sub(now), s.callTimerFired)
		return
	}
	t.timer.Reset(due.Sub(now))
}

// callTimerFired acts on every deadline due: a request that missed
// RequestTimeout has its stream stopped (readRequest answers it), and a
// handler still running after stopWatchDelay has its stream watched for
// the initiator's stop, which cancels the handler's context (§8) at once if
// the stop came first.
func (s *session) callTimerFired() {
	now := s.opts.Clock.Now()
	t := &s.answers.Load().timers
	t.mu.Lock()
	defer t.mu.Unlock()
	t.at = time.Time{}
	if t.stopped {
		return
	}
	for c := t.reading.head; c != nil && !c.due.After(now); c = t.reading.head {
		t.reading.remove(c)
		c.late.Store(true)
		c.st.Stop(wire.ResetAborted)
	}
	for c := t.running.head; c != nil && !c.due.After(now); c = t.running.head {
		t.running.remove(c)
		c.unwatch = c.st.AfterStopped(cancelWith(c.cancel, errCallerStopped))
	}
	var next time.Time
	if c := t.reading.head; c != nil {
		next = c.due
	}
	if c := t.running.head; c != nil && (next.IsZero() || c.due.Before(next)) {
		next = c.due
	}
	if !next.IsZero() {
		s.setCallTimerLocked(now, next)
	}
}

// stopCallTimers stops the timer once the session ended: a pending call's
// deadline no longer matters, and the timer would hold the session.
func (s *session) stopCallTimers() {
	a := s.answers.Load()
	if a == nil {
		return // no call was answered: no timer was made
	}
	t := &a.timers
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	if t.timer != nil {
		t.timer.Stop()
	}
}
