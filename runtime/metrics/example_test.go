package metrics_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/metrics"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/wire"
)

// The operator makes the series on a registry of their own, hands them to
// the server (its listeners count on the same Metrics) and mounts the
// registry's handler where the scraper reaches it (or calls Serve for a
// listener of its own). Here one WebTransport session makes one call, and
// the scrape shows it.
func Example() {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		panic(err)
	}
	contract := tio.MustContract("greet",
		tio.Event{Name: "hello", Lane: wire.Reliable, Kind: tio.Returns, Payload: wire.CodecJSON, Result: wire.CodecJSON},
	)
	hello, _ := contract.EventByName("hello")
	srv, err := tio.NewServer(contract, tio.ServerOptions{Metrics: m})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	srv.HandleCall(hello.ID, func(context.Context, *tio.Peer, []byte) ([]byte, error) { return []byte(`"hi"`), nil })

	cert, err := devcert.Mint(time.Now(), 0)
	if err != nil {
		panic(err)
	}
	l, err := endpoint.Listen(srv, endpoint.Options{Addr: "127.0.0.1:0", Path: "/greet", Dev: cert})
	if err != nil {
		panic(err)
	}
	defer l.Shutdown(context.Background())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := endpoint.Dial(ctx, l.URL(), contract, endpoint.DialOptions{DevCertificate: true})
	if err != nil {
		panic(err)
	}
	if _, err := c.Call(ctx, hello.ID, []byte(`{}`)); err != nil {
		panic(err)
	}
	_ = c.Close(tio.NoError, "done")

	// What a scrape of promhttp.HandlerFor(reg, ...) mounted at /metrics shows.
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "tio_sessions_started_total") || strings.HasPrefix(line, "tio_calls_total") {
			fmt.Println(line)
		}
	}
	// Output:
	// tio_calls_total{event="hello",outcome="cancelled"} 0
	// tio_calls_total{event="hello",outcome="error"} 0
	// tio_calls_total{event="hello",outcome="ok"} 1
	// tio_sessions_started_total{mapping="websocket"} 0
	// tio_sessions_started_total{mapping="webtransport"} 1
}
