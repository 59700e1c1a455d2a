package soak

import (
	"context"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/tio"
)

// listen serves srv on both mappings on 127.0.0.1 with a fresh development
// certificate (opts gives the path and anything else), and returns the
// listener, the dial options that pin its certificate, and its shutdown
// for the caller to defer.
func listen(t *testing.T, srv *tio.Server, opts endpoint.Options) (*endpoint.Listener, endpoint.DialOptions, func()) {
	t.Helper()
	cert, err := devcert.Mint(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	opts.Addr, opts.Dev = "127.0.0.1:0", cert
	l, err := endpoint.Listen(srv, opts)
	if err != nil {
		t.Fatal(err)
	}
	shutdown := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := l.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	}
	return l, endpoint.DialOptions{CertHashes: [][32]byte{cert.SHA256}}, shutdown
}
