package tio

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/transport-io/tiogen/runtime/datagram"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Client is the client's side of one session.
type Client struct {
	*session
	seq datagram.Sequencer

	mu    sync.RWMutex
	subs  map[uint32][]*subscription
	rooms map[string]struct{}
}

type subscription struct {
	fn func(payload []byte) error
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
	sub := &subscription{fn: fn}
	c.mu.Lock()
	if c.subs == nil {
		c.subs = make(map[uint32][]*subscription)
	}
	c.subs[event] = append(slices.Clone(c.subs[event]), sub)
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.subs[event] = slices.DeleteFunc(slices.Clone(c.subs[event]), func(s *subscription) bool { return s == sub })
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
	c.mu.RLock()
	subs := c.subs[ev.ID]
	c.mu.RUnlock()
	var first error
	for _, s := range subs {
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
