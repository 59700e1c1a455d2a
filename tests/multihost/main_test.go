// Package multihost runs the conformance server as several real processes
// sharing rooms through a real NATS server process, and breaks things the
// way production does: SIGKILL of a host, NATS stopped and restarted,
// NATS frozen by SIGSTOP (§7.3).
//
// The NATS server is this test binary re-executed as the nats-server the
// pinned module embeds, so the suite needs only the Go toolchain; the
// hosts are cmd/tio-conformance built into a temporary directory.
package multihost

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/transport-io/tiogen/internal/leakcheck"
	"github.com/transport-io/tiogen/runtime/adapter/nats/natstest"
)

// Environment of the re-executed binary when it serves NATS.
const (
	envServe = "TIO_MULTIHOST_NATS_DIR"
	envPort  = "TIO_MULTIHOST_NATS_PORT"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envServe); dir != "" {
		os.Exit(serveNATS(dir))
	}
	leakcheck.Main(m, 5*time.Second)
}

// serveNATS runs nats-server with JetStream storing in dir, prints
// "nats <port>" once it accepts clients, and stops on SIGTERM.
func serveNATS(dir string) int {
	port, err := strconv.Atoi(os.Getenv(envPort))
	if err != nil {
		port = -1
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	srv, err := natstest.New(dir, port, natstest.MaxPayload)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("nats %s\n", srv.URL())
	<-stop
	srv.Stop()
	return 0
}
