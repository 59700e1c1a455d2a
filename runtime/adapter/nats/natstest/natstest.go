// Package natstest runs a real nats-server, with JetStream, inside a test
// process: the pinned server module, embedded, so a test needs nothing
// installed beyond the Go toolchain. Stop and Start take it down and bring
// it back on the same port and store, as an outage would.
package natstest

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// MaxPayload is the max_payload the server runs with: room for a maximal
// frame (1 MiB and its header) and the adapter's envelope.
const MaxPayload = 2 << 20

// Server is one embedded nats-server.
type Server struct {
	mu   sync.Mutex
	srv  *server.Server
	opts server.Options
}

// Start runs a server on a free port of 127.0.0.1 with JetStream storing
// under a fresh temporary directory; the test's cleanup shuts it down.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := New(t.TempDir(), -1, MaxPayload)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// New runs a server storing under dir on port of 127.0.0.1 (-1: a free
// one) with the given max_payload.
func New(dir string, port int, maxPayload int32) (*Server, error) {
	s := &Server{opts: server.Options{
		Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir,
		MaxPayload: maxPayload, NoLog: true, NoSigs: true,
	}}
	if err := s.run(); err != nil {
		return nil, err
	}
	s.opts.Port = s.srv.Addr().(*net.TCPAddr).Port // a restart comes back where clients look
	return s, nil
}

func (s *Server) run() error {
	opts := s.opts
	srv, err := server.NewServer(&opts)
	if err != nil {
		return fmt.Errorf("natstest: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return fmt.Errorf("natstest: the embedded nats-server was not ready within 10 s")
	}
	s.srv = srv
	return nil
}

// URL is the server's client URL.
func (s *Server) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.opts.Port) }

// Stop shuts the server down and waits until it is gone; stopping a
// stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

// Start brings a stopped server back on the same port and store.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
}

// Restart is Start outside a test.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return nil
	}
	return s.run()
}
