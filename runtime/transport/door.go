package transport

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/transport-io/tiogen/runtime/metrics"
	"github.com/transport-io/tiogen/runtime/wire"
)

// The door's limits and reasons, the same for every mapping's listener.
const (
	// DefaultMaxSessions bounds the sessions a listener holds at once,
	// requests being decided and refused sessions still delivering their
	// refusal included.
	DefaultMaxSessions = 10000
	// DefaultMaxSessionsPerAddress bounds the slots one remote IP address
	// holds at once, requests being decided included: a tenth of the
	// listener's, so one address cannot take the whole door, with room for
	// many users behind one NAT.
	DefaultMaxSessionsPerAddress = DefaultMaxSessions / 10
	// DefaultAuthorizeTimeout bounds one authorize call; past it the
	// session closes as AuthorizeFailedReason.
	DefaultAuthorizeTimeout = 5 * time.Second
	// AuthorizeFailedReason closes, as WT_NO_ERROR, a session whose
	// authorize reached no decision (§4): nothing was decided, so the next
	// attempt may succeed.
	AuthorizeFailedReason = "authorize failed"
	// AuthorizeFailedRemedy is what the server's log advises when Authorize
	// returns an error that is no Refusal.
	AuthorizeFailedRemedy = "Fix what failed in Authorize, or return a Refuse(reason) error to refuse the peer."
	// ShutdownReason is the reason of the WT_NO_ERROR close a server sends
	// to every session still open when it shuts down, on either mapping: a
	// client reads it as a normal end, not a failure.
	ShutdownReason = "server shutting down"
)

// DoorOptions configure a Door. The zero value admits everyone, up to
// DefaultMaxSessions.
type DoorOptions struct {
	// Authorize decides each peer before its session is accepted (§4.3);
	// nil accepts everyone.
	Authorize AuthorizeFunc
	// AuthorizeTimeout bounds one Authorize call (its context's deadline);
	// 0 means DefaultAuthorizeTimeout.
	AuthorizeTimeout time.Duration
	// MaxSessions bounds sessions held at once; 0 means
	// DefaultMaxSessions.
	MaxSessions int
	// MaxSessionsPerAddress bounds the sessions one remote IP address holds
	// at once; 0 means DefaultMaxSessionsPerAddress, capped at MaxSessions.
	MaxSessionsPerAddress int
	// Metrics counts refusals under Mapping; nil counts nothing.
	Metrics *metrics.Metrics
	Mapping metrics.Mapping
	// Logger receives authorize failures; nil is slog.Default(). Query
	// strings are never logged.
	Logger *slog.Logger
}

// Door is what every listener does between a request's arrival and its
// session's end, whatever the mapping: it counts sessions against
// MaxSessions, decides each peer with Authorize within its deadline, closes
// a refused peer WT_UNAUTHORIZED with its reason before anything else (§4),
// runs the handler of an accepted one, tracks open sessions and closes them
// all at Shutdown. The listener does the mapping's part: the upgrade, and
// the HTTP answers (503 when Enter refuses).
type Door struct {
	authorize AuthorizeFunc
	timeout   time.Duration
	max       int
	perAddr   int
	metrics   *metrics.Metrics
	mapping   metrics.Mapping
	log       *slog.Logger
	handler   SessionHandler

	mu           sync.Mutex
	shuttingDown bool
	open         int            // slots taken, counted against max
	byAddr       map[string]int // slots taken per remote IP, counted against perAddr
	live         map[Conn]struct{}
	slots        sync.WaitGroup // one per slot, released once its session is
}

// NewDoor returns a door that hands accepted sessions to handler.
func NewDoor(opts DoorOptions, handler SessionHandler) *Door {
	d := &Door{
		authorize: opts.Authorize,
		timeout:   opts.AuthorizeTimeout,
		max:       opts.MaxSessions,
		perAddr:   opts.MaxSessionsPerAddress,
		metrics:   opts.Metrics,
		mapping:   opts.Mapping,
		log:       opts.Logger,
		handler:   handler,
		live:      make(map[Conn]struct{}),
		byAddr:    make(map[string]int),
	}
	if d.timeout <= 0 {
		d.timeout = DefaultAuthorizeTimeout
	}
	if d.max <= 0 {
		d.max = DefaultMaxSessions
	}
	if d.perAddr <= 0 {
		d.perAddr = min(DefaultMaxSessionsPerAddress, d.max)
	}
	if d.log == nil {
		d.log = slog.Default()
	}
	d.log = slog.New(QuietQueries(d.log.Handler()))
	return d
}

// MaxSessions is the door's effective session bound.
func (d *Door) MaxSessions() int { return d.max }

// Sessions is the number of slots taken now: requests being decided, open
// sessions, and refused ones still delivering their refusal.
func (d *Door) Sessions() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.open
}

// Admission is the door's answer to a request that just arrived.
type Admission uint8

const (
	// Admitted: a slot is taken.
	Admitted Admission = iota
	// Full: the door holds MaxSessions (HTTP 503).
	Full
	// AddressFull: the request's IP address holds MaxSessionsPerAddress
	// (HTTP 429).
	AddressFull
	// ShuttingDown: the door admits nobody any more (HTTP 503).
	ShuttingDown
)

