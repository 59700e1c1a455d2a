package webtransport

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Client defaults.
const (
	// DefaultDialTimeout bounds the QUIC handshake and the session request.
	DefaultDialTimeout = 10 * time.Second
	// ProbeTimeout is §10.3's 2000 ms for the HTTPS HEAD that tells a
	// blocked UDP path from a dead server.
	ProbeTimeout = 2000 * time.Millisecond
)

// DialOptions configure Dial. The zero value verifies the server against
// the system roots.
type DialOptions struct {
	// CertHashes pins the server certificate by the SHA-256 of its DER
	// encoding, as a browser's serverCertificateHashes does: the chain and
	// name are not checked, the certificate must be valid now and for at
	// most 14 days. An expired pinned certificate is WT_CERT_EXPIRED.
	CertHashes [][32]byte
	// RootCAs replaces the system roots when no hash is pinned.
	RootCAs *x509.CertPool
	// Header is sent with the session request (never logged).
	Header http.Header
	// DialTimeout bounds the QUIC handshake plus the session request;
	// default DefaultDialTimeout.
	DialTimeout time.Duration
	// ProbeTimeout bounds the HTTPS HEAD after a failed QUIC handshake;
	// default ProbeTimeout (§10.3).
	ProbeTimeout time.Duration
	// IdleTimeout is QUIC's idle timeout, after which a silent path is a
	// lost session; default DefaultIdleTimeout. Keep-alives are sent at
	// half of it.
	IdleTimeout time.Duration
	// CloseGrace is how long the connection stays open after a local close
	// so the close reaches the server; default DefaultCloseGrace. A server
	// of this package closes the connection itself once it read the close.
	CloseGrace time.Duration
	// Clock decides whether a pinned certificate expired; default the wall
	// clock.
	Clock clock.Clock
}

// HashFromHex parses a 64-digit hex SHA-256 pin.
func HashFromHex(s string) ([32]byte, error) {
	var h [32]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(h) {
		return h, fmt.Errorf("webtransport: certificate hash %q is not 64 hex digits", s)
	}
	copy(h[:], b)
	return h, nil
}

// Dial opens one session at rawURL (https://host:port/path?query). Each call
// opens a new QUIC connection and a new session (§11), so a reconnecting
// caller calls Dial again. Its errors are *wire.Error:
// WT_UDP_UNREACHABLE when the QUIC handshake failed but the origin answered
// HEAD /.well-known/transport-io over HTTPS within ProbeTimeout,
// WT_CERT_EXPIRED for an expired pinned certificate, WT_HANDSHAKE_FAILED
// otherwise. A refusal is not a Dial error: the session opens and closes with
// WT_UNAUTHORIZED, as a browser sees it (§4). ctx bounds the dial only: the
// session outlives it and does not carry its values.
func Dial(ctx context.Context, rawURL string, opts DialOptions) (transport.Conn, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, wire.Errorf(wire.HandshakeFailed, "session URL must be https://host[:port]/path")
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "443")
	}
	clk := clock.Or(opts.Clock)
	var refused pinRefusal
	tlsConf := &tls.Config{ServerName: u.Hostname(), RootCAs: opts.RootCAs}
	if len(opts.CertHashes) > 0 {
		tlsConf.InsecureSkipVerify = true // replaced by the pin check below
		tlsConf.VerifyConnection = verifyPinned(opts.CertHashes, clk, &refused)
	}
	idle := orDuration(opts.IdleTimeout, DefaultIdleTimeout)

	deadline, cancel := context.WithTimeout(ctx, orDuration(opts.DialTimeout, DefaultDialTimeout))
	dialCtx := newDialContext(deadline)
	defer func() {
		cancel()
		dialCtx.release()
	}()
	h3TLS := tlsConf.Clone()
	h3TLS.NextProtos = []string{http3.NextProtoH3}
	quicConf := &quic.Config{
		EnableDatagrams:                  true,
		EnableStreamResetPartialDelivery: true,
		// Calls are the client's to make: the server may open no
		// bidirectional stream (AcceptCall), so no goroutine of the
		// client's waits to accept one.
		MaxIncomingStreams:    -1,
		MaxIncomingUniStreams: 16,
		MaxIdleTimeout:        idle,
		KeepAlivePeriod:       idle / 2,
	}
	retry := Backoff{Min: RefusedRetryMin, Max: RefusedRetryMax}
	for {
		qc, sess, err := dialSession(dialCtx, host, rawURL, h3TLS, quicConf, opts.Header)
		if err == nil {
			grace := orDuration(opts.CloseGrace, DefaultCloseGrace)
			return newConn(sess, qc, nil, grace, clk, nil), nil
		}
		if !refusedConnection(err) {
			return nil, dialFailure(ctx, host, u.Path, tlsConf, &refused, opts.ProbeTimeout, err)
		}
		// The server answered over QUIC and turned the connection away
		// (quic-go refuses one that finds its accept queue full): UDP
		// works, so no probe; try again, apart from other refused
		// clients, until the dial's deadline.
		wait, _ := retry.Next()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-dialCtx.Done():
			t.Stop()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// The server's answer, as an HTTP 503 is: retried later, not on
			// the other mapping (endpoint.ShouldFallBack).
			return nil, &wire.Error{
				Code:    wire.HandshakeFailed,
				Message: fmt.Sprintf("server %s refused every QUIC connection (CONNECTION_REFUSED) until the dial timed out: it accepts new connections more slowly than they arrive", host),
				Remedy:  "Retry later with backoff; if it lasts, the server is overloaded: give it more CPU or add servers.",
				Err:     errors.Join(transport.ErrRefused, err),
			}
		}
	}
}

