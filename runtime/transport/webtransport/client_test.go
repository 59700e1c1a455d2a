package webtransport

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"math/big"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// serveHTTPSOnly serves the listener's HTTPS side on a TCP port with no QUIC
// behind it: UDP to that port reaches nothing.
func serveHTTPSOnly(t *testing.T, cert *devcert.Cert) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	srv := &http.Server{
		Handler:   newSite(port, nil, "", nil),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert.TLS}},
	}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// §10.3: a failed QUIC handshake with an origin that answers HEAD over HTTPS
// is WT_UDP_UNREACHABLE; with nothing answering it is WT_HANDSHAKE_FAILED.
func TestSpec10_3_UDPUnreachableVersusHandshakeFailed(t *testing.T) {
	cert := mintCert(t)
	opts := DialOptions{CertHashes: [][32]byte{cert.SHA256}, DialTimeout: 500 * time.Millisecond}

	addr := serveHTTPSOnly(t, cert)
	_, err := Dial(ctx5s(t), "https://"+addr+"/tio?token=s3cret", opts)
	wantCode(t, err, wire.UDPUnreachable)
	if contains(err.Error(), "s3cret") {
		t.Fatalf("the error shows the query: %v", err)
	}

	// A port with nothing on either protocol.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	start := time.Now()
	_, err = Dial(ctx5s(t), "https://"+dead+"/tio", opts)
	wantCode(t, err, wire.HandshakeFailed)
	if !contains(err.Error(), "does not answer over HTTPS") {
		t.Fatalf("err = %v, want it to say nothing answers", err)
	}
	if time.Since(start) > opts.DialTimeout+ProbeTimeout+time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
}

// The probe answers within §10.3's 2000 ms or counts as no answer.
func TestSpec10_3_ProbeThatDoesNotAnswerInTimeIsHandshakeFailed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accepts TCP and never speaks TLS
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	opts := DialOptions{DialTimeout: 300 * time.Millisecond, ProbeTimeout: 200 * time.Millisecond}
	_, err = Dial(ctx5s(t), "https://"+ln.Addr().String()+"/tio", opts)
	wantCode(t, err, wire.HandshakeFailed)
}

// §10.3 WT_CERT_EXPIRED: the pinned development certificate is past its
// validity (the client's clock is moved past it).
func TestSpec10_3_ExpiredPinnedCertificate(t *testing.T) {
	h := startServer(t, Options{})
	late := clock.NewFake()
	late.Advance(h.cert.NotAfter().Sub(late.Now()) + time.Hour)
	opts := h.dialOptions()
	opts.Clock = late
	_, err := Dial(ctx5s(t), h.srv.URL(), opts)
	wantCode(t, err, wire.CertExpired)
}

// §10.3: a certificate that matches no pinned hash is WT_HANDSHAKE_FAILED
// saying so, with the served hash; not "does not answer over HTTPS", and
// never WT_UDP_UNREACHABLE (the server answered over QUIC).
func TestSpec10_3_WrongPinSaysSo(t *testing.T) {
	h := startServer(t, Options{})
	other := mintCert(t)
	opts := DialOptions{CertHashes: [][32]byte{other.SHA256}, DialTimeout: time.Second}
	_, err := Dial(ctx5s(t), h.srv.URL(), opts)
	wantCode(t, err, wire.HandshakeFailed)
	if msg := err.Error(); !contains(msg, "matches no pinned hash") || !contains(msg, h.cert.Hex()) || contains(msg, "HTTPS") {
		t.Fatalf("err = %v, want it to name the unpinned certificate", err)
	}
}

// §10.3: WT_UDP_UNREACHABLE only when the HTTPS probe really answered: an
// HTTPS server that is no transport-io server (404 at the well-known path)
// is WT_HANDSHAKE_FAILED naming that answer.
func TestSpec10_3_ProbeAnsweredWithout2xxIsHandshakeFailed(t *testing.T) {
	cert := mintCert(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.NotFoundHandler(), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert.TLS}}}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	opts := DialOptions{CertHashes: [][32]byte{cert.SHA256}, DialTimeout: 300 * time.Millisecond}
	_, err = Dial(ctx5s(t), "https://"+ln.Addr().String()+"/tio", opts)
	wantCode(t, err, wire.HandshakeFailed)
	if msg := err.Error(); !contains(msg, "HTTP 404") || !contains(msg, "no transport-io server") {
		t.Fatalf("err = %v, want it to name the probe's 404", err)
	}
}

