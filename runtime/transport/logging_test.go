package transport

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

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
