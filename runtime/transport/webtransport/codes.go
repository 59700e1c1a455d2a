package webtransport

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/quicvarint"
	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// closeSessionCapsuleType is WT_CLOSE_SESSION on the CONNECT stream
// (draft-ietf-webtrans-http3): a u32 code and a UTF-8 reason.
const closeSessionCapsuleType = 0x2843

// appendCloseCapsule appends a WT_CLOSE_SESSION capsule carrying a §10.2 code
// and its reason, cut to 1024 bytes (§10.2).
func appendCloseCapsule(b []byte, code uint32, reason string) []byte {
	reason = wire.CutReason(reason, wire.MaxCloseReason)
	b = quicvarint.Append(b, closeSessionCapsuleType)
	b = quicvarint.Append(b, uint64(4+len(reason)))
	b = binary.BigEndian.AppendUint32(b, code)
	return append(b, reason...)
}

// wtResetCode carries a §8 one-byte reset code as a WebTransport stream
// error code; webtransport-go maps it onto the HTTP/3 code space and back.
func wtResetCode(code uint8) wt.StreamErrorCode { return wt.StreamErrorCode(code) }

// errOutOfRangeReset reports a peer's reset code above 255, which §8 forbids
// and no conforming peer sends; it is not a *transport.StreamError because no
// one-byte code describes it.
var errOutOfRangeReset = errors.New("webtransport: stream reset with a code outside §8's one byte")

// streamError translates an error of a webtransport-go stream into the seam's
// terms: a reset or stop becomes *transport.StreamError with its one-byte
// code, a deadline stays as it is, and anything else means the session or its
// connection ended: WT_SESSION_CLOSED.
func (c *conn) streamError(err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	if se, ok := errors.AsType[*wt.StreamError](err); ok {
		if se.ErrorCode > 0xff {
			return fmt.Errorf("%w: %d", errOutOfRangeReset, se.ErrorCode)
		}
		return &transport.StreamError{Code: uint8(se.ErrorCode), Remote: se.Remote}
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	return c.closedError(err, endingError(err))
}

// sessionError translates the error of a session-level call (open, accept,
// datagrams): the caller's context ending is reported as that context's
// error; anything else means the session ended, since nothing else fails
// these calls.
func (c *conn) sessionError(ctx context.Context, err error) error {
	if ctx != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return c.closedError(err, true)
}

// closedError reports WT_SESSION_CLOSED. When cause says the session is
// ending (or this side closed it), it first waits for Done, so a caller that
// sees the error can read CloseInfo at once. webtransport-go fails streams a moment before the
// session's context ends; without the wait an engine would take the peer's
// close for a fault of its own. The wait is bounded by the close grace.
func (c *conn) closedError(cause error, ending bool) error {
	if ending && !c.isDone() {
		t := time.NewTimer(c.grace)
		select {
		case <-c.done.Done():
		case <-t.C:
		}
		t.Stop()
	}
	return wire.Errorf(wire.SessionClosed, "the webtransport session is closed: %w", cause)
}

// endingError reports whether a stream error says that the session or its
// QUIC connection ended (as opposed to a misuse of one stream).
func endingError(err error) bool {
	return isA[*wt.SessionError](err) || isA[*http3.Error](err) || isA[*quic.ApplicationError](err) ||
		isA[*quic.TransportError](err) || isA[*quic.IdleTimeoutError](err) || isA[*quic.StatelessResetError](err) ||
		errors.Is(err, net.ErrClosed)
}

// isA reports whether err's tree holds an E. errors.AsType, unlike
// errors.As, allocates no target: this runs for every blocked call a
// session's end interrupts.
func isA[E error](err error) bool {
	_, ok := errors.AsType[E](err)
	return ok
}