func TestPinnedCertificateOverFourteenDaysRefused(t *testing.T) {
	h := startServer(t, Options{})
	served := func(der []byte) tls.ConnectionState {
		leaf, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}
	}
	verify := verifyPinned([][32]byte{h.cert.SHA256}, clock.Real, new(pinRefusal))
	if err := verify(served(h.cert.TLS.Certificate[0])); err != nil {
		t.Fatalf("a 10-day pinned certificate refused: %v", err)
	}
	twenty, err := devcertMintLong()
	if err != nil {
		t.Fatal(err)
	}
	verify = verifyPinned([][32]byte{twenty.sum}, clock.Real, new(pinRefusal))
	if err := verify(served(twenty.der)); err == nil || !contains(err.Error(), "14 days") {
		t.Fatalf("a 20-day pinned certificate: %v", err)
	}
}

func TestSystemRootsRefuseADevCertificate(t *testing.T) {
	h := startServer(t, Options{})
	_, err := Dial(ctx5s(t), h.srv.URL(), DialOptions{DialTimeout: time.Second})
	wantCode(t, err, wire.HandshakeFailed)
}

func TestHashFromHex(t *testing.T) {
	c := mintCert(t)
	h, err := HashFromHex(c.Hex())
	if err != nil || h != c.SHA256 {
		t.Fatalf("HashFromHex(%s) = %x, %v", c.Hex(), h, err)
	}
	if _, err := HashFromHex("abcd"); err == nil {
		t.Fatal("a short hash parsed")
	}
}

func TestDialRejectsNonHTTPSURL(t *testing.T) {
	_, err := Dial(ctx5s(t), "http://127.0.0.1:1/tio", DialOptions{})
	wantCode(t, err, wire.HandshakeFailed)
}

type rawCert struct {
	der []byte
	sum [32]byte
}

// devcertMintLong makes a 20-day certificate, which devcert refuses to mint
// and browsers refuse to accept pinned.
func devcertMintLong() (rawCert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return rawCert{}, err
	}
	now := time.Now()
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(1),
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(20 * 24 * time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}, &x509.Certificate{SerialNumber: big.NewInt(1)}, &key.PublicKey, key)
	if err != nil {
		return rawCert{}, err
	}
	return rawCert{der: der, sum: sha256.Sum256(der)}, nil
}

// Dial lets go of the context it was given once it returned: webtransport-go
// and quic-go keep theirs for the session's life, and the session's context
// then holds neither the dial's deadline nor the caller's context (nor its
// values), while the session stays up.
func TestDialLetsGoOfItsContextAfterTheDial(t *testing.T) {
	h := startServer(t, Options{})
	type key struct{}
	held := new([64]byte)
	cleaned := make(chan struct{})
	runtime.AddCleanup(held, func(ch chan struct{}) { close(ch) }, cleaned)
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), key{}, held), 5*time.Second)
	c, err := Dial(ctx, h.srv.URL(), h.dialOptions())
	cancel()
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close(0, "") })
	held, ctx = nil, nil
	sctx := c.(transport.ContextConn).Context()
	if v := sctx.Value(key{}); v != nil {
		t.Fatalf("the session's context carries the dial's value %v", v)
	}
	deadline := time.Now().Add(5 * time.Second)
	for done := false; !done; {
		runtime.GC()
		select {
		case <-cleaned:
			done = true
		case <-time.After(10 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("the context given to Dial is still reachable after the dial")
			}
		}
	}
	if sctx.Err() != nil || c.(*conn).isDone() {
		t.Fatalf("the session ended with the dial's context: %v", sctx.Err())
	}
}
