package metrics

import (
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Serve is the opt-in metrics listener: it makes a Metrics on a registry
// of its own and serves that registry at /metrics on addr (TCP, plain
// HTTP: bind it where only the scraper reaches). Close the server to
// stop; Addr is where it listens.
func Serve(addr string) (*Metrics, *http.Server, net.Addr, error) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		return nil, nil, nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return m, srv, ln.Addr(), nil
}
