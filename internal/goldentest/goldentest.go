// Package goldentest is the golden-file check every emitter's tests share:
// the cases under testdata/golden whose contract checks, and the byte-for-
// byte comparison of a generated file with its committed golden.
package goldentest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/transport-io/tiogen/dsl/check"
	"github.com/transport-io/tiogen/dsl/ir"
)

// Cases returns, keyed by folder, every case in testdata/golden (relative
// to the working directory) whose contract checks and that accept takes
// (nil takes every one). A compat case (old.tio and new.tio) and a
// diagnostics case are not among them.
func Cases(t *testing.T, accept func(*ir.Contract) bool) map[string]*ir.Contract {
	t.Helper()
	dirs, err := filepath.Glob("testdata/golden/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	cases := map[string]*ir.Contract{}
	for _, dir := range dirs {
		path := filepath.Join(dir, "contract.tio")
		src, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		c, diags := check.Source(path, src)
		if len(diags) > 0 || (accept != nil && !accept(c)) {
			continue
		}
		cases[dir] = c
	}
	return cases
}

// Compare checks got against the golden dir/sub/name, first rewriting it
// when update is set. Any other file in dir/sub fails as one the generator
// does not produce. pkg is the test's package path, named in the hint.
func Compare(t *testing.T, dir, sub, name string, got []byte, update bool, pkg string) {
	t.Helper()
	folder := filepath.Join(dir, sub)
	path := filepath.Join(folder, name)
	if update {
		if err := os.MkdirAll(folder, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(folder)
	for _, e := range entries {
		if e.Name() != name {
			t.Errorf("%s: a file the generator does not produce", filepath.Join(folder, e.Name()))
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test %s -update to create it)", err, pkg)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the generator's output (run go test %s -update to accept):\n%s", path, pkg, FirstDifference(got, want))
	}
}

// FirstDifference shows the first line where got and want differ, or ""
// when they are equal.
func FirstDifference(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n--- got\n" + gl + "\n--- want\n" + wl
		}
	}
	return ""
}
