package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// unpublished is the version a replaced, unpublished module is required at.
const unpublished = "v0.0.0-00010101000000-000000000000"

// TestFreshModuleFollowsTheREADME sets a new module up the way the README
// says (a replace to this tree, go mod edit -tool, the go:generate line in a
// package folder), then runs go generate, go mod tidy, go build and go vet, and a
// server and a client built from it over WebTransport on 127.0.0.1. The
// module proxy from the environment serves the dependencies; the build
// cache is the environment's, so a warm run takes seconds.
func TestFreshModuleFollowsTheREADME(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	if err := os.CopyFS(mod, os.DirFS("testdata/freshmodule")); err != nil {
		t.Fatal(err)
	}
	contract, err := os.ReadFile(filepath.Join(root, "examples/chat/chat.tio"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "chat.tio"), contract, 0o644); err != nil {
		t.Fatal(err)
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	goCmd := func(args ...string) ([]byte, error) {
		cmd := exec.Command(gobin, args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOWORK=off")
		return cmd.CombinedOutput()
	}
	must := func(args ...string) {
		t.Helper()
		if out, err := goCmd(args...); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// The README's steps for a module that uses a clone of tiogen (no
	// version is published, so go get -tool has nothing to fetch).
	must("mod", "init", "example.com/chatapp")
	must("mod", "edit", "-require=github.com/transport-io/tiogen@"+unpublished, "-replace=github.com/transport-io/tiogen="+root)
	must("mod", "edit", "-tool=github.com/transport-io/tiogen/cmd/tiogen")
	must("mod", "tidy")
	must("generate", "./...")
	must("mod", "tidy")
	generated, err := os.ReadFile(filepath.Join(mod, "chat.tio.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(generated, []byte("\npackage chatapp\n")) || !bytes.Contains(generated, []byte("// source: chat.tio\n")) {
		t.Fatalf("chat.tio.go does not join package chatapp or names another source:\n%s", generated[:200])
	}
	bin := filepath.Join(mod, "bin")
	must("build", "-o", bin+string(filepath.Separator), "./...")
	must("vet", "./...")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	server := exec.CommandContext(ctx, filepath.Join(bin, "server"), t.TempDir())
	stdin, err := server.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := server.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var serverErr bytes.Buffer
	server.Stderr = &serverErr
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close() // the server stops when stdin closes
		if err := server.Wait(); err != nil {
			t.Errorf("server: %v\n%s", err, &serverErr)
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, hash, ok := strings.Cut(strings.TrimSpace(line), " ")
	if err != nil || !ok || !strings.HasPrefix(url, "https://127.0.0.1:") {
		t.Fatalf("server printed %q (%v)\n%s", line, err, &serverErr)
	}
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "client"), url, hash).CombinedOutput()
	if err != nil || string(out) != "saved revision 5\n" {
		t.Fatalf("client: %v\n%s", err, out)
	}
}
