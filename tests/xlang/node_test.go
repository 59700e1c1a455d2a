package xlang

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// verdictsInNode runs script, one of runtime/ts/test/xlang, over cases in
// Node: it writes them as JSON to a file, the script writes the TypeScript
// side's verdict on each to another, read back here. It fails, never
// skips, without Node or runtime/ts/node_modules.
func verdictsInNode[V any](t *testing.T, script string, cases any) []V {
	t.Helper()
	runtimeDir := filepath.Join("..", "..", "runtime", "ts")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("the cross-language tests need node (Node.js 20 or later) on PATH: run make deps")
	}
	if _, err := os.Stat(filepath.Join(runtimeDir, "node_modules", "tsx", "package.json")); err != nil {
		t.Fatal("the cross-language tests need runtime/ts/node_modules: run make deps (npm ci --prefix runtime/ts)")
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "cases.json"), filepath.Join(dir, "verdicts.json")
	b, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, node, "--import", "tsx", filepath.Join("test", "xlang", script), in, out)
	run.Dir = runtimeDir
	start := time.Now()
	if msg, err := run.CombinedOutput(); err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, msg)
	}
	t.Logf("node %s took %v", script, time.Since(start).Round(time.Millisecond))
	b, err = os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var verdicts []V
	if err := json.Unmarshal(b, &verdicts); err != nil {
		t.Fatal(err)
	}
	return verdicts
}
