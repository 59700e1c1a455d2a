package websocket

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	cws "github.com/coder/websocket"

	"github.com/transport-io/tiogen/runtime/transport"
)

const testPath = "/tio"

// leakGrace bounds how long a test's goroutines may take to end once its
// cleanups ran. Each test calls leakcheck.Check first, so its check runs
// after the cleanups that close the test's sessions and httptest server.
const leakGrace = 5 * time.Second

// waitFor polls cond for up to 5 s of wall time. It waits for goroutines to
// act, never for a spec timeout: those run on the fake clock.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func waitDone(t *testing.T, c transport.Conn) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done did not fire")
	}
}

// waitFinished waits until the session's socket is closed and its
// goroutines returned.
func waitFinished(t *testing.T, c transport.Conn) {
	t.Helper()
	select {
	case <-c.(*conn).finished:
	case <-time.After(5 * time.Second):
		t.Fatal("the session's goroutines did not end")
	}
}

// server runs a Handler on 127.0.0.1 whose OnSession hands each session
// to the test and holds it until it ends, or closes it when the test ends:
// a session nobody reads does not see its peer leave.
type server struct {
	*httptest.Server
	sessions chan transport.Conn
	url      string
}

func startServer(t *testing.T, h *Handler) *server {
	t.Helper()
	s := &server{sessions: make(chan transport.Conn, 16)}
	testEnded := make(chan struct{})
	if h.OnSession == nil {
		h.OnSession = func(c transport.Conn, _ *transport.Request, _ any) {
			s.sessions <- c
			select {
			case <-c.Done():
			case <-testEnded:
			}
		}
	}
	if h.Path == "" {
		h.Path = testPath
	}
	s.Server = httptest.NewServer(h)
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(testEnded) })
	s.url = "ws" + strings.TrimPrefix(s.Server.URL, "http") + testPath
	return s
}

func (s *server) session(t *testing.T) transport.Conn {
	t.Helper()
	select {
	case c := <-s.sessions:
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no session arrived")
		return nil
	}
}

// rawDial opens a plain coder/websocket client to url: the peer under test
// that can break the rules.
func rawDial(t *testing.T, url string) *cws.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := cws.Dial(ctx, url, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	ws.SetReadLimit(-1)
	t.Cleanup(func() { _ = ws.CloseNow() })
	return ws
}

// rawServer runs a plain coder/websocket server on 127.0.0.1 and hands each
// upgraded socket to the test; the handler holds it until the test ends.
func rawServer(t *testing.T) (url string, sockets chan *cws.Conn) {
	t.Helper()
	sockets = make(chan *cws.Conn, 4)
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := cws.Accept(w, r, nil)
		if err != nil {
			return
		}
		ws.SetReadLimit(-1)
		sockets <- ws
		<-stop
		_ = ws.CloseNow()
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return "ws" + strings.TrimPrefix(srv.URL, "http") + testPath, sockets
}

func nextSocket(t *testing.T, sockets chan *cws.Conn) *cws.Conn {
	t.Helper()
	select {
	case ws := <-sockets:
		return ws
	case <-time.After(5 * time.Second):
		t.Fatal("no socket arrived")
		return nil
	}
}

// readUntilClose reads messages from a raw socket until its close, and
// returns the data messages and the close.
func readUntilClose(t *testing.T, ws *cws.Conn) (msgs [][]byte, ce cws.CloseError) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			if !errors.As(err, &ce) {
				t.Fatalf("the socket ended without a close frame: %v", err)
			}
			return msgs, ce
		}
		msgs = append(msgs, b)
	}
}

func dialConn(t *testing.T, url string, o Options) transport.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, url, DialOptions{Options: o})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(0, "") })
	return c
}

// answerClose reads the raw socket until it ends, so the peer answers a
// close frame (coder/websocket answers while it reads).
func answerClose(ws *cws.Conn) {
	go func() {
		for {
			if _, _, err := ws.Read(context.Background()); err != nil {
				return
			}
		}
	}()
}

// drain reads the session's receive stream until it fails, as the engine
// does, and returns once the socket is being read: only a Read hears the
// peer's messages, its close and its silence.
func drain(t *testing.T, c transport.Conn) {
	t.Helper()
	rs, err := c.AcceptEmit(context.Background())
	if err != nil {
		return
	}
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := rs.Read(buf); err != nil {
				return
			}
		}
	}()
	waitFor(t, "the socket to be read", func() bool { return c.(*conn).reading.Load() || c.(*conn).endedErr() != nil })
}
