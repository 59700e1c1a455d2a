package leakcheck

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// childEnv tells a re-run of this test binary which planted behaviour its
// child test carries out, so Main can be observed failing from outside.
const childEnv = "LEAKCHECK_CHILD"

func TestMain(m *testing.M) {
	grace := 5 * time.Second
	if os.Getenv(childEnv) == "leak" {
		grace = 100 * time.Millisecond // the planted leak never ends
	}
	Main(m, grace)
}

// plantedLeak blocks until stop closes: a leak for as long as it runs.
func plantedLeak(stop <-chan struct{}) { <-stop }

var stackHeader = regexp.MustCompile(`(?m)^goroutine \d+ \[`)

// fakeTB records what Check reports, so a test can watch it fail.
type fakeTB struct {
	testing.TB
	cleanups []func()
	errors   []string
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func (f *fakeTB) runCleanups() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func TestCheckReportsPlantedLeak(t *testing.T) {
	Check(t, 5*time.Second) // the test itself leaves nothing behind
	stop := make(chan struct{})
	ended := make(chan struct{})
	defer func() { close(stop); <-ended }()
	fake := &fakeTB{}
	Check(fake, 50*time.Millisecond)
	go func() { plantedLeak(stop); close(ended) }()
	fake.runCleanups()
	if len(fake.errors) != 1 {
		t.Fatalf("got %d errors, want 1: %q", len(fake.errors), fake.errors)
	}
	report := fake.errors[0]
	if !strings.Contains(report, "goroutines leaked") || !strings.Contains(report, "leakcheck.plantedLeak") {
		t.Fatalf("the report does not name the planted leak:\n%s", report)
	}
	// Only goroutines started since the check are shown, not the test's
	// own.
	if n := len(stackHeader.FindAllString(report, -1)); n != 1 {
		t.Fatalf("the report shows %d goroutines, want only the planted one:\n%s", n, report)
	}
}

func TestCheckWaitsForGoroutinesEndingWithinGrace(t *testing.T) {
	Check(t, 5*time.Second) // the test itself leaves nothing behind
	fake := &fakeTB{}
	Check(fake, 5*time.Second)
	done := make(chan struct{})
	go func() {
		time.Sleep(50 * time.Millisecond) // ends late, but within grace
		close(done)
	}()
	fake.runCleanups()
	if len(fake.errors) != 0 {
		t.Fatalf("a goroutine that ended within grace was reported: %q", fake.errors)
	}
	select {
	case <-done:
	default:
		t.Fatal("the check returned before the goroutine ended")
	}
}

// A goroutine from before the check that ends during it does not hide a
// leak, as it would if the check compared counts.
func TestCheckReportsLeakBesideAnEndingGoroutine(t *testing.T) {
	Check(t, 5*time.Second) // the test itself leaves nothing behind
	before := make(chan struct{})
	go func() { <-before }()
	stop := make(chan struct{})
	ended := make(chan struct{})
	defer func() { close(stop); <-ended }()
	fake := &fakeTB{}
	Check(fake, 50*time.Millisecond)
	close(before)
	go func() { plantedLeak(stop); close(ended) }()
	fake.runCleanups()
	if len(fake.errors) != 1 || !strings.Contains(fake.errors[0], "leakcheck.plantedLeak") {
		t.Fatalf("got %q, want one report of the planted leak", fake.errors)
	}
}

func TestCheckIgnoresGoroutinesStartedBefore(t *testing.T) {
	Check(t, 5*time.Second) // the test itself leaves nothing behind
	stop := make(chan struct{})
	ended := make(chan struct{})
	go func() { plantedLeak(stop); close(ended) }()
	defer func() { close(stop); <-ended }()
	fake := &fakeTB{}
	Check(fake, 50*time.Millisecond)
	fake.runCleanups()
	if len(fake.errors) != 0 {
		t.Fatalf("a goroutine from before the check was reported: %q", fake.errors)
	}
}

// TestChildTest is the test a child binary runs; it does nothing in a
// plain run.
func TestChildTest(t *testing.T) {
	switch os.Getenv(childEnv) {
	case "leak":
		go plantedLeak(make(chan struct{}))
	case "late":
		go func() { time.Sleep(50 * time.Millisecond) }()
	}
}

// runChild runs TestChildTest in a fresh copy of this test binary.
func runChild(t *testing.T, mode string) (stderr string, err error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildTest$", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	var out bytes.Buffer
	cmd.Stderr = &out
	err = cmd.Run()
	return out.String(), err
}

func TestMainFailsBinaryOnPlantedLeak(t *testing.T) {
	stderr, err := runChild(t, "leak")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("child ended with %v, want exit status 1; stderr:\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "goroutine leak:") || !strings.Contains(stderr, "leakcheck.plantedLeak") {
		t.Fatalf("stderr does not report the planted leak:\n%s", stderr)
	}
	if strings.Contains(stderr, "leakcheck.Main(") {
		t.Fatalf("the report shows the main goroutine, which ran before the tests:\n%s", stderr)
	}
	if n := len(stackHeader.FindAllString(stderr, -1)); n != 1 {
		t.Fatalf("the report shows %d goroutines, want only the planted one:\n%s", n, stderr)
	}
}

func TestMainPassesGoroutinesEndingWithinGrace(t *testing.T) {
	if stderr, err := runChild(t, "late"); err != nil {
		t.Fatalf("child ended with %v, want success; stderr:\n%s", err, stderr)
	}
}
