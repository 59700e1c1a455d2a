package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/cmd/tio-conformance/conformance"
	"github.com/transport-io/tiogen/internal/syncbuf"
	"github.com/transport-io/tiogen/runtime/adapter/nats/natstest"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
)

// host runs the command with args until the test ends and returns its
// readiness line and stderr.
func host(t *testing.T, args ...string) (conformance.Ready, *syncbuf.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	stderr := &syncbuf.Buffer{}
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, args, pw, stderr)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-exit; code != 0 {
			t.Errorf("exit status %d; stderr:\n%s", code, stderr.String())
		}
	})
	lines := bufio.NewScanner(pr)
	if !lines.Scan() {
		t.Fatalf("no readiness line; stderr:\n%s", stderr.String())
	}
	go io.Copy(io.Discard, pr)
	var ready conformance.Ready
	if err := json.Unmarshal(lines.Bytes(), &ready); err != nil {
		t.Fatal(err)
	}
	return ready, stderr
}

// §7.3: with --nats, two conformance servers share their rooms: a say on
// one host reaches the room's members on both, once each.
func TestSpec7_3_HostsShareRoomsThroughNATS(t *testing.T) {
	srv := natstest.Start(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var clients [2]*conformance.Client
	var said [2]chan string
	for i := range clients {
		ready, stderr := host(t, "--addr", "127.0.0.1:0", "--dev", "--dev-dir", dir, "--nats", srv.URL(), "--node-id", []string{"east", "west"}[i])
		if !strings.Contains(stderr.String(), "host ordinal") {
			t.Fatalf("host %d did not report joining NATS; stderr:\n%s", i, stderr.String())
		}
		pin, err := webtransport.HashFromHex(ready.CertSHA256)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := conformance.Dial(ctx, ready.URL, endpoint.DialOptions{CertHashes: [][32]byte{pin}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.Close(tio.NoError, "test over") })
		ch := make(chan string, 16)
		cl.OnSaid(func(v conformance.Text) { ch <- v.Text })
		if _, err := cl.Enter(ctx, conformance.RoomName{Room: "hall"}); err != nil {
			t.Fatal(err)
		}
		clients[i], said[i] = cl, ch
	}
	if err := clients[0].EmitSay(conformance.Text{Text: "from east"}); err != nil {
		t.Fatal(err)
	}
	for i := range said {
		select {
		case got := <-said[i]:
			if got != "from east" {
				t.Fatalf("client %d got %q", i, got)
			}
		case <-ctx.Done():
			t.Fatalf("client %d got nothing", i)
		}
	}
	select {
	case got := <-said[1]:
		t.Fatalf("client 1 got a second said %q", got)
	case <-time.After(100 * time.Millisecond):
	}
}
