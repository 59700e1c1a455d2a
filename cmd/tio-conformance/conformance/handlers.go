package conformance

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/wire"
)

// The contract's JSON types. Pointer fields tell a missing field from a
// zero value: every field of these types is required.
type (
	textMsg struct {
		Text *string `json:"text"`
	}
	countMsg struct {
		N *int32 `json:"n"`
	}
	pointMsg struct {
		X *float64 `json:"x"`
		Y *float64 `json:"y"`
	}
	roomMsg struct {
		Room *string `json:"room"`
	}
	statsMsg struct {
		OverflowDropped   int64 `json:"overflowDropped"`
		StaleDropped      int64 `json:"staleDropped"`
		StaleReceived     int64 `json:"staleReceived"`
		UnknownDropped    int64 `json:"unknownDropped"`
		ValidationDropped int64 `json:"validationDropped"`
	}
)

func (m *textMsg) missing() string  { return absent(m.Text == nil, "text") }
func (m *countMsg) missing() string { return absent(m.N == nil, "n") }
func (m *roomMsg) missing() string  { return absent(m.Room == nil, "room") }
func (m *pointMsg) missing() string {
	if m.X == nil {
		return "x"
	}
	return absent(m.Y == nil, "y")
}

func absent(missing bool, field string) string {
	if missing {
		return field
	}
	return ""
}

// decode reads a JSON payload of event and checks that every field is
// there. A failure is WT_VALIDATION_FAILED: a CALL_ERROR for a call, a
// counted drop for an emit or datagram.
func decode[T any, P interface {
	*T
	missing() string
}](event string, b []byte) (*T, error) {
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		return nil, tio.Errorf(wire.ValidationFailed, "'%s' payload: %v", event, err)
	}
	if f := P(v).missing(); f != "" {
		return nil, tio.Errorf(wire.ValidationFailed, "'%s' payload: field '%s' is required", event, f)
	}
	return v, nil
}

// NewEngine returns the engine serving the contract with the conformance
// behaviour: every handler of the contract registered.
func NewEngine(opts tio.ServerOptions) (*tio.Server, error) {
	srv, err := tio.NewServer(Contract, opts)
	if err != nil {
		return nil, err
	}
	srv.HandleCall(Echo, echo)
	srv.HandleCall(Fail, fail)
	srv.HandleStream(Count, func(ctx context.Context, p *tio.Peer, req []byte, send func([]byte) error) error {
		_, err := count("count", req, send)
		return err
	})
	srv.HandleStream(CountThenFail, func(ctx context.Context, p *tio.Peer, req []byte, send func([]byte) error) error {
		n, err := count("countThenFail", req, send)
		if err != nil {
			return err
		}
		return tio.Errorf(wire.HandlerError, "countThenFail failed as asked after %d items", n)
	})
	srv.HandleCall(Hang, hang)
	srv.HandleCall(Blob, func(_ context.Context, _ *tio.Peer, req []byte) ([]byte, error) { return req, nil })
	srv.HandleEmit(Shout, shout)
	srv.HandleEmit(Say, func(p *tio.Peer, payload []byte) error { return say(srv, p, payload) })
	srv.HandleEmit(Move, move)
	srv.HandleCall(Enter, func(_ context.Context, p *tio.Peer, req []byte) ([]byte, error) {
		return membership("enter", req, p.Join)
	})
	srv.HandleCall(Exit, func(_ context.Context, p *tio.Peer, req []byte) ([]byte, error) {
		return membership("exit", req, p.Leave)
	})
	srv.HandleCall(Stats, stats)
	return srv, nil
}

// echo returns its request.
func echo(_ context.Context, _ *tio.Peer, req []byte) ([]byte, error) {
	if _, err := decode[textMsg]("echo", req); err != nil {
		return nil, err
	}
	return req, nil
}

// fail answers CALL_ERROR WT_HANDLER_ERROR with the request's text as its
// message.
func fail(_ context.Context, _ *tio.Peer, req []byte) ([]byte, error) {
	m, err := decode[textMsg]("fail", req)
	if err != nil {
		return nil, err
	}
	return nil, &tio.Error{Code: wire.HandlerError, Message: *m.Text}
}

// count yields {i: 0} … {i: n-1} under the caller's credit (§6.6) and
// reports how many it sent.
func count(event string, req []byte, send func([]byte) error) (int32, error) {
	m, err := decode[countMsg](event, req)
	if err != nil {
		return 0, err
	}
	n := *m.N
	if n < 0 || n > MaxCount {
		return 0, tio.Errorf(wire.ValidationFailed, "'%s' payload: n is %d; it must be 0 to %d", event, n, MaxCount)
	}
	item := make([]byte, 0, len(`{"i":1000000}`))
	for i := range n {
		item = append(strconv.AppendInt(append(item[:0], `{"i":`...), int64(i), 10), '}')
		if err := send(item); err != nil {
			return i, err
		}
	}
	return n, nil
}

// hang answers nothing until the caller cancels or the session ends.
func hang(ctx context.Context, _ *tio.Peer, req []byte) ([]byte, error) {
	if _, err := decode[textMsg]("hang", req); err != nil {
		return nil, err
	}
	<-ctx.Done()
	return nil, context.Cause(ctx)
}

// shout makes the server emit heard, with the same text, to the sender only.
func shout(p *tio.Peer, payload []byte) error {
	if _, err := decode[textMsg]("shout", payload); err != nil {
		return err
	}
	return p.Emit(Heard, payload)
}

// say broadcasts said, with the same text, to every room the sender is in,
// the sender included.
func say(srv *tio.Server, p *tio.Peer, payload []byte) error {
	if _, err := decode[textMsg]("say", payload); err != nil {
		return err
	}
	for _, room := range p.Rooms() {
		if err := srv.Room(room).Emit(Said, payload); err != nil {
			return err
		}
	}
	return nil
}

// move sends every datagram the receive gate accepted (§7.3) straight back
// to the sender, payload unchanged.
func move(p *tio.Peer, payload []byte) error {
	if _, err := decode[pointMsg]("move", payload); err != nil {
		return err
	}
	return p.SendDatagram(Move, payload)
}

// membership joins or leaves the named room (a JOIN or LEAVE frame follows
// on the emit lane, §6.5) and returns the room.
func membership(event string, req []byte, change func(room string) error) ([]byte, error) {
	m, err := decode[roomMsg](event, req)
	if err != nil {
		return nil, err
	}
	if *m.Room == "" {
		return nil, tio.Errorf(wire.ValidationFailed, "'%s' payload: room cannot be empty", event)
	}
	if err := change(*m.Room); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// stats returns the caller's session counters.
func stats(_ context.Context, p *tio.Peer, req []byte) ([]byte, error) {
	if _, err := decode[textMsg]("stats", req); err != nil {
		return nil, err
	}
	s := p.Stats()
	return json.Marshal(statsMsg{
		OverflowDropped:   s.OverflowDropped,
		StaleDropped:      s.StaleDropped,
		StaleReceived:     s.StaleReceived,
		UnknownDropped:    s.UnknownDropped,
		ValidationDropped: s.ValidationDropped,
	})
}
