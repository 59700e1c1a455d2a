package webtransport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/internal/syncbuf"
	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// §4, §4.3: a refusal closes WT_UNAUTHORIZED with the application's reason,
// before any stream of the server's, and the handler never sees the peer.
func TestSpec4_RefusalClosesUnauthorizedWithReason(t *testing.T) {
	seen := make(chan *transport.Request, 2)
	h := startServer(t, Options{Authorize: func(ctx context.Context, r *transport.Request) (any, error) {
		seen <- r
		if r.Query.Get("token") != "good" {
			return nil, transport.Refuse("bad-token")
		}
		return "alice", nil
	}})

	refused := h.dial("?token=wrong")
	if got := waitDone(t, refused); got != (transport.CloseInfo{Code: wire.CloseUnauthorized, Reason: "bad-token", Remote: true}) {
		t.Fatalf("refused client CloseInfo = %+v", got)
	}
	if _, err := refused.AcceptEmit(ctx5s(t)); wire.CodeOf(err) != wire.SessionClosed {
		t.Fatalf("the refused peer got a stream: %v", err)
	}
	if r := <-seen; r.Path != "/tio" || r.RemoteAddr == "" || r.Query.Get("token") != "wrong" {
		t.Fatalf("authorize saw %+v", r)
	}

	ok := h.dial("?token=good")
	a := h.accept()
	if a.data != "alice" || a.req.Query.Get("token") != "good" {
		t.Fatalf("handler got data %v, query %v", a.data, a.req.Query)
	}
	select {
	case extra := <-h.sessions:
		t.Fatalf("the refused session reached the handler: %+v", extra.req)
	default:
	}
	ok.Close(0, "")
}

func TestSpec4_DefaultRefusalReason(t *testing.T) {
	h := startServer(t, Options{Authorize: func(context.Context, *transport.Request) (any, error) {
		return nil, transport.Refuse("")
	}})
	if got := waitDone(t, h.dial("")); got.Code != wire.CloseUnauthorized || got.Reason != "refused" {
		t.Fatalf("CloseInfo = %+v, want 1007 'refused'", got)
	}
}

// §4: an authorize that reaches no decision closes WT_NO_ERROR "authorize
// failed", never WT_UNAUTHORIZED, and the log never shows the query.
func TestSpec4_AuthorizeFailureIsNotARefusal(t *testing.T) {
	var logs syncbuf.Buffer
	h := startServer(t, Options{
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Authorize: func(ctx context.Context, r *transport.Request) (any, error) {
			return nil, errors.New("backend down while checking https://auth.example/verify?token=" + r.Query.Get("token"))
		},
	})
	got := waitDone(t, h.dial("?token=s3cret"))
	if got != (transport.CloseInfo{Code: wire.CloseNoError, Reason: transport.AuthorizeFailedReason, Remote: true}) {
		t.Fatalf("CloseInfo = %+v", got)
	}
	if !contains(logs.String(), "authorize failed") || !contains(logs.String(), "backend down") {
		t.Fatalf("failure not logged: %s", logs.String())
	}
	if !contains(logs.String(), transport.AuthorizeFailedRemedy) || contains(logs.String(), wire.NoError.Remedy()) {
		t.Fatalf("the log gives the peer's remedy, not the operator's: %s", logs.String())
	}
	if contains(logs.String(), "s3cret") {
		t.Fatalf("the log shows the token: %s", logs.String())
	}
}

func TestSpec4_AuthorizeTimeoutIsAFailure(t *testing.T) {
	h := startServer(t, Options{
		AuthorizeTimeout: 50 * time.Millisecond,
		Authorize: func(ctx context.Context, r *transport.Request) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
	})
	if got := waitDone(t, h.dial("")); got.Code != wire.CloseNoError || got.Reason != transport.AuthorizeFailedReason {
		t.Fatalf("CloseInfo = %+v", got)
	}
}

func httpsClient(cert *devcert.Cert) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2: true,
	}}
}

