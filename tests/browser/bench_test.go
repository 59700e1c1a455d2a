package browser

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// benchRuns is how many paired runs each figure is the median of.
const benchRuns = 5

// TestBenchBrowser measures the TypeScript runtime in headless Chromium
// against the Go conformance server, each figure beside a raw page moving
// the same frames with the browser's WebTransport API in the same run
// (runtime/bench.ts). It is a measurement, not a test: it runs only with
// TIO_BENCH_BROWSER=1 (make bench-browser) and prints a table.
func TestBenchBrowser(t *testing.T) {
	if os.Getenv("TIO_BENCH_BROWSER") != "1" {
		t.Skip("a measurement: run it with make bench-browser")
	}
	requireBrowser(t, chromium)
	page := bundlePage(t, filepath.Join("runtime", "bench.ts"), nil)
	srv := startConformance(t, "--dev", "--dev-dir", t.TempDir())

	type measure struct {
		label string
		kind  string
		args  []any
	}
	measures := []measure{
		{"emit 64 B (shout → heard), msgs/s", "emit", []any{64, 20000, 128}},
		{"emit 1 KiB (shout → heard), msgs/s", "emit", []any{1024, 10000, 128}},
		{"echo calls, one at a time, calls/s", "calls", []any{2000}},
		{"count 20,000 through the credit window, elements/s", "stream", []any{20000}},
		{"move datagrams echoed, received/s", "datagrams", []any{5000}},
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
	for run := range benchRuns {
		for _, m := range measures {
			// Alternate which goes first, so neither always runs warm.
			order := []string{"raw", "runtime"}
			if run%2 == 1 {
				order = []string{"runtime", "raw"}
			}
			for _, impl := range order {
				scenarios = append(scenarios, scenario{Name: "bench", URL: srv.URL, SHA256: srv.pin(t),
					Args: append([]any{impl, m.kind}, m.args...), TimeoutMs: 60000})
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
	received := map[string][]float64{} // datagrams echoed, of those sent, by page
	for i, s := range scenarios {
		var f fig
		if err := json.Unmarshal(out.Results[i], &f); err != nil {
			t.Fatalf("%s: %v", out.Results[i], err)
		}
		impl := s.Args[0].(string)
		label := measures[(i/2)%len(measures)].label
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
	var b strings.Builder
	fmt.Fprintf(&b, "%s; median of %d paired runs (min–max)\n\n", out.UserAgent, benchRuns)
	b.WriteString("| what | raw WebTransport page | @tiogen/runtime | ratio runtime/raw |\n|---|---|---|---|\n")
	for _, m := range measures {
		raw, rt := median(rates[m.label]["raw"]), median(rates[m.label]["runtime"])
		fmt.Fprintf(&b, "| %s | %.0f (%s) | %.0f (%s) | %.2f |\n", m.label, raw, spread(rates[m.label]["raw"]), rt, spread(rates[m.label]["runtime"]), rt/raw)
		if p := p99s[m.label]; len(p["raw"]) > 0 {
			fmt.Fprintf(&b, "| echo call p99, ms (lower is better) | %.2f | %.2f | %.2f |\n", median(p["raw"]), median(p["runtime"]), median(p["runtime"])/median(p["raw"]))
		}
		if m.kind == "datagrams" {
			fmt.Fprintf(&b, "| move datagrams echoed, of %d sent | %.0f (%s) | %.0f (%s) | %.2f |\n", m.args[0], median(received["raw"]), spread(received["raw"]),
				median(received["runtime"]), spread(received["runtime"]), median(received["runtime"])/median(received["raw"]))
		}
	}
	t.Log("\n" + b.String())
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
