// Package parity runs the engine (runtime/tio) over both real mappings, a
// WebTransport listener on 127.0.0.1 and the WebSocket mapping mounted on the
// same listener's HTTPS side, from one table of behaviours (TestSpec3_3_Parity),
// so the two cannot drift apart. Beside the table: the tests that belong to
// the WebSocket mapping alone (§2, §7.6 reliability refusal) and the client's
// fallback between the two (§10.3).
package parity

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// TestMain fails the package when a goroutine the tests started outlives
// them: every session, transport and proxy goroutine must end after close.
func TestMain(m *testing.M) {
	before := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		// A WebTransport close lingers up to its grace (2 s) for the peer's
		// answer before releasing the QUIC connection.
		deadline := time.Now().Add(10 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			fmt.Fprintf(os.Stderr, "goroutine leak: %d goroutines after the tests, %d before\n%s\n", n, before, buf)
			code = 1
		}
	}
	os.Exit(code)
}