// §10.3: the HTTPS side answers HEAD /.well-known/transport-io with 200 and
// no body, and advertises HTTP/3 on the same port.
func TestSpec10_3_WellKnownHeadAndAltSvc(t *testing.T) {
	h := startServer(t, Options{})
	port := h.srv.UDPAddr().Port
	if tcpPort := h.srv.TCPAddr().(*net.TCPAddr).Port; tcpPort != port {
		t.Fatalf("TCP port %d differs from UDP port %d", tcpPort, port)
	}
	rsp, err := httpsClient(h.cert).Head("https://" + h.srv.TCPAddr().String() + WellKnownPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(rsp.Body)
	rsp.Body.Close()
	if rsp.StatusCode != http.StatusOK || len(body) != 0 {
		t.Fatalf("HEAD: %d with %d bytes", rsp.StatusCode, len(body))
	}
	if rsp.ProtoMajor != 2 {
		t.Errorf("HTTPS side spoke %s, want HTTP/2", rsp.Proto)
	}
	if want := `h3=":` + strconv.Itoa(port) + `"; ma=86400`; rsp.Header.Get("Alt-Svc") != want {
		t.Fatalf("Alt-Svc = %q, want %q", rsp.Header.Get("Alt-Svc"), want)
	}
}

func TestTCPHandlerServesOtherPaths(t *testing.T) {
	h := startServer(t, Options{TCPHandler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "websocket side "+r.URL.Path)
	})})
	rsp, err := httpsClient(h.cert).Get("https://" + h.srv.TCPAddr().String() + "/ws")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(rsp.Body)
	rsp.Body.Close()
	if string(body) != "websocket side /ws" {
		t.Fatalf("body %q", body)
	}
}

// §2: WebTransport over HTTP/2 is refused, never downgraded to.
func TestSpec2_HTTP2WebTransportRefused(t *testing.T) {
	s := newSite(4433, nil, "https://127.0.0.1:4433/tio", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Fatal("an HTTP/2 WebTransport request reached the application handler")
	}))
	r := httptest.NewRequest(http.MethodConnect, "https://127.0.0.1:4433/tio", nil)
	r.Header.Set(":protocol", "webtransport")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != http.StatusNotImplemented {
		t.Fatalf("status %d, want 501", w.Code)
	}
}

func TestDevManifestOnLoopbackOnly(t *testing.T) {
	h := startServer(t, Options{})
	rsp, err := httpsClient(h.cert).Get("https://" + h.srv.TCPAddr().String() + DevManifestPath)
	if err != nil {
		t.Fatal(err)
	}
	var m devcert.Manifest
	err = json.NewDecoder(rsp.Body).Decode(&m)
	rsp.Body.Close()
	if err != nil || len(m.SHA256) != 32 || m.SHA256[0] != int(h.cert.SHA256[0]) || m.URL != h.srv.URL() || !m.ExpiresAt.Equal(h.cert.NotAfter()) {
		t.Fatalf("manifest %+v, %v", m, err)
	}

	// The same handler refuses a peer that is not on loopback.
	r := httptest.NewRequest(http.MethodGet, DevManifestPath, nil)
	r.RemoteAddr = "192.0.2.7:5000"
	w := httptest.NewRecorder()
	h.srv.site.ServeHTTP(w, r)
	if w.Code != http.StatusForbidden || !contains(w.Body.String(), string(wire.DevOnly)) {
		t.Fatalf("non-loopback peer: %d %s", w.Code, w.Body.String())
	}

	// A listener with a real certificate serves no manifest.
	cert := mintCert(t)
	srv, err := Listen(Options{Addr: "127.0.0.1:0", Path: "/tio", TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert.TLS}},
		Handler: func(transport.Conn, *transport.Request, any) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rsp, err = httpsClient(cert).Get("https://" + srv.TCPAddr().String() + DevManifestPath)
	if err != nil {
		t.Fatal(err)
	}
	rsp.Body.Close()
	if rsp.StatusCode != http.StatusNotFound {
		t.Fatalf("non-dev listener served the manifest: %d", rsp.StatusCode)
	}
}

