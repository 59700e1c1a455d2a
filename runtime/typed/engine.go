package typed

import (
	"context"
	"fmt"
	"iter"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Sender is the engine's send side, common to a server's peer and a client.
type Sender interface {
	Emit(event uint32, payload []byte) error
	SendDatagram(event uint32, payload []byte) error
}

// Emit validates, encodes and emits v on the emit lane (§6.1).
func Emit[T any](s Sender, event uint32, c Codec[T], v T) error {
	return encode(c, v, func(b []byte) error { return s.Emit(event, b) })
}

// SendDatagram validates, encodes and sends v as a datagram (§7); a payload
// over the path's limit fails with WT_DATAGRAM_TOO_LARGE and nothing is sent
// (§7.4).
func SendDatagram[T any](s Sender, event uint32, c Codec[T], v T) error {
	return encode(c, v, func(b []byte) error { return s.SendDatagram(event, b) })
}

// RoomEmit sends v to every member of a room except the listed peers,
// encoded once (§6.5); ctx bounds the hand-off to other nodes
// (tio.Room.Emit).
func RoomEmit[T any](ctx context.Context, r *tio.Room, event uint32, c Codec[T], v T, except []*tio.Peer) error {
	return encode(c, v, func(b []byte) error { return r.Emit(ctx, event, b, except...) })
}

// RoomSendDatagram sends v as a datagram to every member of a room except
// the listed peers; members whose path cannot carry it are skipped and the
// call reports WT_DATAGRAM_TOO_LARGE (§7.4).
func RoomSendDatagram[T any](ctx context.Context, r *tio.Room, event uint32, c Codec[T], v T, except []*tio.Peer) error {
	return encode(c, v, func(b []byte) error { return r.SendDatagram(ctx, event, b, except...) })
}

// Except turns generated peers into the engine's.
func Except[P interface{ Runtime() *tio.Peer }](peers []P) []*tio.Peer {
	if len(peers) == 0 {
		return nil
	}
	out := make([]*tio.Peer, len(peers))
	for i, p := range peers {
		out[i] = p.Runtime()
	}
	return out
}

// On subscribes fn to an event the server sends. A payload that fails
// validation is dropped and counted (validationDropped), never handed to fn.
func On[T any](c *tio.Client, event uint32, codec Codec[T], fn func(T)) (unsubscribe func()) {
	return c.On(event, func(payload []byte) error {
		v, err := codec.Parse(payload)
		if err != nil {
			return err
		}
		fn(v)
		return nil
	})
}

// Call makes a returns call (§3.2) with a typed request and response.
func Call[Req, Resp any](ctx context.Context, c *tio.Client, event uint32, reqCodec Codec[Req], respCodec Codec[Resp], req Req) (Resp, error) {
	var resp Resp
	err := encode(reqCodec, req, func(b []byte) error {
		raw, err := c.Call(ctx, event, b)
		if err != nil {
			return err
		}
		// The response is the caller's (tio.Client.Call returns a copy).
		resp, err = parseOwned(respCodec, raw)
		return err
	})
	return resp, err
}

// Stream makes a yields call (§3.2): credit is granted as the loop consumes
// elements (§6.6), and breaking out of the loop cancels the call with
// WT_ABORTED (§8). An element that fails validation ends the sequence with
// that error and cancels the call.
func Stream[Req, Elem any](ctx context.Context, c *tio.Client, event uint32, reqCodec Codec[Req], elemCodec Codec[Elem], req Req) iter.Seq2[Elem, error] {
	return func(yield func(Elem, error) bool) {
		var zero Elem
		buf := getBuffer()
		b, err := reqCodec.Append((*buf)[:0], req)
		if err != nil {
			putBuffer(buf)
			yield(zero, err)
			return
		}
		// The engine copies the request into its frame before the first
		// element arrives, but the sequence owns b until it ends.
		defer func() { *buf = b[:0]; putBuffer(buf) }()
		for raw, err := range c.Stream(ctx, event, b) {
			if err != nil {
				yield(zero, err)
				return
			}
			v, err := elemCodec.Parse(raw)
			if err != nil {
				yield(zero, err)
				return
			}
			if !yield(v, nil) {
				return
			}
		}
	}
}

// HandleEmit registers fn for an emit or datagram event the client sends. A
// payload that fails validation is dropped and counted, never handed to fn.
func HandleEmit[T any](srv *tio.Server, event uint32, codec Codec[T], fn func(context.Context, *tio.Peer, T) error) {
	srv.HandleEmit(event, func(ctx context.Context, p *tio.Peer, payload []byte) error {
		v, err := codec.Parse(payload)
		if err != nil {
			return err
		}
		return fn(ctx, p, v)
	})
}

// HandleCall registers fn for a returns call. A request that fails
// validation is answered with CALL_ERROR WT_VALIDATION_FAILED naming the
// field (§6.4), and so is a response fn returns that cannot be sent.
func HandleCall[Req, Resp any](srv *tio.Server, event uint32, reqCodec Codec[Req], respCodec Codec[Resp], fn func(context.Context, *tio.Peer, Req) (Resp, error)) {
	srv.HandleCall(event, func(ctx context.Context, p *tio.Peer, raw []byte) ([]byte, error) {
		// The request is the handler's to keep (tio.Server.HandleCall).
		req, err := parseOwned(reqCodec, raw)
		if err != nil {
			return nil, err
		}
		resp, err := fn(ctx, p, req)
		if err != nil {
			return nil, err
		}
		// The engine copies the response into its frame, but after this
		// function returns: it gets a buffer of its own.
		return respCodec.Append(nil, resp)
	})
}

// HandleStream registers fn for a yields call. send encodes one element and
// waits while the caller's credit is zero (§6.6); it fails once the caller
// cancelled or the session ended, and fn should then return.
func HandleStream[Req, Elem any](srv *tio.Server, event uint32, reqCodec Codec[Req], elemCodec Codec[Elem], fn func(context.Context, *tio.Peer, Req, func(Elem) error) error) {
	srv.HandleStream(event, func(ctx context.Context, p *tio.Peer, raw []byte, send func([]byte) error) error {
		// The request is the handler's to keep (tio.Server.HandleStream).
		req, err := parseOwned(reqCodec, raw)
		if err != nil {
			return err
		}
		return fn(ctx, p, req, func(v Elem) error {
			return encode(elemCodec, v, send)
		})
	})
}

// Unimplemented is what UnimplementedHandler answers for an event the
// server's Handler does not implement: a CALL_ERROR for a call (§6.4),
// reported to ServerOptions.OnHandlerError for an emit.
func Unimplemented(event string) error {
	return &wire.Error{
		Code:    wire.HandlerError,
		Message: fmt.Sprintf("'%s' is not implemented by this server", event),
		Remedy:  "Implement the method in the server's Handler, or stop sending the event.",
	}
}
