package tio

import (
	"errors"
	"fmt"

	"github.com/transport-io/tiogen/runtime/transport"

	"github.com/transport-io/tiogen/runtime/wire"
)

// Error is the one error type the engine returns: a WT_* code, what happened
// and what to do. errors.Is(err, &tio.Error{Code: tio.SessionClosed})
// matches on the code.
type Error = wire.Error

// Code is a WT_* error code (§10).
type Code = wire.Code

// The codes an application meets most often, re-exported so that code built
// on this package rarely needs to import wire.
const (
	NoError            = wire.NoError
	Aborted            = wire.Aborted
	PeerTooSlow        = wire.PeerTooSlow
	ProtocolError      = wire.ProtocolError
	ContractMismatch   = wire.ContractMismatch
	ReliabilityRefused = wire.ReliabilityRefused
	LaneUnavailable    = wire.LaneUnavailable
	DatagramTooLarge   = wire.DatagramTooLarge
	RoomNotJoined      = wire.RoomNotJoined
	SessionClosed      = wire.SessionClosed
	UnknownEvent       = wire.UnknownEvent
	ValidationFailed   = wire.ValidationFailed
	HandlerError       = wire.HandlerError
)

// Errorf returns an *Error with the code's remedy.
func Errorf(code Code, format string, args ...any) *Error {
	return wire.Errorf(code, format, args...)
}

// asError turns any error into an *Error: an *Error keeps its code and
// message, anything else becomes code with the error's text.
func asError(code Code, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: code, Message: err.Error(), Remedy: code.Remedy(), Err: err}
}

// callErrorOf is what a CALL_ERROR carries for a handler's error (§6.4): a
// *Error keeps its code; any other error is WT_HANDLER_ERROR with its text.
func callErrorOf(err error) wire.CallError {
	var e *Error
	if errors.As(err, &e) && e.Code != "" {
		msg := e.Message
		if msg == "" && e.Err != nil {
			msg = e.Err.Error()
		}
		return wire.CallError{Code: e.Code, Message: msg}
	}
	return wire.CallError{Code: wire.HandlerError, Message: err.Error()}
}

// SessionEnd is how a session ended: the close and who sent it, or a lost
// connection. The error a session's Err and Wait report wraps one:
//
//	var end *tio.SessionEnd
//	if errors.As(err, &end) && end.Normal() { ... }
type SessionEnd struct {
	// Code is the §10.2 code of the close; "" when the connection was
	// lost, which carries no code (§11).
	Code Code
	// Reason is the close's reason, as the closing side gave it.
	Reason string
	// ByPeer is true when the peer closed the session.
	ByPeer bool
	// Lost is true when the session ended without a close from either
	// side: a killed process or a dead path.
	Lost bool
}

// Normal reports a WT_NO_ERROR close: the end of a session that did what
// it was for, such as a server shutting down (ShutdownReason) or a client
// leaving. A lost connection is not normal.
func (e *SessionEnd) Normal() bool { return !e.Lost && e.Code == wire.NoError }

func (e *SessionEnd) Error() string {
	if e.Lost {
		return "the connection was lost"
	}
	who := "this side"
	if e.ByPeer {
		who = "the peer"
	}
	msg := fmt.Sprintf("session closed by %s", who)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// ShutdownReason is the reason of the WT_NO_ERROR close a server sends to
// every open session when it shuts down, on either mapping.
const ShutdownReason = transport.ShutdownReason

// closeError describes how a session ended, as Err and Wait report it: the
// close code and reason, or, for a lost connection, WT_NO_ERROR, since no
// code was received (§11), with a message that says the connection was lost
// and a SessionEnd whose Lost (and Normal, false) tell it from a close.
// Pending operations wrap it in WT_SESSION_CLOSED (closedError).
func closeError(code uint32, reason string, remote, lost bool) *Error {
	if lost {
		return &Error{
			Code:    wire.NoError,
			Message: "the connection was lost: no close arrived (a killed process or a dead path)",
			Remedy:  "Reconnect.",
			Err:     &SessionEnd{Lost: true},
		}
	}
	name := wire.SessionCodeName(code)
	if name == "" {
		name = Code(fmt.Sprintf("WT_CLOSE_%d", code))
	}
	end := &SessionEnd{Code: name, Reason: reason, ByPeer: remote}
	return &Error{Code: name, Message: end.Error(), Remedy: name.Remedy(), Err: end}
}
