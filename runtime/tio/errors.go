package tio

import (
	"errors"
	"fmt"

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

// closeError describes how a session ended, as the error pending operations
// and Err report: the close code and reason, or WT_NO_ERROR for a lost
// connection (§11).
func closeError(code uint32, reason string, remote, lost bool) *Error {
	if lost {
		return &Error{Code: wire.NoError, Message: "the connection was lost", Remedy: "Reconnect; nothing is resumed (§11)."}
	}
	name := wire.SessionCodeName(code)
	if name == "" {
		name = Code(fmt.Sprintf("WT_CLOSE_%d", code))
	}
	who := "this side"
	if remote {
		who = "the peer"
	}
	msg := fmt.Sprintf("session closed by %s", who)
	if reason != "" {
		msg += ": " + reason
	}
	return &Error{Code: name, Message: msg, Remedy: name.Remedy()}
}
