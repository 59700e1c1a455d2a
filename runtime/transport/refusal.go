package transport

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/transport-io/tiogen/runtime/wire"
)

// ErrRefused is the cause of a dial the server answered with an HTTP
// status instead of a session because it would not take one more (HTTP 429
// or 503, Door.Enter). It is the server's answer: a client retries it later
// rather than on another mapping (endpoint.ShouldFallBack).
var ErrRefused = errors.New("the server refused the session request")

// SessionRequestRefused is the error of a session request, on either
// mapping, that the server answered with HTTP status instead of a session:
// what the status means and what to do. The spec has no code for a refused
// request (§10.3 names none), so it is WT_HANDSHAKE_FAILED with its own
// message and remedy. path never carries the query; retryAfter is the
// response's Retry-After header ("" when none). nil for a status it has
// nothing particular to say about.
func SessionRequestRefused(host, path string, status int, retryAfter string) *wire.Error {
	wait := "later"
	if retryAfter != "" {
		wait = "after " + retryAfter + " s, as the server's Retry-After asks"
	}
	switch status {
	case http.StatusNotFound:
		return &wire.Error{
			Code:    wire.HandshakeFailed,
			Message: fmt.Sprintf("server %s serves no session at path %q (HTTP 404)", host, path),
			Remedy:  "Check the URL's path: it must be the path the server listens on.",
		}
	case http.StatusForbidden:
		return &wire.Error{
			Code:    wire.HandshakeFailed,
			Message: fmt.Sprintf("server %s refused the session request (HTTP 403): its origin check refused this client's Origin", host),
			Remedy:  "Add this page's origin to the server's allowed origins, or connect from one it allows.",
		}
	case http.StatusTooManyRequests:
		return &wire.Error{
			Code:    wire.HandshakeFailed,
			Message: fmt.Sprintf("server %s refused the session (HTTP 429): this client's IP address already holds as many sessions as the server allows one address", host),
			Remedy: "Retry " + wait + ", then with backoff, once a session of this address ended; close the sessions this address does not need. " +
				"If many users share the address (a NAT or gateway), raise the server's MaxSessionsPerAddress.",
			Err: ErrRefused,
		}
	case http.StatusServiceUnavailable:
		return &wire.Error{
			Code:    wire.HandshakeFailed,
			Message: fmt.Sprintf("server %s refused the session (HTTP 503): it holds its maximum of sessions or is shutting down", host),
			Remedy: "Retry " + wait + ", then with backoff: a full server admits again as sessions end, and one shutting down is replaced. " +
				"If the server is full often, raise its MaxSessions or add servers.",
			Err: ErrRefused,
		}
	}
	return nil
}
