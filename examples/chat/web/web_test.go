package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The embedded page is served as a browser loads it: index.html at /,
// which loads the bundle as a module script, served as JavaScript.
func TestHandlerServesThePageAndItsBundle(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	get := func(path string) (*http.Response, string) {
		t.Helper()
		rsp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer rsp.Body.Close()
		b, err := io.ReadAll(rsp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return rsp, string(b)
	}
	rsp, body := get("/")
	if rsp.StatusCode != http.StatusOK || !strings.Contains(body, `<script type="module" src="/dist/app.js">`) {
		t.Fatalf("GET /: %d, page %q", rsp.StatusCode, body)
	}
	rsp, body = get("/dist/app.js")
	if rsp.StatusCode != http.StatusOK || !strings.HasPrefix(rsp.Header.Get("Content-Type"), "text/javascript") || !strings.Contains(body, "transport-io-dev") {
		t.Fatalf("GET /dist/app.js: %d %q, %d bytes: want the bundle (with connectDev) as JavaScript", rsp.StatusCode, rsp.Header.Get("Content-Type"), len(body))
	}
}
