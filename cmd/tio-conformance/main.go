// Command tio-conformance serves the transport-io conformance contract
// (testdata/conformance/conformance.tio) with fixed behaviour, over
// WebTransport and the WebSocket mapping on one address, so that any peer
// can be tested against this implementation:
//
//	go run ./cmd/tio-conformance --dev
//
// Once it serves, it prints one JSON line to stdout:
//
//	{"url":"https://127.0.0.1:4433/conformance","certSha256":"<hex>","tcp":"127.0.0.1:4433","ws":"wss://127.0.0.1:4433/conformance"}
//
// With --ws-only it serves the WebSocket mapping alone over plain ws://, and
// url and certSha256 are empty. Logs go to stderr. SIGINT or SIGTERM closes every session WT_NO_ERROR and
// exits 0.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/transport-io/tiogen/cmd/tio-conformance/conformance"
	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/metrics"
)

// shutdownGrace bounds how long a signalled server waits for its sessions.
const shutdownGrace = 10 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run serves until ctx ends and returns the exit status: 0 after a clean
// shutdown, 1 when serving failed, 2 for a wrong command line.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tio-conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:4433", "host:port for UDP (WebTransport) and TCP (WebSocket)")
	dev := fs.Bool("dev", false, "serve a development certificate (loopback only; pin it by the printed certSha256)")
	devDir := fs.String("dev-dir", "", "where the development certificate is kept (default: the user cache directory)")
	certFile := fs.String("cert", "", "PEM certificate chain (without --dev)")
	keyFile := fs.String("key", "", "PEM private key (without --dev)")
	wsOnly := fs.Bool("ws-only", false, "serve only the WebSocket mapping, over plain ws:// without a certificate (WebTransport needs one)")
	token := fs.String("authorize-token", "", "require ?token=<value>; other peers are refused with reason '"+conformance.RefusalReason+"'")
	metricsAddr := fs.String("metrics", "", "TCP `address` serving Prometheus metrics at /metrics (default: none)")
	var bus natsFlags
	bus.register(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "tio-conformance: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg := conformance.Config{Addr: *addr, Token: *token, Logger: slog.New(slog.NewTextHandler(stderr, nil))}
	var err error
	modes := 0
	for _, set := range []bool{*dev, *certFile != "" || *keyFile != "", *wsOnly} {
		if set {
			modes++
		}
	}
	switch {
	case modes > 1:
		fmt.Fprintln(stderr, "tio-conformance: pass one of --dev, --cert and --key, or --ws-only")
		return 2
	case *dev:
		cert, err := devcert.Ensure(devcert.Options{Dir: *devDir})
		if err != nil {
			fmt.Fprintf(stderr, "tio-conformance: development certificate: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "development certificate, valid until %s; in a page: %s\n", cert.NotAfter().UTC().Format(time.RFC3339), cert.JSHashes())
		cfg.Dev = cert
	case *certFile != "" && *keyFile != "":
		pair, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			fmt.Fprintf(stderr, "tio-conformance: certificate: %v\n", err)
			return 1
		}
		cfg.TLSConfig = &tls.Config{Certificates: []tls.Certificate{pair}}
	case *certFile != "" || *keyFile != "":
		fmt.Fprintln(stderr, "tio-conformance: --cert and --key go together")
		return 2
	case *wsOnly:
		cfg.WebSocketOnly = true
	default:
		fmt.Fprintln(stderr, "tio-conformance: WebTransport needs a certificate: pass --dev, or --cert and --key (or --ws-only for the WebSocket mapping alone)")
		return 2
	}

	if *metricsAddr != "" {
		m, ms, at, err := metrics.Serve(*metricsAddr)
		if err != nil {
			fmt.Fprintf(stderr, "tio-conformance: metrics: %v\n", err)
			return 1
		}
		defer ms.Close()
		cfg.Metrics = m
		fmt.Fprintf(stderr, "metrics on http://%s/metrics\n", at)
	}
	if cfg.Adapter, err = bus.adapter(ctx); err != nil {
		fmt.Fprintf(stderr, "tio-conformance: %v\n", err)
		return 1
	}
	if cfg.Adapter != nil {
		defer cfg.Adapter.Close()
		fmt.Fprintf(stderr, "joined NATS at %s as node %s, host ordinal %d\n", redactURL(bus.url), cfg.Adapter.NodeID(), cfg.Adapter.HostOrdinal())
	}
	srv, err := conformance.Listen(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "tio-conformance: %v\n", err)
		return 1
	}
	line, _ := json.Marshal(srv.Ready()) // four strings: cannot fail
	if _, err := stdout.Write(append(line, '\n')); err != nil {
		fmt.Fprintf(stderr, "tio-conformance: writing the readiness line: %v\n", err)
	}

	<-ctx.Done()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		fmt.Fprintf(stderr, "tio-conformance: shutdown: %v\n", err)
		return 1
	}
	return 0
}