// §10.3 WT_DEV_ONLY: a development listener binds loopback only.
func TestSpec10_3_DevListenerRefusesNonLoopback(t *testing.T) {
	cert := mintCert(t)
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:4433"} {
		_, err := Listen(Options{Addr: addr, Path: "/tio", Dev: cert, Handler: func(transport.Conn, *transport.Request, any) {}})
		wantCode(t, err, wire.DevOnly)
	}
}

// §10.3 WT_PORT_IN_USE: probed on both protocols before binding; a start
// refused part-way releases what it bound.
func TestSpec10_3_PortInUse(t *testing.T) {
	cert := mintCert(t)
	handler := func(transport.Conn, *transport.Request, any) {}

	// The test always holds the port on one protocol or both, so no other
	// process can take it between steps (CI once lost a TCP port that way).
	tcp, udp := portFreeOnBoth(t)
	addr := tcp.Addr().String()
	udp.Close()
	_, err := Listen(Options{Addr: addr, Path: "/tio", Dev: cert, Handler: handler})
	wantCode(t, err, wire.PortInUse)
	if !contains(err.Error(), addr) || !contains(err.Error(), wire.PortInUse.Remedy()) {
		t.Fatalf("error does not name the port and the remedy: %v", err)
	}
	// The UDP port bound before the TCP refusal was released.
	udp, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: tcp.Addr().(*net.TCPAddr).Port})
	if err != nil {
		t.Fatalf("UDP port still held after a refused start: %v", err)
	}
	defer udp.Close()
	tcp.Close()

	_, err = Listen(Options{Addr: addr, Path: "/tio", Dev: cert, Handler: handler})
	wantCode(t, err, wire.PortInUse)
	if !contains(err.Error(), addr) || !contains(err.Error(), wire.PortInUse.Remedy()) {
		t.Fatalf("error does not name the port and the remedy: %v", err)
	}
}

// portFreeOnBoth binds one port number on 127.0.0.1 over TCP and UDP.
func portFreeOnBoth(t *testing.T) (net.Listener, *net.UDPConn) {
	t.Helper()
	for range 20 {
		tcp, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: tcp.Addr().(*net.TCPAddr).Port})
		if err == nil {
			return tcp, udp
		}
		tcp.Close() // the UDP port is taken: try another
	}
	t.Fatal("no port free on both TCP and UDP")
	return nil, nil
}

