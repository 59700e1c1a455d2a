// Package conformancetest is what the suites that test the conformance
// server (tests/hostile, tests/integration) share: a server on a free port
// of 127.0.0.1 with a fresh development certificate, the contract's event
// ids, and the bound on every wait.
package conformancetest

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"testing"
	"time"

	"github.com/transport-io/tiogen/cmd/tio-conformance/conformance"
	"github.com/transport-io/tiogen/runtime/devcert"
)

// Wait bounds every wait of the suites; nothing should take a tenth of it.
const Wait = 10 * time.Second

// The event ids of the conformance contract (§5.4), as the generated
// Contract has them.
var (
	Echo          = id("echo")
	Fail          = id("fail")
	Count         = id("count")
	CountThenFail = id("countThenFail")
	Hang          = id("hang")
	Blob          = id("blob")
	Shout         = id("shout")
	Heard         = id("heard")
	Move          = id("move")
	Enter         = id("enter")
	Exit          = id("exit")
	Say           = id("say")
	Said          = id("said")
	Counters      = id("counters")
)

func id(name string) uint32 {
	e, ok := conformance.Contract.EventByName(name)
	if !ok {
		panic("conformance.tio has no event '" + name + "'")
	}
	return e.ID
}

// Server is a running conformance server and the certificate to pin.
type Server struct {
	*conformance.Listener
	Cert *devcert.Cert
}

// Start runs a conformance server configured by cfg on a free port of
// 127.0.0.1 with a fresh development certificate (cfg's Addr and Dev are
// replaced), and shuts it down when t ends.
func Start(t *testing.T, cfg conformance.Config) *Server {
	t.Helper()
	cert, err := devcert.Mint(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr, cfg.Dev = "127.0.0.1:0", cert
	srv, err := conformance.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Wait)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return &Server{srv, cert}
}

// Context ends after Wait or when t ends.
func Context(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Wait)
	t.Cleanup(cancel)
	return ctx
}

// Pinned verifies the server by its certificate's SHA-256, as
// WebTransport's serverCertificateHashes does, offering protos by ALPN.
func Pinned(cert *devcert.Cert, protos ...string) *tls.Config {
	return &tls.Config{
		NextProtos:         protos,
		InsecureSkipVerify: true, // replaced by the pin check
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || sha256.Sum256(raw[0]) != cert.SHA256 {
				return errors.New("the server's certificate is not the pinned one")
			}
			return nil
		},
	}
}
