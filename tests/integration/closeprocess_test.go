package integration

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/transport-io/tiogen/cmd/tio-conformance/conformance"
	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/wire"
)

// §11, §4.1: a client process that dials, closes with a reason at once and
// exits delivers its handshake and then its close: the server saw every
// session established and ended by the peer with the code and reason sent.
// 100 processes per mapping (./closeclient, built without the race
// detector so each lives milliseconds), a few at a time.
func TestSpec11_CloseReachesServerFromExitingProcess(t *testing.T) {
	const processes, atOnce = 100, 4
	exe := filepath.Join(t.TempDir(), "closeclient")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(gobin, "build", "-o", exe, "./closeclient").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cert, err := devcert.Mint(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	type ending struct {
		established bool
		err         error
	}
	var mu sync.Mutex
	established := map[*tio.Peer]bool{}
	ended := make(chan ending, 2*processes)
	srv, err := tio.NewServer(conformance.Contract, tio.ServerOptions{
		OnSession: func(p *tio.Peer) {
			mu.Lock()
			established[p] = true
			mu.Unlock()
		},
		OnSessionEnd: func(p *tio.Peer, err error) {
			mu.Lock()
			e := ending{established: established[p], err: err}
			mu.Unlock()
			ended <- e
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	l, err := endpoint.Listen(srv, endpoint.Options{Addr: "127.0.0.1:0", Path: "/close", Dev: cert})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	for _, mapping := range []struct{ name, url string }{
		{"webtransport", l.URL()},
		{"websocket", l.WebSocketURL()},
	} {
		t.Run(mapping.name, func(t *testing.T) {
			sem := make(chan struct{}, atOnce)
			var wg sync.WaitGroup
			failed := make(chan error, processes)
			for i := range processes {
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					cmd := exec.Command(exe, "-mapping", mapping.name, "-url", mapping.url,
						"-pin", cert.Hex(), "-reason", fmt.Sprintf("bye-%d", i))
					if out, err := cmd.CombinedOutput(); err != nil {
						failed <- fmt.Errorf("process %d: %v: %s", i, err, out)
					}
				})
			}
			wg.Wait()
			close(failed)
			for err := range failed {
				t.Error(err)
			}
			seen := map[string]bool{}
			for range processes {
				var e ending
				select {
				case e = <-ended:
				case <-time.After(wait):
					t.Fatalf("%d sessions ended, want %d", len(seen), processes)
				}
				var te *tio.Error
				if !errors.As(e.err, &te) || te.Code != wire.NoError {
					t.Errorf("a session ended with %v, want the client's WT_NO_ERROR close", e.err)
					continue
				}
				if !e.established {
					t.Errorf("a session closed (%s) before its handshake reached the server", te.Message)
				}
				seen[te.Message] = true
			}
			for i := range processes {
				if want := fmt.Sprintf("session closed by the peer: bye-%d", i); !seen[want] {
					t.Errorf("no session ended with %q", want)
				}
			}
		})
	}
}
