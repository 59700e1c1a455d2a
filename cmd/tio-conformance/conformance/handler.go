package conformance

import (
	"context"
	"errors"
	"log/slog"

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
	// log reports what a peer under test cannot see from its own side: how
	// its sessions ended and why its hung calls were cancelled.
	log *slog.Logger
}

var _ Handler = (*behaviour)(nil)

// newEngine returns the runtime server of the contract with the
// conformance behaviour bound. Every session's end is logged with its
// §10.2 code and reason, so a peer's own close can be checked here.
func newEngine(opts tio.ServerOptions, log *slog.Logger) (*Server, error) {
	b := &behaviour{log: log}
	opts.OnSessionEnd = func(p *tio.Peer, err error) {
		var e *tio.Error
		if errors.As(err, &e) {
			log.Info("session ended", "peer", p.ID(), "code", e.Code, "message", e.Message)
		}
	}
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

// Hang answers nothing until the caller cancels or the session ends, and
// logs which (§8: a cancelled call is reset or stopped by its initiator).
func (b *behaviour) Hang(ctx context.Context, _ Peer, req Text) (Text, error) {
	<-ctx.Done()
	b.log.Info("hang cancelled", "text", req.Text, "cause", context.Cause(ctx).Error())
	return Text{}, context.Cause(ctx)
}

// Blob returns its request's bytes.
func (*behaviour) Blob(_ context.Context, _ Peer, req []byte) ([]byte, error) { return req, nil }

// Shout makes the server emit heard, with the same text, to the sender
// only.
func (*behaviour) Shout(_ context.Context, p Peer, v Text) error { return p.EmitHeard(v) }

// Say broadcasts said, with the same text, to every room the sender is
// in, the sender included.
func (b *behaviour) Say(ctx context.Context, p Peer, v Text) error {
	for _, room := range p.Rooms() {
		if err := b.srv.Room(room).EmitSaid(ctx, v); err != nil {
			return err
		}
	}
	return nil
}

// Move sends every datagram the receive gate accepted (§7.3) straight back
// to the sender.
func (*behaviour) Move(_ context.Context, p Peer, v Point) error { return p.EmitMove(v) }

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

// Counters returns the caller's session counters.
func (*behaviour) Counters(_ context.Context, p Peer, _ Text) (Stats, error) {
	s := p.Stats()
	return Stats{
		OverflowDropped:   s.OverflowDropped,
		StaleDropped:      s.StaleDropped,
		StaleReceived:     s.StaleReceived,
		UnknownDropped:    s.UnknownDropped,
		ValidationDropped: s.ValidationDropped,
	}, nil
}
