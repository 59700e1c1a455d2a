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
	"github.com/transport-io/tiogen/runtime/metrics"
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
	// DefaultMaxConnectionsPerAddress bounds the QUIC connections of one
	// remote IP address: twice its sessions
	// (transport.DefaultMaxSessionsPerAddress), as for the listener.
	DefaultMaxConnectionsPerAddress = 2 * transport.DefaultMaxSessionsPerAddress
)

// quicConns tracks the listener's QUIC connections, so that one which never
// sends a whole request (kept alive by QUIC pings, or stuck half-way
// through a header) is closed after RequestTimeout, and so that their number
// is bounded whether or not they carry sessions.
type quicConns struct {
	clk     clock.Clock
	max     int
	perAddr int
	timeout time.Duration
	metrics *metrics.Metrics

	mu     sync.Mutex
	open   map[*quic.Conn]*quicConn
	byAddr map[string]int
}

type quicConn struct {
	addr      string
	requested atomic.Bool
	deadline  clock.Timer
}

func newQUICConns(clk clock.Clock, max, perAddr int, timeout time.Duration, m *metrics.Metrics) *quicConns {
	return &quicConns{clk: clk, max: max, perAddr: min(perAddr, max), timeout: timeout, metrics: m,
		open: make(map[*quic.Conn]*quicConn), byAddr: make(map[string]int)}
}

// admit counts a new connection and arms its request deadline; otherwise
// it says why not, which refuse tells the peer.
func (q *quicConns) admit(qc *quic.Conn) (refusal string) {
	addr := transport.AddressOf(qc.RemoteAddr().String())
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.open) >= q.max {
		q.metrics.Refused(metrics.WebTransport, metrics.RefusedMaxConnections)
		return fmt.Sprintf("the listener holds %d connections", q.max)
	}
	if q.byAddr[addr] >= q.perAddr {
		q.metrics.Refused(metrics.WebTransport, metrics.RefusedMaxConnectionsPerAddress)
		return fmt.Sprintf("the listener holds %d connections from this address", q.perAddr)
	}
	c := &quicConn{addr: addr}
	c.deadline = q.clk.AfterFunc(q.timeout, func() {
		if !c.requested.Load() {
			q.metrics.Refused(metrics.WebTransport, metrics.RefusedNoRequest)
			_ = qc.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), fmt.Sprintf("no request within %d ms", q.timeout.Milliseconds()))
		}
	})
	q.open[qc] = c
	q.byAddr[addr]++
	return ""
}

// refuse closes a connection over a limit H3_EXCESSIVE_LOAD with why,
// once its handshake completed: a close during the handshake reaches the
// peer as a bare APPLICATION_ERROR, without the code and reason (RFC 9000
// §10.2.3).
func (q *quicConns) refuse(qc *quic.Conn, why string) {
	select {
	case <-qc.HandshakeComplete():
	case <-qc.Context().Done():
	}
	_ = qc.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeExcessiveLoad), why)
}

// done forgets a connection that ended.
func (q *quicConns) done(qc *quic.Conn) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if c := q.open[qc]; c != nil {
		if c.deadline != nil {
			c.deadline.Stop()
		}
		delete(q.open, qc)
		if q.byAddr[c.addr]--; q.byAddr[c.addr] <= 0 {
			delete(q.byAddr, c.addr)
		}
	}
}

// requested marks the connection of r as having sent a whole request, and
// stops its deadline: a session's connection holds no timer while it lasts.
func (q *quicConns) requested(r *http.Request) {
	qc, _ := r.Context().Value(quicConnKey{}).(*quic.Conn)
	q.mu.Lock()
	defer q.mu.Unlock()
	if c := q.open[qc]; c != nil {
		c.requested.Store(true)
		if c.deadline != nil {
			c.deadline.Stop()
			c.deadline = nil
		}
	}
}

// count is the number of QUIC connections open now.
func (q *quicConns) count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.open)
}
