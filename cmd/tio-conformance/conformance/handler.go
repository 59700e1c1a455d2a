package conformance

import (
	"context"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/wire"
)

// MaxCount is the largest n `count` and `countThenFail` accept.
const MaxCount = 1_000_000

// behaviour is the conformance server's fixed answer to every event of the
// contract. It embeds no UnimplementedHandler: an event added to
// conformance.tio does not compile until it has a behaviour here. Payloads
// arrive validated by the generated codecs; one that fails is answered
// WT_VALIDATION_FAILED (a CALL_ERROR for a call, a counted drop for an emit
// or datagram) before a method runs.
type behaviour struct {
	srv *Server // for say's room broadcasts; set once NewServer returned
}

var _ Handler = (*behaviour)(nil)

// newEngine returns the runtime server of the contract with the
// conformance behaviour bound.
func newEngine(opts tio.ServerOptions) (*Server, error) {
	b := &behaviour{}
	srv, err := NewServer(b, opts)
	if err != nil {
		return nil, err
	}
	b.srv = srv
	return srv, nil
}

// Echo returns its request.
func (*behaviour) Echo(_ context.Context, _ Peer, req Text) (Text, error) { return req, nil }

// Fail answers CALL_ERROR WT_HANDLER_ERROR with the request's text as its
// message.
func (*behaviour) Fail(_ context.Context, _ Peer, req Text) (Text, error) {
	return Text{}, &tio.Error{Code: wire.HandlerError, Message: req.Text}
}

// Count yields {i: 0} … {i: n-1} under the caller's credit (§6.6).
func (*behaviour) Count(_ context.Context, _ Peer, req Count, send func(Item) error) error {
	_, err := count("count", req, send)
	return err
}

// CountThenFail yields as Count does, then fails WT_HANDLER_ERROR.
func (*behaviour) CountThenFail(_ context.Context, _ Peer, req Count, send func(Item) error) error {
	n, err := count("countThenFail", req, send)
	if err != nil {
		return err
	}
	return tio.Errorf(wire.HandlerError, "countThenFail failed as asked after %d items", n)
}

// count sends {i: 0} … {i: n-1} and reports how many it sent.
func count(event string, req Count, send func(Item) error) (int32, error) {
	if req.N < 0 || req.N > MaxCount {
		return 0, tio.Errorf(wire.ValidationFailed, "'%s' payload: n is %d; it must be 0 to %d", event, req.N, MaxCount)
	}
	for i := range req.N {
		if err := send(Item{I: i}); err != nil {
			return i, err
		}
	}
	return req.N, nil
}

// Hang answers nothing until the caller cancels or the session ends.
func (*behaviour) Hang(ctx context.Context, _ Peer, _ Text) (Text, error) {
	<-ctx.Done()
	return Text{}, context.Cause(ctx)
}

// Blob returns its request's bytes.
func (*behaviour) Blob(_ context.Context, _ Peer, req []byte) ([]byte, error) { return req, nil }

// Shout makes the server emit heard, with the same text, to the sender
// only.
func (*behaviour) Shout(p Peer, v Text) error { return p.EmitHeard(v) }

// Say broadcasts said, with the same text, to every room the sender is
// in, the sender included.
func (b *behaviour) Say(p Peer, v Text) error {
	for _, room := range p.Rooms() {
		if err := b.srv.Room(room).EmitSaid(v); err != nil {
			return err
		}
	}
	return nil
}

// Move sends every datagram the receive gate accepted (§7.3) straight back
// to the sender.
func (*behaviour) Move(p Peer, v Point) error { return p.EmitMove(v) }

// Enter joins the named room (a JOIN frame follows on the emit lane, §6.5)
// and returns it.
func (*behaviour) Enter(_ context.Context, p Peer, req RoomName) (RoomName, error) {
	return membership("enter", req, p.Join)
}

// Exit leaves the named room (a LEAVE frame follows, §6.5) and returns it.
func (*behaviour) Exit(_ context.Context, p Peer, req RoomName) (RoomName, error) {
	return membership("exit", req, p.Leave)
}

func membership(event string, req RoomName, change func(room string) error) (RoomName, error) {
	if req.Room == "" {
		return RoomName{}, tio.Errorf(wire.ValidationFailed, "'%s' payload: room cannot be empty", event)
	}
	if err := change(req.Room); err != nil {
		return RoomName{}, err
	}
	return req, nil
}

// Stats returns the caller's session counters.
func (*behaviour) Stats(_ context.Context, p Peer, _ Text) (Stats, error) {
	s := p.Stats()
	return Stats{
		OverflowDropped:   s.OverflowDropped,
		StaleDropped:      s.StaleDropped,
		StaleReceived:     s.StaleReceived,
		UnknownDropped:    s.UnknownDropped,
		ValidationDropped: s.ValidationDropped,
	}, nil
}
