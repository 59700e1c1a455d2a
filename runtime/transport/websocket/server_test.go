package websocket

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cws "github.com/coder/websocket"

	"github.com/transport-io/tiogen/internal/leakcheck"
	"github.com/transport-io/tiogen/internal/scrape"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// refusingServer runs a Handler whose Authorize returns err and whose
// OnSession counts the sessions that got through.
func refusingServer(t *testing.T, err error) (*server, *atomic.Int32) {
	var sessions atomic.Int32
	srv := startServer(t, &Handler{
		Authorize: func(context.Context, *transport.Request) (any, error) { return nil, err },
		Logger:    quietLogger,
		OnSession: func(c transport.Conn, _ *transport.Request, _ any) {
			sessions.Add(1)
			ss, _ := c.OpenEmit(context.Background())
			_, _ = ss.Write([]byte("frame 0"))
		},
	})
	return srv, &sessions
}

func TestSpec4_RefusalClosesUnauthorizedBeforeFrameZero(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	srv, sessions := refusingServer(t, transport.Refuse("expired"))
	ws := rawDial(t, srv.url)
	// The client sends its own frame 0 at once (§4.1); the refusal comes
	// regardless, and nothing before it.
	_ = ws.Write(context.Background(), cws.MessageBinary, []byte("client frame 0"))
	msgs, ce := readUntilClose(t, ws)
	if len(msgs) != 0 {
		t.Fatalf("the refused peer received %d messages before the close", len(msgs))
	}
	if ce.Code != 4007 || ce.Reason != "expired" {
		t.Fatalf("close %d %q, want 4007 \"expired\"", ce.Code, ce.Reason)
	}
	if sessions.Load() != 0 {
		t.Fatal("OnSession ran for a refused peer")
	}
}

func TestSpec4_RefusalSeenByDialingClient(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	srv, _ := refusingServer(t, transport.Refuse("banned"))
	c := dialConn(t, srv.url, Options{})
	rs, err := c.AcceptEmit(context.Background())
	if err != nil {
		waitDone(t, c) // the refusal may already have ended the session
	} else {
		if n, err := rs.Read(make([]byte, 64)); n != 0 || wire.CodeOf(err) != wire.SessionClosed {
			t.Fatalf("Read on a refused session: %d bytes, %v", n, err)
		}
	}
	want := transport.CloseInfo{Code: wire.CloseUnauthorized, Reason: "banned", Remote: true}
	if info := c.CloseInfo(); info != want {
		t.Fatalf("CloseInfo %+v, want %+v", info, want)
	}
	waitFinished(t, c)
}

func TestSpec4_RefusalReasonFitsWebSocketClose(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	for _, tc := range []struct{ given, sent string }{
		{"", transport.DefaultRefusalReason},
		{strings.Repeat("é", 70), strings.Repeat("é", 61)}, // 140 bytes: cut to 122 on a boundary
	} {
		srv, _ := refusingServer(t, &transport.Refusal{Reason: tc.given})
		ws := rawDial(t, srv.url)
		if _, ce := readUntilClose(t, ws); ce.Code != 4007 || ce.Reason != tc.sent {
			t.Fatalf("close %d %q, want 4007 %q", ce.Code, ce.Reason, tc.sent)
		}
	}
}

func TestSpec4_AuthorizeFailureClosesNoError(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	srv, sessions := refusingServer(t, errors.New("verification backend down"))
	ws := rawDial(t, srv.url)
	msgs, ce := readUntilClose(t, ws)
	if len(msgs) != 0 || ce.Code != 1000 || ce.Reason != "authorize failed" {
		t.Fatalf("%d messages, close %d %q; want none and 1000 \"authorize failed\"", len(msgs), ce.Code, ce.Reason)
	}
	if sessions.Load() != 0 {
		t.Fatal("OnSession ran though authorize reached no decision")
	}
}

