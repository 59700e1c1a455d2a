// Package leakcheck fails a test, or a whole test binary, whose goroutines
// outlive it: every session goroutine must end after close (§11).
//
// A closed session's goroutines end asynchronously, so a check notes the
// goroutines running at its start and, at its end, polls until none of the
// goroutines started since is left or a grace period passes; the report
// shows the stacks of those still running. It compares goroutine ids, not
// counts, so a goroutine from before the check that ends during it cannot
// hide a leak.
package leakcheck

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// Main is the body of a TestMain: it runs the tests and, if they passed,
// waits up to grace for the goroutines they started to end. On a leak it
// prints the leaked stacks to stderr and exits 1; otherwise it exits with
// the tests' code.
func Main(m *testing.M, grace time.Duration) {
	start := take()
	code := m.Run()
	// The fuzzing engine keeps goroutines of its own; a fuzz target is
	// checked by the plain test run of the same targets.
	fuzzing := flag.Lookup("test.fuzz") != nil && flag.Lookup("test.fuzz").Value.String() != ""
	if code == 0 && !fuzzing {
		if left := start.settle(grace); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "goroutine leak: %d goroutines the tests started still run %v after them:\n%s\n", len(left), grace, bytes.Join(left, []byte("\n\n")))
			code = 1
		}
	}
	os.Exit(code)
}

// Check fails t if goroutines started from now on are still running once
// t's cleanups ran and grace passed. Cleanups run last-registered first, so
// Check goes before the helpers whose cleanups close what the test opened.
func Check(t testing.TB, grace time.Duration) {
	t.Helper()
	start := take()
	t.Cleanup(func() {
		if left := start.settle(grace); len(left) > 0 {
			t.Errorf("goroutines leaked: %d started during the test still run %v after it:\n%s", len(left), grace, bytes.Join(left, []byte("\n\n")))
		}
	})
}

// snapshot is the ids of the goroutines running at the start of a check.
type snapshot map[string]bool

func take() snapshot {
	s := snapshot{}
	for _, g := range goroutines() {
		s[goroutineID(g)] = true
	}
	return s
}

// settle polls until no goroutine started since s is running or grace
// passed, and returns the stacks of those still running.
func (s snapshot) settle(grace time.Duration) [][]byte {
	deadline := time.Now().Add(grace)
	pause := time.Millisecond
	for {
		left := s.started()
		if len(left) == 0 || !time.Now().Before(deadline) {
			return left
		}
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// started returns the stacks of the goroutines not running at s.
func (s snapshot) started() [][]byte {
	var out [][]byte
	for _, g := range goroutines() {
		if !s[goroutineID(g)] {
			out = append(out, g)
		}
	}
	return out
}

// goroutines returns the stack dump of every goroutine, one entry each.
func goroutines() [][]byte {
	for size := 1 << 16; ; size *= 2 {
		buf := make([]byte, size)
		if n := runtime.Stack(buf, true); n < size {
			return bytes.Split(bytes.TrimSpace(buf[:n]), []byte("\n\n"))
		}
	}
}

// goroutineID returns the id from a stack's header, "goroutine 7 [...]:".
func goroutineID(stack []byte) string {
	header, _, _ := bytes.Cut(stack, []byte(" ["))
	return string(bytes.TrimPrefix(header, []byte("goroutine ")))
}