// Answer writes the HTTP answer of a refused admission, with Retry-After:
// the refusal passes once sessions end.
func (a Admission) Answer(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	switch a {
	case AddressFull:
		http.Error(w, "session limit of this address reached", http.StatusTooManyRequests)
	case ShuttingDown:
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
	default:
		http.Error(w, "session limit reached", http.StatusServiceUnavailable)
	}
}

// Enter takes a slot for a request from remote (host:port) that just
// arrived, or says why not; the listener answers a refusal with
// Admission.Answer. A slot taken is given back by Serve, or by Leave when
// no session came of the request.
func (d *Door) Enter(remote string) Admission {
	ip := AddressOf(remote)
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.shuttingDown:
		d.metrics.Refused(d.mapping, metrics.RefusedShuttingDown)
		return ShuttingDown
	case d.open >= d.max:
		d.metrics.Refused(d.mapping, metrics.RefusedMaxSessions)
		return Full
	case d.byAddr[ip] >= d.perAddr:
		d.metrics.Refused(d.mapping, metrics.RefusedMaxSessionsPerAddress)
		return AddressFull
	}
	d.open++
	d.byAddr[ip]++
	d.slots.Add(1)
	return Admitted
}

// Leave gives back the slot Enter took for remote, of a request that
// produced no session.
func (d *Door) Leave(remote string) {
	ip := AddressOf(remote)
	d.mu.Lock()
	d.open--
	if d.byAddr[ip]--; d.byAddr[ip] <= 0 {
		delete(d.byAddr, ip)
	}
	d.mu.Unlock()
	d.slots.Done()
}

// AddressOf is the IP address of a host:port, the key of the per-address
// bounds; remote itself when it has no port.
func AddressOf(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return host
	}
	return remote
}

// Decide runs Authorize within AuthorizeTimeout, before the session is
// accepted (§4.3). A nil Authorize accepts.
func (d *Door) Decide(ctx context.Context, req *Request) (data any, err error) {
	if d.authorize == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	return d.authorize(ctx, req)
}

// Serve carries out Decide's answer on the upgraded session c and returns
// once c is released, giving back the request's slot: a refusal closes c
// WT_UNAUTHORIZED with its reason, no decision closes it WT_NO_ERROR
// "authorize failed", a session that arrives while shutting down is closed
// with ShutdownReason, and an accepted one runs the handler, after which c
// is closed WT_NO_ERROR if the handler left it open.
func (d *Door) Serve(c Conn, req *Request, data any, authErr error) {
	defer d.Leave(req.RemoteAddr)
	defer func() { <-c.Released() }()
	if !d.track(c) {
		_ = c.Close(wire.CloseNoError, ShutdownReason)
		return
	}
	defer d.untrack(c)
	var refusal *Refusal
	switch {
	case errors.As(authErr, &refusal):
		reason := refusal.Reason
		if reason == "" {
			reason = DefaultRefusalReason
		}
		// §4: WT_UNAUTHORIZED with the application's reason, before frame 0.
		d.metrics.Refused(d.mapping, metrics.RefusedUnauthorized)
		_ = c.Close(wire.CloseUnauthorized, reason)
	case authErr != nil:
		d.metrics.Refused(d.mapping, metrics.RefusedAuthorizeFailed)
		// The session's code is WT_NO_ERROR, whose remedy ("Nothing to do.")
		// is the peer's; the operator's is this one. Through wire.Error so
		// the text loses any query string (§4.3).
		failure := wire.Errorf(wire.NoError, "authorize: %w", authErr)
		failure.Remedy = AuthorizeFailedRemedy
		d.log.Warn(c.Mapping().String()+": authorize failed", "path", req.Path, "remote", req.RemoteAddr, "err", failure.Error())
		_ = c.Close(wire.CloseNoError, AuthorizeFailedReason)
	default:
		defer c.Close(wire.CloseNoError, "") // also if the handler panics
		d.handler(c, req, data)
	}
}

// track records an open session for Shutdown; false once shutting down.
func (d *Door) track(c Conn) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.shuttingDown {
		return false
	}
	d.live[c] = struct{}{}
	return true
}

func (d *Door) untrack(c Conn) {
	d.mu.Lock()
	delete(d.live, c)
	d.mu.Unlock()
}

// Shutdown stops admitting (Enter refuses), closes every open session
// WT_NO_ERROR with ShutdownReason, and waits until every slot was given
// back (handlers returned, sessions released) or ctx ends, returning ctx's
// error then.
func (d *Door) Shutdown(ctx context.Context) error {
	d.mu.Lock()
	d.shuttingDown = true
	live := make([]Conn, 0, len(d.live))
	for c := range d.live {
		live = append(live, c)
	}
	d.mu.Unlock()
	for _, c := range live {
		_ = c.Close(wire.CloseNoError, ShutdownReason)
	}
	waited := make(chan struct{})
	go func() {
		d.slots.Wait()
		close(waited)
	}()
	select {
	case <-waited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
