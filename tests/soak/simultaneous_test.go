package soak

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/transport-io/tiogen/internal/leakcheck"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/tio"
)

// Simultaneous dials: clients that all dial WebTransport at the same moment
// are all established, many more than quic-go's accept queue holds (32, a
// constant there; a connection that finds it full is refused with
// CONNECTION_REFUSED, and the client dials it again with backoff).
// TIO_BURST sets the number: 64 by default, as make test runs it under the
// race detector, and 500 in make test's run without it. Its file sorts
// after the churn's, so the churn's heap figures never include what these
// sessions leave to collect.
func TestSimultaneousWebTransportDialsAreAllEstablished(t *testing.T) {
	n := 64
	if v, err := strconv.Atoi(os.Getenv("TIO_BURST")); err == nil && v > 0 {
		n = v
	}
	leakcheck.Check(t, 10*time.Second)
	srv, err := tio.NewServer(contract, tio.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	l, pin, shutdown := listen(t, srv, endpoint.Options{Path: "/burst"})
	defer shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clients := make([]*tio.Client, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			clients[i], errs[i] = endpoint.Dial(ctx, l.URL(), contract, pin)
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	took := time.Since(began)
	established := 0
	for i, err := range errs {
		if err != nil {
			t.Errorf("dial %d of %d: %v", i, n, err)
			continue
		}
		established++
	}
	t.Logf("%d of %d simultaneous WebTransport dials established in %v", established, n, took.Round(time.Millisecond))
	for _, c := range clients {
		if c != nil {
			_ = c.Close(tio.NoError, "")
			_ = c.Wait()
		}
	}
}
