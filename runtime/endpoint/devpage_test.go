package endpoint

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/wire"
)

func servePage(t *testing.T, l *Listener, page http.Handler) *DevPage {
	t.Helper()
	p, err := l.ServeDevPage("127.0.0.1:0", page)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.Shutdown(ctx); err != nil {
			t.Errorf("page shutdown: %v", err)
		}
	})
	return p
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	rsp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close()
	b, err := io.ReadAll(rsp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rsp.StatusCode, string(b)
}

// §10.3: a page on plain HTTP reads the development manifest from its own
// origin (a browser cannot fetch from the HTTPS side, whose certificate it
// trusts for WebTransport only) and opens the WebSocket mapping over plain
// ws:// there, as a peer of the same server as the listener's sessions.
func TestSpec10_3_DevPageServesManifestAndWebSocketMapping(t *testing.T) {
	srv := newTestServer(t)
	l := listen(t, srv.Server, Options{})
	p := servePage(t, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "the page") }))
	if !strings.HasPrefix(p.URL(), "http://127.0.0.1:") || !strings.HasSuffix(p.URL(), "/") {
		t.Fatalf("page URL %q", p.URL())
	}

	if code, body := get(t, p.URL()); code != http.StatusOK || body != "the page" {
		t.Fatalf("GET /: %d %q", code, body)
	}
	code, body := get(t, p.URL()+strings.TrimPrefix(devcert.ManifestPath, "/"))
	var m devcert.Manifest
	if err := json.Unmarshal([]byte(body), &m); code != http.StatusOK || err != nil {
		t.Fatalf("GET manifest: %d %q %v", code, body, err)
	}
	if m.URL != l.URL() || len(m.SHA256) != 32 || m.SHA256[0] != int(cert(t).SHA256[0]) || m.SHA256[31] != int(cert(t).SHA256[31]) {
		t.Fatalf("manifest %+v names another session URL or pin than the listener's %s", m, l.URL())
	}

	ctx := testCtx(t)
	wtc, err := Dial(ctx, l.URL(), contract, DialOptions{CertHashes: [][32]byte{cert(t).SHA256}})
	if err != nil {
		t.Fatal(err)
	}
	srv.peer(t)
	wsURL := "ws" + strings.TrimPrefix(p.URL(), "http") + "echo"
	wsc, err := DialWebSocket(ctx, wsURL, contract, DialOptions{})
	if err != nil {
		t.Fatalf("plain ws:// on the page's origin: %v", err)
	}
	srv.peer(t)
	wtSaid := received(wtc, evSaid)
	if err := wsc.Emit(evSay, []byte("from the page's origin")); err != nil {
		t.Fatal(err)
	}
	expectPayload(t, wtSaid, "from the page's origin")

	// The listener's shutdown closes the sessions opened through the page:
	// their connections were hijacked, out of the page server's reach.
	shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.Shutdown(shut); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wsc.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the listener's shutdown left the page's WebSocket session open")
	}
	_ = wtc.Wait()
}

// §10.3 WT_DEV_ONLY: the manifest and the plain ws:// mapping answer
// loopback peers only; the page itself is the application's.
func TestSpec10_3_DevHandlerRefusesPeersOffLoopback(t *testing.T) {
	srv := newTestServer(t)
	l := listen(t, srv.Server, Options{})
	h, err := l.DevHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "the page") }))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{devcert.ManifestPath, "/echo"} {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.RemoteAddr = "192.0.2.7:5000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), string(wire.DevOnly)) {
			t.Errorf("%s from 192.0.2.7: %d %q, want 403 %s", path, w.Code, w.Body.String(), wire.DevOnly)
		}
	}
	r := httptest.NewRequest(http.MethodGet, "/index.html", nil)
	r.RemoteAddr = "192.0.2.7:5000"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK || w.Body.String() != "the page" {
		t.Errorf("/index.html: %d %q, want the application's handler", w.Code, w.Body.String())
	}
}

// §10.3 WT_DEV_ONLY: a development page binds loopback only, and only a
// listener with a development certificate has one; a port already held is
// WT_PORT_IN_USE.
func TestSpec10_3_DevPageOnlyOnLoopbackWithDevCertificate(t *testing.T) {
	srv := newTestServer(t)
	l := listen(t, srv.Server, Options{})
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:8080", "no-port"} {
		if p, err := l.ServeDevPage(addr, nil); wire.CodeOf(err) != wire.DevOnly {
			if p != nil {
				_ = p.Shutdown(context.Background())
			}
			t.Errorf("ServeDevPage(%q): %v, want %s", addr, err, wire.DevOnly)
		}
	}

	held := servePage(t, l, nil)
	if _, err := l.ServeDevPage(held.Addr().String(), nil); wire.CodeOf(err) != wire.PortInUse {
		t.Errorf("ServeDevPage on a held port: %v, want %s", err, wire.PortInUse)
	}

	withRealCert, err := Listen(newTestServer(t).Server, Options{Addr: "127.0.0.1:0", Path: "/echo",
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert(t).TLS}}})
	if err != nil {
		t.Fatal(err)
	}
	defer withRealCert.Close()
	if _, err := withRealCert.DevHandler(nil); wire.CodeOf(err) != wire.DevOnly {
		t.Fatalf("DevHandler without a development certificate: %v, want %s", err, wire.DevOnly)
	}
}
