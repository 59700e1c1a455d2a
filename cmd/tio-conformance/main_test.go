package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/cmd/tio-conformance/conformance"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// The command prints exactly one JSON line once it serves; the line is all
// a client needs (URL, pin, WebSocket URL); the token is enforced; and
// cancelling (what SIGINT and SIGTERM do) shuts down cleanly with status 0.
func TestReadinessLineAndGracefulShutdown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"--addr", "127.0.0.1:0", "--dev", "--dev-dir", t.TempDir(), "--authorize-token", "tok"}, pw, &stderr)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	if !lines.Scan() {
		t.Fatalf("no readiness line; stderr:\n%s", stderr.String())
	}
	var ready map[string]string
	if err := json.Unmarshal(lines.Bytes(), &ready); err != nil {
		t.Fatalf("readiness line %q: %v", lines.Text(), err)
	}
	tcp := ready["tcp"]
	want := map[string]string{
		"url":        "https://" + tcp + "/conformance",
		"certSha256": ready["certSha256"],
		"tcp":        tcp,
		"ws":         "wss://" + tcp + "/conformance",
	}
	if len(ready) != len(want) || !strings.HasPrefix(tcp, "127.0.0.1:") || len(ready["certSha256"]) != 64 {
		t.Fatalf("readiness line %s", lines.Text())
	}
	for k, v := range want {
		if ready[k] != v {
			t.Fatalf("readiness %s = %q, want %q", k, ready[k], v)
		}
	}

	pin, err := webtransport.HashFromHex(ready["certSha256"])
	if err != nil {
		t.Fatal(err)
	}
	dialCtx, dialCancel := context.WithTimeout(ctx, 10*time.Second)
	defer dialCancel()
	_, err = conformance.Dial(dialCtx, ready["url"]+"?token=nope", endpoint.DialOptions{CertHashes: [][32]byte{pin}})
	if wire.CodeOf(err) != wire.Unauthorized || !strings.Contains(err.Error(), conformance.RefusalReason) {
		t.Fatalf("without the token: %v, want WT_UNAUTHORIZED %s", err, conformance.RefusalReason)
	}
	cl, err := conformance.Dial(dialCtx, ready["url"]+"?token=tok", endpoint.DialOptions{CertHashes: [][32]byte{pin}})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := cl.Echo(dialCtx, conformance.Text{Text: "hi"}); err != nil || resp.Text != "hi" {
		t.Fatalf("echo: %+v, %v", resp, err)
	}

	cancel()
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit status %d; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the server did not shut down")
	}
	if lines.Scan() {
		t.Fatalf("a second line on stdout: %q", lines.Text())
	}
	if e := wire.CodeOf(cl.Wait()); e != tio.NoError {
		t.Fatalf("the client's session ended with %v, want WT_NO_ERROR", cl.Err())
	}
	if strings.Contains(stderr.String(), "token=") {
		t.Fatalf("stderr prints the query:\n%s", stderr.String())
	}
}

// A wrong command line exits 2 and says why.
func TestCommandLineErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{nil, "needs a certificate"},
		{[]string{"--dev", "--cert", "c.pem", "--key", "k.pem"}, "one of"},
		{[]string{"--ws-only", "--dev"}, "one of"},
		{[]string{"--cert", "c.pem"}, "go together"},
		{[]string{"--bogus"}, "bogus"},
		{[]string{"--dev", "extra"}, "unexpected argument"},
	} {
		var stderr bytes.Buffer
		if code := run(context.Background(), tc.args, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.says) {
			t.Errorf("%v: status %d, stderr %q; want 2 saying %q", tc.args, code, stderr.String(), tc.says)
		}
	}
}

// A development certificate on a non-loopback address is refused
// (WT_DEV_ONLY), status 1.
func TestDevOnlyOnLoopback(t *testing.T) {
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"--dev", "--dev-dir", t.TempDir(), "--addr", "0.0.0.0:0"}, io.Discard, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), string(wire.DevOnly)) {
		t.Fatalf("status %d, stderr %q; want 1 with %s", code, stderr.String(), wire.DevOnly)
	}
}

// --ws-only serves the WebSocket mapping alone, over plain ws://: the
// readiness line has no WebTransport URL and no pin.
func TestWebSocketOnly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"--addr", "127.0.0.1:0", "--ws-only"}, pw, &stderr)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	if !lines.Scan() {
		t.Fatalf("no readiness line; stderr:\n%s", stderr.String())
	}
	var ready conformance.Ready
	if err := json.Unmarshal(lines.Bytes(), &ready); err != nil {
		t.Fatal(err)
	}
	if ready.URL != "" || ready.CertSHA256 != "" || ready.WS != "ws://"+ready.TCP+"/conformance" {
		t.Fatalf("readiness line %s", lines.Text())
	}
	dialCtx, dialCancel := context.WithTimeout(ctx, 10*time.Second)
	defer dialCancel()
	conn, err := websocket.Dial(dialCtx, ready.WS, websocket.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := tio.NewClient(dialCtx, conn, conformance.Contract, tio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cl := conformance.NewClient(raw)
	heard := make(chan conformance.Text, 1)
	cl.OnHeard(func(v conformance.Text) { heard <- v })
	if err := cl.EmitShout(conformance.Text{Text: "plain"}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-heard:
		if got.Text != "plain" {
			t.Fatalf("heard %+v", got)
		}
	case <-dialCtx.Done():
		t.Fatal("no heard")
	}
	cancel()
	if code := <-exit; code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, stderr.String())
	}
	if e := wire.CodeOf(cl.Wait()); e != tio.NoError {
		t.Fatalf("the client's session ended with %v, want WT_NO_ERROR", cl.Err())
	}
}
