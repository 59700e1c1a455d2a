package tio

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/transport-io/tiogen/runtime/datagram"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Client is the client's side of one session.
type Client struct {
	*session
	seq datagram.Sequencer

	// mu orders On, its unsubscribe and the room frames; the reader reads
	// subs with one atomic load and no lock: across many sessions a
	// delivery then touches a few cache lines, not a lock's and a map's.
	mu    sync.RWMutex
	subs  atomic.Pointer[subTable] // nil until the first On
	rooms map[string]struct{}
}

// subTable is a client's subscriptions by event id, built anew under
// Client.mu whenever they change.
type subTable struct {
	byID idTable[[]subscription]
	// next names the next subscription: names are never reused, so an
	// unsubscribe removes its own.
	next uint64
}

type subscription struct {
	fn   func(payload []byte) error
	name uint64
}

// with is t with the subscriptions of event replaced by subs (none: the
// event's entry dropped).
func (t *subTable) with(event uint32, subs []subscription) *subTable {
	nt := &subTable{}
	var kept []idSlot[[]subscription]
	if t != nil {
		nt.next = t.next
		for _, s := range t.byID.slots {
			if s.used && s.id != event {
				kept = append(kept, s)
			}
		}
	}
	if len(subs) > 0 {
		kept = append(kept, idSlot[[]subscription]{v: subs, id: event, used: true})
	}
	nt.byID = newIDTable[[]subscription](len(kept))
	for _, s := range kept {
		nt.byID.put(s.id, s.v)
	}
	return nt
}

// of is event's subscriptions, nil for a table not made yet.
func (t *subTable) of(event uint32) []subscription {
	if t == nil {
		return nil
	}
	subs, _ := t.byID.get(event)
	return subs
}

// NewClient runs a session on conn, which the caller dialled, and returns
// once the server's handshake is accepted (§4). It fails with the session's
// close: WT_CONTRACT_MISMATCH naming the event, WT_PROTOCOL_VERSION_MISMATCH,
// WT_HANDSHAKE_TIMEOUT, WT_RELIABILITY_REFUSED on the WebSocket mapping for
// a contract with an unreliable event that declares no fallback (§2, §7.6),
// or the server's refusal. Cancelling ctx before then closes the session.
func NewClient(ctx context.Context, conn transport.Conn, c *Contract, opts Options) (*Client, error) {
	hs, err := handshakeFrame(c, opts.Features)
	if err != nil {
		_ = conn.Close(wire.CloseNoError, "the client's handshake does not fit a frame")
		return nil, err
	}
	cl := &Client{} // subs and rooms are made by their first entry
	cl.session = newSession(roleClient, conn, c, clientOptions(opts), &hs, cl, clientOrigin, &cl.seq)
	cl.start(false)
	// The session's context, which ends just before ended fires, rather
	// than ended: a channel waited on here would stay for the session's
	// life (latch.Latch), and the Wait below waits for the end in full.
	select {
	case <-cl.hsDone.Done():
		return cl, nil
	case <-cl.ctx.Done():
	case <-ctx.Done():
		cl.closeWith(wire.CloseNoError, "the client gave up before the handshake completed")
	}
	cl.wg.Wait()
	if ctx.Err() != nil {
		return nil, &Error{Code: wire.Aborted, Message: "connecting was cancelled: " + ctx.Err().Error(), Remedy: "Nothing to do.", Err: ctx.Err()}
	}
	return nil, cl.err
}

// defaultOptions are the zero Options with their defaults applied, which
// every client given the zero Options shares.
var defaultOptions = Options{}.withDefaults()

// clientOptions is opts with its defaults applied, for one client.
func clientOptions(opts Options) *Options {
	if reflect.ValueOf(opts).IsZero() {
		return &defaultOptions
	}
	opts = opts.withDefaults()
	return &opts
}

// Wait blocks until the session has ended and every goroutine of it has
// returned, then reports how it ended.
func (c *Client) Wait() error {
	<-c.ended.Done()
	c.wg.Wait()
	return c.err
}

// On subscribes fn to an event the server sends, emit or datagram, and
// returns the function that unsubscribes it. fn runs on the session's
// reader, in order; the payload is valid until fn returns. Returning an
// *Error with WT_VALIDATION_FAILED counts the message as validationDropped.
// It panics for an event the client cannot receive.
func (c *Client) On(event uint32, fn func(payload []byte) error) (unsubscribe func()) {
	ev, ok := c.contract.byID[event]
	if !ok {
		panic(fmt.Sprintf("tio: event id %d is not in contract %s", event, c.contract.name))
	}
	if ev.Kind != Emit || !ev.sentBy(roleServer) {
		panic(fmt.Sprintf("tio: event '%s' is not an event the server sends", ev.Name))
	}
	c.mu.Lock()
	t := c.subs.Load()
	var name uint64
	if t != nil {
		name = t.next
	}
	nt := t.with(event, append(slices.Clone(t.of(event)), subscription{fn: fn, name: name}))
	nt.next = name + 1
	c.subs.Store(nt)
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			t := c.subs.Load()
			c.subs.Store(t.with(event, slices.DeleteFunc(slices.Clone(t.of(event)), func(s subscription) bool { return s.name == name })))
			c.mu.Unlock()
		})
	}
}

// Rooms is the client's view of its own rooms, kept from JOIN and LEAVE
// frames (§6.5), sorted.
func (c *Client) Rooms() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]string, 0, len(c.rooms))
	for r := range c.rooms {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

func (c *Client) established() {}

func (c *Client) roomFrame(room string, in bool) {
	c.mu.Lock()
	if in {
		if c.rooms == nil {
			c.rooms = make(map[string]struct{})
		}
		c.rooms[room] = struct{}{}
	} else {
		delete(c.rooms, room)
	}
	c.mu.Unlock()
}

func (c *Client) deliver(ev *Event, payload []byte) error {
	var first error
	for _, s := range c.subs.Load().of(ev.ID) {
		if err := s.fn(payload); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// A client answers no calls: they are the client's to make.
func (c *Client) serveReturns(context.Context, *Event, []byte) ([]byte, bool, error) {
	return nil, false, nil
}

func (c *Client) serveYields(context.Context, *Event, []byte, func([]byte) error) (bool, error) {
	return false, nil
}
