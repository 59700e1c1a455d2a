package browser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchRuns is how many paired runs each figure is the median of, unless
// TIO_BENCH_RUNS says otherwise.
const benchRuns = 5

// benchTarget is the least ratio runtime/raw the TypeScript runtime's issue
// sets for every rate measured (emits, calls, stream elements, datagrams).
const benchTarget = 0.8

// TestBenchBrowser measures the TypeScript runtime in headless Chromium
// against the Go conformance server, each figure beside a raw page moving
// the same frames with the browser's WebTransport API in the same run
// (runtime/bench.ts). It is a measurement, not a test: it runs only with
// TIO_BENCH_BROWSER=1 (make bench-browser) and prints a table, and with
// TIO_BENCH_CHECK=1 also judges each rate against benchTarget (make
// bench-browser-targets; make test-browser-targets, the end of make test).
func TestBenchBrowser(t *testing.T) {
	if os.Getenv("TIO_BENCH_BROWSER") != "1" {
		t.Skip("a measurement: run it with make bench-browser")
	}
	requireBrowser(t, chromium)
	entry := filepath.Join("runtime", "bench.ts")
	impls := []string{"raw", "runtime"}
	// TIO_BENCH_BASE=<commit> adds a third page, "base": the runtime and
	// its conformance contract as they are at that commit, in the same
	// page and run, taking turns with the other two, so a change is
	// measured against its base on the same host load.
	if base := os.Getenv("TIO_BENCH_BASE"); base != "" {
		entry = baseEntry(t, base)
		impls = append(impls, "base")
	}
	page := bundlePage(t, entry, nil)
	srv := startConformance(t, "--dev", "--dev-dir", t.TempDir())

	type measure struct {
		label string
		kind  string
		args  []any
	}
	// Each emit run lasts about a second: shorter ones (20,000 and 10,000
	// emits, 0.1 to 0.3 s) were ruled by the JIT's warm-up and the host's
	// scheduling, their rates spread over a factor of two.
	measures := []measure{
		{"emit 64 B (shout → heard), msgs/s", "emit", []any{64, 100000, 128}},
		{"emit 1 KiB (shout → heard), msgs/s", "emit", []any{1024, 50000, 128}},
		{"echo calls, one at a time, calls/s", "calls", []any{2000}},
		{"count 20,000 through the credit window, elements/s", "stream", []any{20000}},
		{"move datagrams sent for 1.5 s, echoes received/s", "datagrams", []any{1500}},
	}
	// TIO_BENCH_ONLY=<kind> (emit, calls, stream, datagrams) measures that kind alone.
	if only := os.Getenv("TIO_BENCH_ONLY"); only != "" {
		var kept []measure
		for _, m := range measures {
			if m.kind == only {
				kept = append(kept, m)
			}
		}
		measures = kept
	}
	var scenarios []scenario
	var measured []int // the index in measures of each scenario
	runs := benchRuns
	if n, err := strconv.Atoi(os.Getenv("TIO_BENCH_RUNS")); err == nil && n > 0 {
		runs = n
	}
	for run := range runs {
		for mi, m := range measures {
			// Rotate which goes first, so none always runs warm.
			for k := range impls {
				impl := impls[(k+run)%len(impls)]
				scenarios = append(scenarios, scenario{Name: "bench", URL: srv.URL, SHA256: srv.pin(t),
					Args: append([]any{impl, m.kind}, m.args...), TimeoutMs: 60000})
				measured = append(measured, mi)
			}
		}
	}
	out := runIn(t, chromium, page, scenarios, 15*time.Minute)

	type fig struct {
		Ops       float64  `json:"ops"`
		PerSecond float64  `json:"perSecond"`
		P99Ms     *float64 `json:"p99Ms"`
		Sent      *int     `json:"sent"`
	}
	rates := map[string]map[string][]float64{}
	p99s := map[string]map[string][]float64{}
	received := map[string][]float64{} // datagrams echoed, by page
	for i, s := range scenarios {
		var f fig
		if err := json.Unmarshal(out.Results[i], &f); err != nil {
			t.Fatalf("%s: %v", out.Results[i], err)
		}
		impl := s.Args[0].(string)
		label := measures[measured[i]].label
		if rates[label] == nil {
			rates[label], p99s[label] = map[string][]float64{}, map[string][]float64{}
		}
		rates[label][impl] = append(rates[label][impl], f.PerSecond)
		if f.P99Ms != nil {
			p99s[label][impl] = append(p99s[label][impl], *f.P99Ms)
		}
		if f.Sent != nil {
			received[impl] = append(received[impl], f.Ops)
		}
	}
	// One row per figure: each page's median (min–max), then each
	// runtime's ratio to the raw page of the same run.
	heads := map[string]string{"raw": "raw WebTransport page", "runtime": "@tiogen/runtime", "base": "base " + os.Getenv("TIO_BENCH_BASE")}
	var b strings.Builder
	fmt.Fprintf(&b, "%s; median of %d paired runs (min–max)\n\n| what |", out.UserAgent, runs)
	for _, impl := range impls {
		b.WriteString(" " + heads[impl] + " |")
	}
	for _, impl := range impls[1:] {
		b.WriteString(" ratio " + impl + "/raw |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", 2*len(impls)-1) + "\n")
	row := func(label string, v map[string][]float64, format string) {
		fmt.Fprintf(&b, "| %s |", label)
		for _, impl := range impls {
			fmt.Fprintf(&b, " "+format+" (%s) |", median(v[impl]), spread(v[impl]))
		}
		for _, impl := range impls[1:] {
			fmt.Fprintf(&b, " %.2f |", median(v[impl])/median(v["raw"]))
		}
		b.WriteString("\n")
	}
	for _, m := range measures {
		row(m.label, rates[m.label], "%.0f")
		if p := p99s[m.label]; len(p["raw"]) > 0 {
			row("echo call p99, ms (lower is better)", p, "%.2f")
		}
		if m.kind == "datagrams" {
			row("move datagrams echoed in the 1.5 s, count", received, "%.0f")
		}
	}
	t.Log("\n" + b.String())
	// TIO_BENCH_CHECK=1 (make bench-browser-targets) fails on a rate the
	// runtime moves at under benchTarget of the raw page's.
	if os.Getenv("TIO_BENCH_CHECK") == "1" {
		for _, m := range measures {
			if r := median(rates[m.label]["runtime"]) / median(rates[m.label]["raw"]); r < benchTarget {
				t.Errorf("%s: the runtime at %.2f of the raw page, under the target %.1f", m.label, r, benchTarget)
			}
		}
	}
}

