package chat_test

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// process is one example program with its stdin and its stdout lines.
type process struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	// exited is closed once the process ended; err is then how.
	exited chan struct{}
	err    error
}

func start(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, stdin: stdin, lines: make(chan string, 64), exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			for range p.lines { // unblock the reader if nobody read its lines
			}
			<-p.exited
		}
	})
	return p
}

// expect waits for a line starting with prefix and returns it.
func (p *process) expect(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("%s ended before printing %q", filepath.Base(p.cmd.Path), prefix)
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-timeout:
			t.Fatalf("%s printed no line starting %q in 10 s", filepath.Base(p.cmd.Path), prefix)
		}
	}
}

func (p *process) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// exits closes stdin (or signals) and waits for a clean exit.
func (p *process) exits(t *testing.T) {
	t.Helper()
	select {
	case <-p.exited:
		if p.err != nil {
			t.Fatalf("%s: %v", filepath.Base(p.cmd.Path), p.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not exit in 10 s", filepath.Base(p.cmd.Path))
	}
}

// TestExampleEndToEnd builds the example server and client, runs the server
// and two clients over real WebTransport on 127.0.0.1, and checks that each
// client sees the other's messages, that save answers, that a client on the
// WebSocket mapping (§3.3) chats with them through the same server, and that
// a later client streams the history.
func TestExampleEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example programs")
	}
	bin := t.TempDir()
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	build := exec.Command(gobin, "build", "-o", bin+string(filepath.Separator), "./server", "./client")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	server := start(t, filepath.Join(bin, "server"), "-addr", "127.0.0.1:0", "-http", "127.0.0.1:0", "-cert-dir", t.TempDir())
	url := strings.Fields(server.expect(t, "chat server on "))[3]
	hash := strings.Fields(server.expect(t, "certificate sha-256 "))[2]
	if !strings.HasPrefix(url, "https://127.0.0.1:") {
		t.Fatalf("server URL %s", url)
	}
	client := func(name string) *process {
		p := start(t, filepath.Join(bin, "client"), "-url", url, "-hash", hash, "-name", name)
		p.expect(t, "joined lobby as "+name)
		return p
	}

	ann, bob := client("ann"), client("bob")
	ann.send(t, "hello from ann")
	bob.expect(t, "ann: hello from ann")
	bob.send(t, "hi ann")
	ann.expect(t, "bob: hi ann")
	ann.send(t, "/save first draft")
	ann.expect(t, "saved revision 1")

	dan := start(t, filepath.Join(bin, "client"), "-url", url, "-hash", hash, "-name", "dan", "-websocket")
	dan.expect(t, "(no history on the WebSocket mapping")
	dan.expect(t, "joined lobby as dan")
	dan.send(t, "hello over the websocket")
	ann.expect(t, "dan: hello over the websocket")
	bob.expect(t, "dan: hello over the websocket")
	bob.send(t, "welcome dan")
	dan.expect(t, "bob: welcome dan")
	dan.stdin.Close()
	dan.exits(t)

	ann.stdin.Close()
	bob.stdin.Close()
	ann.exits(t)
	bob.exits(t)

	cat := start(t, filepath.Join(bin, "client"), "-url", url, "-hash", hash, "-name", "cat")
	cat.expect(t, "(earlier) ann: hello from ann")
	cat.expect(t, "(earlier) bob: hi ann")
	cat.expect(t, "(earlier) dan: hello over the websocket")
	cat.expect(t, "(earlier) bob: welcome dan")
	cat.expect(t, "joined lobby as cat")
	cat.stdin.Close()
	cat.exits(t)

	// With no -hash a client on loopback pins the development certificate
	// from the server's manifest. A graceful shutdown reaches a connected
	// client as a normal end: it says so and exits 0, on either mapping.
	eve := start(t, filepath.Join(bin, "client"), "-url", url, "-name", "eve")
	eve.expect(t, "joined lobby as eve")
	fay := start(t, filepath.Join(bin, "client"), "-url", url, "-name", "fay", "-websocket")
	fay.expect(t, "joined lobby as fay")
	if err := server.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	eve.expect(t, "the server is shutting down")
	fay.expect(t, "the server is shutting down")
	eve.exits(t)
	fay.exits(t)
	server.exits(t)
}