// Client retries of a connection the server refused (CONNECTION_REFUSED,
// RFC 9000 §20.1): the first wait, and the longest.
const (
	RefusedRetryMin = 20 * time.Millisecond
	RefusedRetryMax = time.Second
)

// sessionStage says where a dial failed: the QUIC handshake is probed over
// HTTPS (§10.3); a failure after it is the session request's.
type sessionStage struct {
	quic bool
	rsp  *http.Response
	err  error
}

func (e *sessionStage) Error() string { return e.err.Error() }
func (e *sessionStage) Unwrap() error { return e.err }

// dialSession opens one QUIC connection and asks it for the session. On
// failure nothing of it stays open.
func dialSession(ctx context.Context, host, rawURL string, h3TLS *tls.Config, conf *quic.Config, header http.Header) (*quic.Conn, *wt.Session, error) {
	qc, err := quic.DialAddr(ctx, host, h3TLS, conf)
	if err != nil {
		return nil, nil, &sessionStage{quic: true, err: err}
	}
	cc, err := clientTransport.NewClientConn(qc)
	if err != nil {
		qc.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "")
		return nil, nil, &sessionStage{err: fmt.Errorf("starting WebTransport: %w", err)}
	}
	rsp, sess, err := cc.Dial(ctx, rawURL, header)
	if err != nil {
		if cause := context.Cause(qc.Context()); refusedConnection(cause) {
			err = cause // not what webtransport-go made of the connection's end
		}
		qc.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "")
		return nil, nil, &sessionStage{rsp: rsp, err: err}
	}
	return qc, sess, nil
}

// refusedConnection reports whether the server closed the connection with
// CONNECTION_REFUSED, during the handshake or, when its accept queue was
// full, right after it.
func refusedConnection(err error) bool {
	var te *quic.TransportError
	return errors.As(err, &te) && te.Remote && te.ErrorCode == quic.ConnectionRefused
}