func TestSpec4_3_AuthorizeSeesTheRequest(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	var seen *transport.Request
	got := make(chan any, 1)
	srv := startServer(t, &Handler{
		Authorize: func(_ context.Context, r *transport.Request) (any, error) {
			seen = r
			return "alice", nil
		},
		OnSession: func(_ transport.Conn, _ *transport.Request, data any) { got <- data },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h := http.Header{}
	h.Set("Cookie", "session=s3cret")
	h.Set("X-Client", "go")
	c, err := Dial(ctx, srv.url+"?token=abc", DialOptions{Header: h})
	if err != nil {
		t.Fatal(err)
	}
	drain(t, c)
	select {
	case data := <-got:
		if data != "alice" {
			t.Fatalf("OnSession got %v, want authorize's data", data)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnSession did not run")
	}
	if seen.Path != testPath || seen.Query.Get("token") != "abc" || seen.Header.Get("X-Client") != "go" || !strings.HasPrefix(seen.RemoteAddr, "127.0.0.1:") {
		t.Fatalf("authorize saw %+v", seen)
	}
	if ck, err := (&http.Request{Header: seen.Header}).Cookie("session"); err != nil || ck.Value != "s3cret" {
		t.Fatalf("authorize did not see the cookie: %v", err)
	}
	// OnSession returned: the server closed the session WT_NO_ERROR.
	waitDone(t, c)
	if info := c.CloseInfo(); info != (transport.CloseInfo{Remote: true}) {
		t.Fatalf("CloseInfo %+v, want WT_NO_ERROR from the server", info)
	}
	waitFinished(t, c)
}

func TestHandlerAnswersOtherPathsAndPlainRequests(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	var calls atomic.Int32
	srv := startServer(t, &Handler{Authorize: func(context.Context, *transport.Request) (any, error) {
		calls.Add(1)
		return nil, nil
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := Dial(ctx, strings.TrimSuffix(srv.url, testPath)+"/other", DialOptions{})
	if wire.CodeOf(err) != wire.HandshakeFailed || !strings.Contains(err.Error(), "404") {
		t.Fatalf("dial at another path: %v, want WT_HANDSHAKE_FAILED naming 404", err)
	}
	resp, err := http.Get(srv.Server.URL + testPath)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 4 {
		t.Fatalf("a plain GET got %d, want a 4xx", resp.StatusCode)
	}
	if calls.Load() != 0 {
		t.Fatal("authorize ran for a request that was no upgrade at the path")
	}
}

func TestHandlerRefusesCrossOriginBeforeAuthorize(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	var calls atomic.Int32
	authorize := func(context.Context, *transport.Request) (any, error) {
		calls.Add(1)
		return nil, nil
	}
	srv := startServer(t, &Handler{Authorize: authorize})
	admitting := startServer(t, &Handler{Authorize: authorize, OriginPatterns: []string{"app.example"}})
	dial := func(origin string) error { return dialFrom(t, srv.url, origin) }
	if err := dial("https://evil.example"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("cross-origin upgrade: %v, want 403", err)
	}
	if calls.Load() != 0 {
		t.Fatal("authorize ran for a cross-origin request")
	}
	if err := dial(srv.Server.URL); err != nil {
		t.Fatalf("same-origin upgrade: %v", err)
	}
	if err := dialFrom(t, admitting.url, "https://app.example"); err != nil {
		t.Fatalf("admitted origin: %v", err)
	}
	if calls.Load() != 2 {
		t.Fatalf("authorize ran %d times, want 2", calls.Load())
	}
}

func dialFrom(t *testing.T, url, origin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, url, DialOptions{Header: http.Header{"Origin": {origin}}})
	if err == nil {
		_ = c.Close(0, "")
		waitFinished(t, c)
	}
	return err
}

func TestSpec4_AuthorizeTimeoutClosesNoError(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	srv := startServer(t, &Handler{
		AuthorizeTimeout: 20 * time.Millisecond,
		Authorize: func(ctx context.Context, _ *transport.Request) (any, error) {
			<-ctx.Done() // a verification backend that does not answer
			return nil, ctx.Err()
		},
		Logger: quietLogger,
	})
	ws := rawDial(t, srv.url)
	if msgs, ce := readUntilClose(t, ws); len(msgs) != 0 || ce.Code != 1000 || ce.Reason != transport.AuthorizeFailedReason {
		t.Fatalf("%d messages, close %d %q; want none and 1000 %q", len(msgs), ce.Code, ce.Reason, transport.AuthorizeFailedReason)
	}
}

func TestHandlerMaxSessions(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	srv := startServer(t, &Handler{MaxSessions: 1})
	first := dialConn(t, srv.url, Options{})
	sc := srv.session(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := Dial(ctx, srv.url, DialOptions{}); wire.CodeOf(err) != wire.HandshakeFailed || !strings.Contains(err.Error(), "503") {
		t.Fatalf("a second session over MaxSessions: %v, want HTTP 503", err)
	}
	drain(t, sc)
	_ = first.Close(0, "")
	waitFinished(t, sc)
	waitFor(t, "the slot to be released", func() bool {
		c, err := Dial(ctx, srv.url, DialOptions{})
		if err != nil {
			return false
		}
		_ = c.Close(0, "")
		return true
	})
	last := srv.session(t)
	drain(t, last)
	waitFinished(t, last)
}

// A handler shut down closes its sessions WT_NO_ERROR, then answers a
// session request HTTP 503, counted as shutting_down.
func TestHandlerShutdownClosesSessions(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	reg := scrape.Serve(t)
	h := &Handler{Metrics: reg.Metrics}
	srv := startServer(t, h)
	c := dialConn(t, srv.url, Options{})
	sc := srv.session(t)
	drain(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	waitDone(t, c)
	want := transport.CloseInfo{Reason: transport.ShutdownReason, Remote: true}
	if info := c.CloseInfo(); info != want {
		t.Fatalf("CloseInfo %+v, want %+v", info, want)
	}
	waitFinished(t, sc)
	if _, err := Dial(ctx, srv.url, DialOptions{}); wire.CodeOf(err) != wire.HandshakeFailed || !strings.Contains(err.Error(), "503") {
		t.Fatalf("a session after Shutdown: %v, want HTTP 503", err)
	}
	if got := reg.Value(t, "tio_refusals_total", "mapping", "websocket", "reason", "shutting_down"); got != 1 {
		t.Fatalf("%v shutting_down refusals counted, want 1", got)
	}
}