// baseEntry writes a page entry that is bench.ts with a third page, "base":
// the runtime's sources and the conformance contract generated for them as
// they are at commit base (git archive), and returns its path.
func baseEntry(t *testing.T, base string) string {
	t.Helper()
	dir := t.TempDir()
	archive := exec.Command("git", "archive", base, "--", "runtime/ts/src", "runtime/ts/tsconfig.json", "runtime/ts/test/node-go/conformance.tio.ts")
	archive.Dir = filepath.Join("..", "..") // the repository root: the paths are relative to it
	tar := exec.Command("tar", "-x", "-C", dir)
	var err error
	if tar.Stdin, err = archive.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	archive.Stderr, tar.Stderr = &stderr, &stderr
	if err := tar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", base, err, stderr.String())
	}
	if err := tar.Wait(); err != nil {
		t.Fatalf("tar: %v\n%s", err, stderr.String())
	}
	bench, err := filepath.Abs(filepath.Join("runtime", "bench.ts"))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "runtime", "ts")
	entry := filepath.Join(dir, "entry.ts")
	text := fmt.Sprintf(`import { pages, runtimePage } from %q;
import { Client } from %q;
import { connectWebTransport } from %q;
import { conformanceContract } from %q;
pages.base = runtimePage(Client as never, connectWebTransport as never, conformanceContract as never);
`, bench, filepath.Join(src, "src", "index.ts"), filepath.Join(src, "src", "webtransport.ts"), filepath.Join(src, "test", "node-go", "conformance.tio.ts"))
	if err := os.WriteFile(entry, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return entry
}

// spread is the range of the runs, "min–max".
func spread(v []float64) string {
	if len(v) == 0 {
		return "none"
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return fmt.Sprintf("%.0f–%.0f", s[0], s[len(s)-1])
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
