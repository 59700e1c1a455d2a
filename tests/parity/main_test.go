package parity

import (
	"testing"
	"time"

	"github.com/transport-io/tiogen/internal/leakcheck"
)

// TestMain fails the package when a goroutine the tests started outlives
// them: every session, transport and proxy goroutine must end after close.
// A WebTransport close lingers up to its grace (2 s) for the peer's answer
// before releasing the QUIC connection, hence the longer wait.
func TestMain(m *testing.M) { leakcheck.Main(m, 10*time.Second) }