// Graceful shutdown: sessions close WT_NO_ERROR, handlers are waited for,
// and the ports are free at once for a restart in the same process.
func TestShutdownClosesSessionsAndReleasesPorts(t *testing.T) {
	cert := mintCert(t)
	handlerStarted, handlerDone := make(chan struct{}), make(chan struct{})
	opts := Options{Addr: "127.0.0.1:0", Path: "/tio", Dev: cert, Handler: func(c transport.Conn, _ *transport.Request, _ any) {
		close(handlerStarted)
		<-c.Done()
		time.Sleep(50 * time.Millisecond) // a handler finishing its work
		close(handlerDone)
	}}
	srv, err := Listen(opts)
	if err != nil {
		t.Fatal(err)
	}
	client, err := Dial(ctx5s(t), srv.URL(), DialOptions{CertHashes: [][32]byte{cert.SHA256}})
	if err != nil {
		t.Fatal(err)
	}
	<-handlerStarted
	if err := srv.Shutdown(ctx5s(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-handlerDone:
	default:
		t.Fatal("Shutdown returned before the handler")
	}
	if got := waitDone(t, client); got != (transport.CloseInfo{Code: wire.CloseNoError, Reason: transport.ShutdownReason, Remote: true}) {
		t.Fatalf("client CloseInfo = %+v", got)
	}
	opts.Addr = srv.UDPAddr().String()
	restarted, err := Listen(opts)
	if err != nil {
		t.Fatalf("restart on the same port: %v", err)
	}
	restarted.Close()
}

func TestShutdownDeadlineCutsTheWait(t *testing.T) {
	cert := mintCert(t)
	started, release := make(chan struct{}), make(chan struct{})
	srv, err := Listen(Options{Addr: "127.0.0.1:0", Path: "/tio", Dev: cert, Handler: func(c transport.Conn, _ *transport.Request, _ any) {
		close(started)
		<-release // ignores Done
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer close(release)
	if _, err := Dial(ctx5s(t), srv.URL(), DialOptions{CertHashes: [][32]byte{cert.SHA256}}); err != nil {
		t.Fatal(err)
	}
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want the deadline", err)
	}
}

func TestMaxSessions(t *testing.T) {
	h := startServer(t, Options{MaxSessions: 1})
	first := h.dial("")
	h.accept()
	_, err := Dial(ctx5s(t), h.srv.URL(), h.dialOptions())
	wantCode(t, err, wire.HandshakeFailed)
	if !contains(err.Error(), "503") {
		t.Fatalf("err = %v, want the 503 named", err)
	}
	first.Close(0, "")
	waitDone(t, first)
	for h.srv.Sessions() != 0 {
		time.Sleep(5 * time.Millisecond)
	}
	h.dial("")
	h.accept()
}

// §10.3: a session request at a path the server does not serve is HTTP 404,
// reported as a wrong path with the path named (never its query).
func TestSpec10_3_WrongPathSaysSo(t *testing.T) {
	h := startServer(t, Options{})
	_, err := Dial(ctx5s(t), "https://"+h.srv.UDPAddr().String()+"/other?token=s3cret", h.dialOptions())
	wantCode(t, err, wire.HandshakeFailed)
	if msg := err.Error(); !contains(msg, "HTTP 404") || !contains(msg, `path "/other"`) || !contains(msg, "Check the URL's path") || contains(msg, "s3cret") {
		t.Fatalf("err = %v", err)
	}
}

func TestCheckOriginRefusesWith403(t *testing.T) {
	h := startServer(t, Options{CheckOrigin: AllowOrigins("http://127.0.0.1:8080")})
	opts := h.dialOptions()
	opts.Header = http.Header{"Origin": {"http://evil.example"}}
	_, err := Dial(ctx5s(t), h.srv.URL(), opts)
	if wire.CodeOf(err) != wire.HandshakeFailed || !contains(err.Error(), "403") {
		t.Fatalf("err = %v, want a 403", err)
	}
	opts.Header = http.Header{"Origin": {"http://127.0.0.1:8080"}}
	if _, err := Dial(ctx5s(t), h.srv.URL(), opts); err != nil {
		t.Fatalf("allowed origin: %v", err)
	}
	h.accept()
}

func TestListenValidatesOptions(t *testing.T) {
	cert := mintCert(t)
	handler := func(transport.Conn, *transport.Request, any) {}
	for name, o := range map[string]Options{
		"no handler": {Addr: "127.0.0.1:0", Path: "/tio", Dev: cert},
		"no path":    {Addr: "127.0.0.1:0", Dev: cert, Handler: handler},
		"no cert":    {Addr: "127.0.0.1:0", Path: "/tio", Handler: handler},
		"bad addr":   {Addr: "127.0.0.1", Path: "/tio", Dev: cert, Handler: handler},
	} {
		if _, err := Listen(o); err == nil {
			t.Errorf("%s: Listen succeeded", name)
		}
	}
}

// A handler's panic that net/http recovers is logged at Error, visible at
// the default level, with no query string in the line.
func TestHandlerPanicIsLoggedAtDefaultLevel(t *testing.T) {
	var out syncbuf.Buffer
	h := startServer(t, Options{
		Logger: slog.New(slog.NewTextHandler(&out, nil)),
		TCPHandler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			panic("handler bug 7f3a")
		}),
	})
	if rsp, err := httpsClient(h.cert).Get("https://" + h.srv.TCPAddr().String() + "/other?token=s3cr3t"); err == nil {
		rsp.Body.Close()
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(out.String(), "handler bug 7f3a") && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	logged := out.String()
	if !strings.Contains(logged, "level=ERROR") || !strings.Contains(logged, "panic serving") {
		t.Fatalf("the recovered panic was not logged at Error:\n%s", logged)
	}
	if strings.Contains(logged, "s3cr3t") {
		t.Fatalf("the log carries the query string:\n%s", logged)
	}
}
