// Package scrape is the tests' Prometheus scraper: it serves a fresh
// runtime/metrics registry at /metrics on 127.0.0.1, as an operator
// would (metrics.Serve), and reads it back as the text exposition over
// HTTP, so a test sees exactly what a scraper sees.
package scrape

import (
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/transport-io/tiogen/runtime/metrics"
)

// Endpoint is a metrics endpoint on 127.0.0.1; Metrics is what to give the
// server or listener under test.
type Endpoint struct {
	*metrics.Metrics
	url string
}

// Serve starts an Endpoint; it stops when the test ends.
func Serve(t testing.TB) *Endpoint {
	t.Helper()
	m, hs, addr, err := metrics.Serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hs.Close() })
	return &Endpoint{Metrics: m, url: "http://" + addr.String() + "/metrics"}
}

// Samples are one scrape: every sample's value by its line's name and
// labels, as the exposition writes them: `name{a="x",b="y"}`.
type Samples map[string]float64

// Scrape GETs the exposition once.
func (e *Endpoint) Scrape(t testing.TB) Samples {
	t.Helper()
	rsp, err := http.Get(e.url)
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close()
	body, err := io.ReadAll(rsp.Body)
	if err != nil || rsp.StatusCode != http.StatusOK || !strings.HasPrefix(rsp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("scraping %s: HTTP %d %q, %v", e.url, rsp.StatusCode, rsp.Header.Get("Content-Type"), err)
	}
	samples := Samples{}
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("a sample line that does not parse: %q", line)
		}
		samples[line[:i]] = v
	}
	return samples
}

// Value scrapes once and returns one series' value (see Samples.Get).
func (e *Endpoint) Value(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	return e.Scrape(t).Get(name, labels...)
}

// Get is the value of the series name with the given label pairs (name,
// value, ...), a histogram's name_count for its samples; 0 when the
// scrape has no such series.
func (s Samples) Get(name string, labels ...string) float64 { return s[Key(name, labels...)] }

// Key is a series' key in Samples: its labels in label-name order, as
// the exposition writes them.
func Key(name string, labels ...string) string {
	if len(labels) == 0 {
		return name
	}
	pairs := make([]string, 0, len(labels)/2)
	for i := 0; i+1 < len(labels); i += 2 {
		pairs = append(pairs, labels[i]+"="+strconv.Quote(labels[i+1]))
	}
	slices.Sort(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}
