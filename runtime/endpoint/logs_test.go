package endpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// lockedLog collects JSON log lines from many goroutines.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) lines(t *testing.T) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(l.buf.Bytes()), []byte("\n")) {
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("a log line is not JSON: %s", line)
		}
		rec["_line"] = string(line)
		out = append(out, rec)
	}
	return out
}

// Every line the listener and the engine log, at Debug, over both
// mappings: the token in the session URL's query never appears, not even
// where the runtime quotes text a peer or a handler chose (a close reason,
// an authorize error, a handler's panic); every line of a session carries
// its session id, and a session's start, its end and a handler's panic are
// logged at their levels.
func TestLogsCarryTheSessionAndNeverTheQuery(t *testing.T) {
	const secret = "s3cr3t-token"
	var out lockedLog
	logger := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := tio.NewServer(contract, tio.ServerOptions{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.HandleCall(evEcho, func(context.Context, *tio.Peer, []byte) ([]byte, error) {
		panic("while checking https://auth.example/check?token=" + secret)
	})
	l := listen(t, srv, Options{Logger: logger, Authorize: func(_ context.Context, r *transport.Request) (any, error) {
		switch r.Query.Get("token") {
		case secret:
			return nil, nil
		case "backend":
			return nil, errors.New("GET https://auth.example/check?token=" + secret + " failed")
		}
		return nil, Refuse("unknown token")
	}})
	ctx := testCtx(t)
	pin := DialOptions{CertHashes: [][32]byte{cert(t).SHA256}}
	q := "?token=" + secret
	wt, err := Dial(ctx, l.URL()+q, contract, pin)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := DialWebSocket(ctx, l.WebSocketURL()+q, contract, pin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Call(ctx, evEcho, []byte("x")); wire.CodeOf(err) != wire.HandlerError {
		t.Fatalf("the panicking call: %v, want WT_HANDLER_ERROR", err)
	}
	for _, c := range []*tio.Client{wt, ws} {
		// A reason that quotes a URL with the token, as a careless client might.
		if err := c.Close(tio.ProtocolError, "leaving https://app.example/?token="+secret); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := DialWebSocket(ctx, l.WebSocketURL()+"?token=backend", contract, pin); err == nil {
		t.Fatal("a session whose authorize failed was accepted")
	}
	waitFor(t, "both sessions' end to be logged", func() bool {
		n := 0
		for _, rec := range out.lines(t) {
			if rec["msg"] == "session ended" {
				n++
			}
		}
		return n == 2
	})

	seen := map[string]int{}
	sessions := map[string]bool{}
	for _, rec := range out.lines(t) {
		line := rec["_line"].(string)
		if strings.Contains(line, secret) || strings.Contains(line, "?token") {
			t.Errorf("a log line carries the query string: %s", line)
		}
		msg, _ := rec["msg"].(string)
		switch msg {
		case "session started", "session ended", "a call handler panicked; the caller received WT_HANDLER_ERROR":
			id, _ := rec["session"].(string)
			if id == "" || rec["mapping"] == nil {
				t.Errorf("a session's line without its session and mapping: %s", line)
			}
			sessions[id] = true
			seen[msg+" "+rec["level"].(string)]++
		case "websocket: authorize failed":
			seen[msg]++
		}
	}
	for key, want := range map[string]int{
		"session started DEBUG": 2,
		"session ended INFO":    2, // closed WT_PROTOCOL_ERROR by the peer
		"a call handler panicked; the caller received WT_HANDLER_ERROR ERROR": 1,
		"websocket: authorize failed":                                         1,
	} {
		if seen[key] != want {
			t.Errorf("%d lines %q, want %d; all: %v", seen[key], key, want, seen)
		}
	}
	if len(sessions) != 2 {
		t.Errorf("session ids %v, want two distinct", sessions)
	}
}

// An emit handler that panics on one peer's payload: the panic is
// recovered as net/http recovers a handler's, logged at Error with the
// session, reported to OnHandlerError as WT_HANDLER_ERROR, and the session
// reads on over both mappings (the next emit is handled). Without the
// recovery the test process dies.
func TestEmitHandlerPanicIsRecoveredAndTheSessionGoesOn(t *testing.T) {
	var out lockedLog
	logger := slog.New(slog.NewJSONHandler(&out, nil))
	reported := make(chan error, 4)
	srv, err := tio.NewServer(contract, tio.ServerOptions{Logger: logger, OnHandlerError: func(_ *tio.Peer, event string, err error) {
		if event == "say" {
			reported <- err
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.HandleEmit(evSay, func(_ context.Context, p *tio.Peer, payload []byte) error {
		if string(payload) == "boom" {
			panic("a bug in the application")
		}
		return p.Emit(evSaid, payload)
	})
	l := listen(t, srv, Options{Logger: logger})
	ctx := testCtx(t)
	pin := DialOptions{CertHashes: [][32]byte{cert(t).SHA256}}
	wt, err := Dial(ctx, l.URL(), contract, pin)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := DialWebSocket(ctx, l.WebSocketURL(), contract, pin)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*tio.Client{wt, ws} {
		said := received(c, evSaid)
		if err := c.Emit(evSay, []byte("boom")); err != nil {
			t.Fatal(err)
		}
		if err := c.Emit(evSay, []byte("after")); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-said:
			if got != "after" {
				t.Fatalf("said %q, want the emit after the panic", got)
			}
		case <-ctx.Done():
			t.Fatal("the session stopped reading after an emit handler panicked")
		}
		select {
		case err := <-reported:
			if wire.CodeOf(err) != wire.HandlerError || !strings.Contains(err.Error(), "a bug in the application") {
				t.Fatalf("OnHandlerError got %v, want WT_HANDLER_ERROR naming the panic", err)
			}
		case <-ctx.Done():
			t.Fatal("the panic was not reported to OnHandlerError")
		}
		if err := c.Close(tio.NoError, ""); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, rec := range out.lines(t) {
		if rec["msg"] == "an emit handler panicked; the message was dropped and the session goes on" {
			if rec["level"] != "ERROR" || rec["session"] == "" || rec["event"] != "say" {
				t.Errorf("the panic's line lacks its level, session or event: %s", rec["_line"])
			}
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d panic lines, want one per mapping", n)
	}
}