// dialFailure names why a dial failed (the path never carries the query).
func dialFailure(ctx context.Context, host, path string, tlsConf *tls.Config, refused *pinRefusal, probeTimeout time.Duration, err error) error {
	var stage *sessionStage
	errors.As(err, &stage)
	if !stage.quic {
		if stage.rsp != nil {
			return sessionRequestRefused(host, path, stage.rsp)
		}
		return wire.Errorf(wire.HandshakeFailed, "session request to %s: %w", host, stage.err)
	}
	err = stage.err
	if refused.expired.Load() {
		return wire.Errorf(wire.CertExpired, "the pinned certificate of %s has expired: %w", host, err)
	}
	if sum := refused.unpinned.Load(); sum != nil {
		// The server answered over QUIC: UDP is fine, and probing HTTPS
		// through the same pin would only fail the same way.
		return &wire.Error{
			Code:    wire.HandshakeFailed,
			Message: fmt.Sprintf("the certificate of %s (SHA-256 %x) matches no pinned hash", host, *sum),
			Remedy:  "Pin the hash of the certificate the server serves now: a development server prints it and serves it at " + DevManifestPath + " (endpoint.DialOptions.DevCertificate fetches it), and renews its certificate before it expires.",
			Err:     err,
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return handshakeFailure(ctx, host, tlsConf, orDuration(probeTimeout, ProbeTimeout), err)
}

// clientTransport starts WebTransport on every connection Dial opens: it
// holds nothing of a connection's, and one per dial would cost every
// client session the context webtransport-go makes for it and keeps.
var clientTransport wt.Transport

// dialContext is the context a dial runs under. webtransport-go and
// quic-go keep the context given to their Dial for the connection's and the
// session's life (their contexts derive from it through
// context.WithoutCancel), and with it the dial's deadline and its done
// channel: release, once the dial returned and its deadline was cancelled,
// lets go of them and of the caller's context for an ended context that
// holds nothing. The session's context then carries no value of the
// caller's, as on the WebSocket mapping.
type dialContext struct {
	ctx atomic.Pointer[context.Context]
}

func newDialContext(ctx context.Context) *dialContext {
	d := new(dialContext)
	d.ctx.Store(&ctx)
	return d
}

// dialEnded is what a released dialContext refers to: done, as the dial's
// deadline context is once cancelled, and without values.
var dialEnded = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

func (d *dialContext) release()                                { d.ctx.Store(&dialEnded) }
func (d *dialContext) Deadline() (deadline time.Time, ok bool) { return (*d.ctx.Load()).Deadline() }
func (d *dialContext) Done() <-chan struct{}                   { return (*d.ctx.Load()).Done() }
func (d *dialContext) Err() error                              { return (*d.ctx.Load()).Err() }
func (d *dialContext) Value(key any) any                       { return (*d.ctx.Load()).Value(key) }

// lingerThenClose releases a client's QUIC connection once its session
// ended. After a local close it first waits, up to the grace, for the server
// to close the connection: closing it at once can overtake the close
// capsule, and the server would see no code (TestSpec10_2_ClientCloseCodeAndReasonReachServer).
func lingerThenClose(c *conn) {
	if info := c.CloseInfo(); !info.Remote && !info.Lost {
		t := time.NewTimer(c.grace)
		select {
		case <-c.qconn.Context().Done():
		case <-t.C:
		}
		t.Stop()
	}
	c.qconn.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "")
}

// sessionRequestRefused names what an HTTP status answering the session
// request means (the path never carries the query).
func sessionRequestRefused(host, path string, rsp *http.Response) error {
	if e := transport.SessionRequestRefused(host, path, rsp.StatusCode, rsp.Header.Get("Retry-After")); e != nil {
		return e
	}
	return wire.Errorf(wire.HandshakeFailed, "server %s answered the session request with HTTP %d", host, rsp.StatusCode)
}

// handshakeFailure decides between WT_UDP_UNREACHABLE and
// WT_HANDSHAKE_FAILED with one HEAD over HTTPS (§10.3): UDP is named only
// when the origin really answered the probe, with a 2xx. The probe never
// carries the session URL's query.
func handshakeFailure(ctx context.Context, host string, tlsConf *tls.Config, timeout time.Duration, cause error) error {
	status, err := probeWellKnown(ctx, host, tlsConf, timeout)
	switch {
	case err == nil && status/100 == 2:
		return wire.Errorf(wire.UDPUnreachable, "the QUIC handshake with %s failed but it answers over HTTPS: %w", host, cause)
	case err == nil:
		return &wire.Error{
			Code:    wire.HandshakeFailed,
			Message: fmt.Sprintf("the QUIC handshake with %s failed, and over HTTPS it answers HEAD %s with HTTP %d: no transport-io server there", host, WellKnownPath, status),
			Remedy:  "Check the URL's host and port: they must be the transport-io server's.",
			Err:     cause,
		}
	}
	return wire.Errorf(wire.HandshakeFailed, "the QUIC handshake with %s failed and it does not answer over HTTPS either (%v): %w", host, err, cause)
}

// probeWellKnown sends HEAD /.well-known/transport-io over HTTPS within
// timeout, verified as the session would be, and returns the status.
func probeWellKnown(ctx context.Context, host string, tlsConf *tls.Config, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tr := &http.Transport{TLSClientConfig: tlsConf.Clone(), ForceAttemptHTTP2: true, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, "https://"+host+WellKnownPath, nil)
	if err != nil {
		return 0, err
	}
	rsp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return 0, ue.Err // the URL holds no query; its text adds nothing
		}
		return 0, err
	}
	rsp.Body.Close()
	return rsp.StatusCode, nil
}

