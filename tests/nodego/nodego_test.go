// Package nodego runs the TypeScript runtime in Node against the Go
// conformance server over the WebSocket mapping (transport-io §3.3): the
// Node tests in runtime/ts/test/node-go, each starting cmd/tio-conformance
// built here from this tree. It fails, never skips, when Node or
// runtime/ts/node_modules is missing: `make deps` installs them.
package nodego

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	repoRoot   = filepath.Join("..", "..")
	runtimeDir = filepath.Join(repoRoot, "runtime", "ts")
)

// TestSpec3_3_NodeClientAgainstGoServer: the runtime's Client in Node,
// through connectWebSocket and Node's WebSocket, against the Go server: the
// emit-lane cases of the conformance contract, DATAGRAM frames (§3.3, §7.6),
// calls failing WT_LANE_UNAVAILABLE, the refusal (§4), close codes both
// ways (§10.2), the fallback from WT_NO_SUPPORT (§10.3), reconnect after
// the server restarts (§11), and the rooms view following JOIN and LEAVE
// (§6.5) against startRoomsServer, in this process.
func TestSpec3_3_NodeClientAgainstGoServer(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("the Node ↔ Go tests need node (Node.js 20 or later) on PATH")
	}
	if _, err := os.Stat(filepath.Join(runtimeDir, "node_modules", "tsx", "package.json")); err != nil {
		t.Fatal("the Node ↔ Go tests need runtime/ts/node_modules: run make deps (npm ci --prefix runtime/ts)")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("building cmd/tio-conformance needs the go command on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	bin := filepath.Join(t.TempDir(), "tio-conformance")
	build := exec.CommandContext(ctx, goTool, "build", "-o", bin, "./cmd/tio-conformance")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/tio-conformance: %v\n%s", err, out)
	}

	files, err := filepath.Glob(filepath.Join(runtimeDir, "test", "node-go", "*.test.ts"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Node ↔ Go tests in runtime/ts/test/node-go (%v)", err)
	}
	args := []string{"--import", "tsx", "--test", "--test-reporter=spec"}
	// Node 20 has a global WebSocket only behind this flag; later Nodes have
	// it by default.
	if probe, err := exec.CommandContext(ctx, node, "-p", "typeof WebSocket").Output(); err != nil || strings.TrimSpace(string(probe)) != "function" {
		args = append([]string{"--experimental-websocket"}, args...)
	}
	for _, f := range files {
		rel, err := filepath.Rel(runtimeDir, f)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, rel)
	}
	run := exec.CommandContext(ctx, node, args...)
	run.Dir = runtimeDir
	run.Env = append(os.Environ(), "TIO_CONFORMANCE="+bin, "TIO_ROOMS_WS="+startRoomsServer(t))
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("node %s:\n%s", strings.Join(args, " "), out)
}
