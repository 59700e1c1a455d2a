package hostile

import (
	"bufio"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/cmd/tio-conformance/conformance"
	"github.com/transport-io/tiogen/internal/syncbuf"
	"github.com/transport-io/tiogen/tests/internal/conformancetest"
)

// secret is the token a hostile peer sends in its query string.
const secret = "s3cr3tT0ken"

// No log line, at any level, carries a query string: the HTTP server's own
// error log included, which quotes the first bytes of a bogus request (an
// HTTP/1 request line sent after negotiating h2).
func TestHostileNoQueryStringInAnyLogLine(t *testing.T) {
	var out syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := &server{conformancetest.Start(t, conformance.Config{HandshakeTimeout: handshakeTimeout, Token: "right", Logger: logger})}
	tcp := srv.Ready().TCP
	for _, protos := range [][]string{{"h2"}, {"http/1.1"}} {
		conf := conformancetest.Pinned(srv.Cert, protos...)
		c, err := tls.Dial("tcp", tcp, conf)
		if err != nil {
			t.Fatal(err)
		}
		// A request line with a query, malformed afterwards on HTTP/1.1.
		_, _ = io.WriteString(c, "GET /conformance?token="+secret+" HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(wait))
		_, _ = io.Copy(io.Discard, c)
		_ = c.Close()
	}
	// A refused WebSocket peer with the token in its query.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: conformancetest.Pinned(srv.Cert)}}
	if rsp, err := client.Get("https://" + tcp + "/conformance?token=" + secret); err == nil {
		rsp.Body.Close()
	}
	deadline := time.Now().Add(wait)
	for !strings.Contains(out.String(), "bogus greeting") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	logged := out.String()
	if !strings.Contains(logged, "bogus greeting") {
		t.Fatalf("the HTTP server's error log did not reach the logger at debug level:\n%s", logged)
	}
	sc := bufio.NewScanner(strings.NewReader(logged))
	for sc.Scan() {
		if line := sc.Text(); strings.Contains(line, secret[:3]) || strings.Contains(line, "?token") {
			t.Errorf("a log line carries the query string: %s", line)
		}
	}
}

// A plain GET of the session path, which is both the WebTransport and the
// WebSocket path, gets the same 426 Upgrade Required over HTTP/2 as over
// HTTP/1.1, naming the WebSocket upgrade.
func TestHostilePlainGetOfTheSessionPathIs426OnHTTP1AndHTTP2(t *testing.T) {
	srv := startServer(t)
	url := "https://" + srv.Ready().TCP + "/conformance"
	type answer struct {
		status  int
		upgrade string
		body    string
	}
	get := func(h2 bool) answer {
		t.Helper()
		tr := &http.Transport{TLSClientConfig: conformancetest.Pinned(srv.Cert), ForceAttemptHTTP2: h2}
		if !h2 {
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		}
		defer tr.CloseIdleConnections()
		rsp, err := (&http.Client{Transport: tr}).Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer rsp.Body.Close()
		if want := map[bool]int{false: 1, true: 2}[h2]; rsp.ProtoMajor != want {
			t.Fatalf("spoke %s, want HTTP/%d", rsp.Proto, want)
		}
		body, _ := io.ReadAll(rsp.Body)
		return answer{rsp.StatusCode, rsp.Header.Get("Upgrade"), string(body)}
	}
	h1, h2 := get(false), get(true)
	if h1.status != http.StatusUpgradeRequired {
		t.Fatalf("HTTP/1.1: %+v, want 426", h1)
	}
	if h2.status != h1.status || h2.body != h1.body {
		t.Fatalf("HTTP/2 answered %+v, HTTP/1.1 %+v: want the same 426", h2, h1)
	}
}