// PinnedTLSConfig is a TLS client configuration that accepts exactly a
// certificate pinned by SHA-256, as Dial's CertHashes does: for reaching the
// same server over another mapping (the WebSocket fallback's wss://). The
// pin replaces chain and name checks, as a browser's serverCertificateHashes
// does.
func PinnedTLSConfig(pins [][32]byte, clk clock.Clock) *tls.Config {
	return &tls.Config{
		InsecureSkipVerify: true, // replaced by the pin check
		VerifyConnection:   verifyPinned(pins, clock.Or(clk), new(pinRefusal)),
	}
}

// pinRefusal records why verifyPinned refused a certificate, for Dial's
// error: a browser reports one error for all of them (§10.3
// WT_HANDSHAKE_FAILED), a Go client can say which.
type pinRefusal struct {
	expired  atomic.Bool
	unpinned atomic.Pointer[[32]byte] // the SHA-256 that matched no pin
}

// verifyPinned is the pin check as tls.Config.VerifyConnection, which runs
// on every handshake (a resumed one too) with the certificates the
// handshake already parsed: a dial parses the server's certificate once.
func verifyPinned(pins [][32]byte, clk clock.Clock, refused *pinRefusal) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("webtransport: the server sent no certificate")
		}
		return checkPinned(pins, clk, refused, cs.PeerCertificates[0])
	}
}

// checkPinned accepts a leaf certificate whose SHA-256 is pinned and which
// a browser would accept pinned: valid now, for at most 14 days. It records
// in refused an expired pinned certificate (WT_CERT_EXPIRED) and one that
// matches no pin.
func checkPinned(pins [][32]byte, clk clock.Clock, refused *pinRefusal, leaf *x509.Certificate) error {
	sum := sha256.Sum256(leaf.Raw)
	if !slices.Contains(pins, sum) {
		refused.unpinned.Store(&sum)
		return fmt.Errorf("webtransport: certificate SHA-256 %x matches no pinned hash", sum)
	}
	now := clk.Now()
	if now.After(leaf.NotAfter) {
		refused.expired.Store(true)
		return fmt.Errorf("webtransport: pinned certificate expired at %v", leaf.NotAfter.UTC())
	}
	if now.Before(leaf.NotBefore) {
		return fmt.Errorf("webtransport: pinned certificate is not valid before %v", leaf.NotBefore.UTC())
	}
	if leaf.NotAfter.Sub(leaf.NotBefore) > devcert.MaxValidity {
		return errors.New("webtransport: a certificate pinned by hash must be valid at most 14 days, as browsers require")
	}
	return nil
}
