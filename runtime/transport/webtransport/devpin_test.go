package webtransport

import (
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// A development server's pin comes from its manifest, for the https:// and
// the wss:// URL alike, and dials with it; the query is never sent.
func TestDevPinFromManifest(t *testing.T) {
	h := startServer(t, Options{})
	for _, u := range []string{h.srv.URL() + "?token=s3cret", "wss" + strings.TrimPrefix(h.srv.URL(), "https")} {
		pin, err := DevPin(ctx5s(t), u, nil)
		if err != nil || pin != h.cert.SHA256 {
			t.Fatalf("%s: pin %x, %v; want %x", u, pin, err, h.cert.SHA256)
		}
	}
	pin, _ := DevPin(ctx5s(t), h.srv.URL(), nil)
	c, err := Dial(ctx5s(t), h.srv.URL(), DialOptions{CertHashes: [][32]byte{pin}})
	if err != nil {
		t.Fatal(err)
	}
	h.accept()
	_ = c.Close(wire.CloseNoError, "")
}

// §10.3 WT_DEV_ONLY: the pin is fetched from loopback only, before any
// byte leaves; elsewhere the client is refused at once.
func TestSpec10_3_DevPinOnLoopbackOnly(t *testing.T) {
	for _, u := range []string{"https://192.0.2.7:4433/tio", "https://example.com/tio", "wss://10.0.0.1/tio"} {
		if _, err := DevPin(ctx5s(t), u, nil); wire.CodeOf(err) != wire.DevOnly {
			t.Errorf("%s: %v, want WT_DEV_ONLY", u, err)
		}
	}
	for _, host := range []string{"127.0.0.1", "[::1]", "localhost"} {
		if !loopbackHost(strings.Trim(host, "[]")) {
			t.Errorf("%s is loopback", host)
		}
	}
}

// §10.3 WT_CERT_EXPIRED: a development certificate past its validity (the
// client's clock moved past it) is reported as expired, with its remedy.
func TestSpec10_3_DevPinOfExpiredCertificate(t *testing.T) {
	h := startServer(t, Options{})
	late := clock.NewFake()
	late.Advance(h.cert.NotAfter().Sub(late.Now()) + time.Hour)
	_, err := DevPin(ctx5s(t), h.srv.URL(), late)
	wantCode(t, err, wire.CertExpired)
	if !contains(err.Error(), "Mint a new certificate and reload") {
		t.Fatalf("err = %v", err)
	}
}

// A server with a real certificate serves no manifest: the error says so
// and what to do; a port where nothing answers says that instead.
func TestDevPinWithoutManifest(t *testing.T) {
	cert := mintCert(t)
	srv, err := Listen(Options{Addr: "127.0.0.1:0", Path: "/tio", TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert.TLS}},
		Handler: func(transport.Conn, *transport.Request, any) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, err = DevPin(ctx5s(t), srv.URL(), nil)
	wantCode(t, err, wire.HandshakeFailed)
	if !contains(err.Error(), "serves no development manifest") {
		t.Fatalf("err = %v", err)
	}

	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	_, err = DevPin(ctx5s(t), "https://"+dead+"/tio", nil)
	wantCode(t, err, wire.HandshakeFailed)
	if !contains(err.Error(), "does not answer over HTTPS") {
		t.Fatalf("err = %v", err)
	}
}

// A manifest that names another certificate than the one serving it is
// refused: the pin must be the certificate the client then meets.
func TestDevPinManifestMustMatchItsCertificate(t *testing.T) {
	served, other := mintCert(t), mintCert(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	site := newSite(0, other, "https://"+ln.Addr().String()+"/tio", nil)
	hs := &http.Server{Handler: site, TLSConfig: &tls.Config{Certificates: []tls.Certificate{served.TLS}}}
	go hs.ServeTLS(ln, "", "")
	t.Cleanup(func() { hs.Close() })
	_, err = DevPin(ctx5s(t), "https://"+ln.Addr().String()+"/tio", nil)
	wantCode(t, err, wire.HandshakeFailed)
	if !contains(err.Error(), "does not match the certificate") {
		t.Fatalf("err = %v", err)
	}
}
