// Package parity runs the engine (runtime/tio) over both real mappings, a
// WebTransport listener on 127.0.0.1 and the WebSocket mapping mounted on the
// same listener's HTTPS side, from one table of behaviours (TestSpec3_3_Parity),
// so the two cannot drift apart. Beside the table: the tests that belong to
// the WebSocket mapping alone (§2, §7.6 reliability refusal) and the client's
// fallback between the two (§10.3).
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
