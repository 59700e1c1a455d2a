package transport

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestStripQuery(t *testing.T) {
	for in, want := range map[string]string{
		`bogus greeting "GET /conformance?token=s"`: `bogus greeting "GET /conformance"`,
		"GET /a?x=1&y=2 HTTP/1.1":                   "GET /a HTTP/1.1",
		"wss://h:1/p?t=1 and /q?u=2":                "wss://h:1/p and /q",
		"what? no query":                            "what? no query",
		"trailing ?":                                "trailing ?",
		"no mark":                                   "no mark",
	} {
		if got := StripQuery(in); got != want {
			t.Errorf("StripQuery(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every string a record carries loses its query: message, string, error
// and Stringer attributes, in groups and in attributes bound beforehand.
func TestQuietQueriesCoversEveryAttribute(t *testing.T) {
	var out bytes.Buffer
	l := slog.New(QuietQueries(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l = l.With("bound", "/b?k=1")
	l.Debug("request /m?k=2", "s", "/s?k=3", "err", errors.New("dial /e?k=4: refused"),
		slog.Group("g", "inner", "/g?k=5"))
	if strings.Contains(out.String(), "k=") {
		t.Fatalf("a query string was logged: %s", out.String())
	}
	for _, p := range []string{"/b", "/m", "/s", "/e", "/g"} {
		if !strings.Contains(out.String(), p) {
			t.Errorf("%s is missing from %s", p, out.String())
		}
	}
}
