package webtransport

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/transport"
)

// Defaults of the QUIC side's connection limits.
const (
	// DefaultMaxConnections bounds QUIC connections open at once, whether
	// or not they carry a session: room for transport.DefaultMaxSessions sessions
	// and as many connections that have not asked for one yet.
	DefaultMaxConnections = 2 * transport.DefaultMaxSessions
	// DefaultRequestTimeout is how long a QUIC connection may go without a
	// complete HTTP/3 request (the session request, or a GET of the
	// well-known path): the HTTPS side gives a request header the same.
	DefaultRequestTimeout = 10 * time.Second
)

// quicConns tracks the listener's QUIC connections, so that one which never
// sends a whole request (kept alive by QUIC pings, or stuck half-way
// through a header) is closed after RequestTimeout, and so that their number
// is bounded whether or not they carry sessions.
type quicConns struct {
	clk     clock.Clock
	max     int
	timeout time.Duration

	mu   sync.Mutex
	open map[*quic.Conn]*quicConn
}

type quicConn struct {
	requested atomic.Bool
	deadline  clock.Timer
}

func newQUICConns(clk clock.Clock, max int, timeout time.Duration) *quicConns {
	return &quicConns{clk: clk, max: max, timeout: timeout, open: make(map[*quic.Conn]*quicConn)}
}

// admit counts a new connection and arms its request deadline; false when
// the listener holds max already, and refuse closes the connection.
func (q *quicConns) admit(qc *quic.Conn) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.open) >= q.max {
		return false
	}
	c := &quicConn{}
	c.deadline = q.clk.AfterFunc(q.timeout, func() {
		if !c.requested.Load() {
			_ = qc.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), fmt.Sprintf("no request within %d ms", q.timeout.Milliseconds()))
		}
	})
	q.open[qc] = c
	return true
}

// refuse closes a connection over the limit H3_EXCESSIVE_LOAD, once its
// handshake completed: a close during the handshake reaches the peer as a
// bare APPLICATION_ERROR, without the code and reason (RFC 9000 §10.2.3).
func (q *quicConns) refuse(qc *quic.Conn) {
	select {
	case <-qc.HandshakeComplete():
	case <-qc.Context().Done():
	}
	_ = qc.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeExcessiveLoad), fmt.Sprintf("the listener holds %d connections", q.max))
}

// done forgets a connection that ended.
func (q *quicConns) done(qc *quic.Conn) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if c := q.open[qc]; c != nil {
		c.deadline.Stop()
		delete(q.open, qc)
	}
}

// requested marks the connection of r as having sent a whole request.
func (q *quicConns) requested(r *http.Request) {
	qc, _ := r.Context().Value(quicConnKey{}).(*quic.Conn)
	q.mu.Lock()
	c := q.open[qc]
	q.mu.Unlock()
	if c != nil {
		c.requested.Store(true)
	}
}

// count is the number of QUIC connections open now.
func (q *quicConns) count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.open)
}
