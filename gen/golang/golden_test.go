package golang

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/transport-io/tiogen/dsl/check"
	"github.com/transport-io/tiogen/dsl/ir"
)

var update = flag.Bool("update", false, "rewrite the generated Go goldens under testdata/golden/*/go")

// goldenCases returns every golden case whose contract checks, with its
// contract; each has its generated Go file in <case>/go/.
func goldenCases(t *testing.T) map[string]*ir.Contract {
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
			continue // a compat case, with old.tio and new.tio
		}
		c, diags := check.Source(path, src)
		if len(diags) > 0 || len(Check(c)) > 0 {
			continue // a diagnostics case
		}
		cases[dir] = c
	}
	return cases
}

// TestGolden generates every case and compares it byte for byte with
// <case>/go/<contract>.tio.go; -update rewrites them. A stale file in a go/
// folder fails too.
func TestGolden(t *testing.T) {
	t.Chdir("../..") // the source line holds the path as given, from the repository root
	cases := goldenCases(t)
	for _, name := range []string{"chat", "types", "gen-keywords", "gen-empty", "gen-bytes"} {
		if cases["testdata/golden/"+name] == nil {
			t.Errorf("golden case %s is missing or does not check", name)
		}
	}
	for dir, c := range cases {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got, err := Generate(c, Options{})
			if err != nil {
				t.Fatal(err)
			}
			again, _ := Generate(c, Options{})
			if !bytes.Equal(got, again) {
				t.Fatal("two generations of the same contract differ")
			}
			goDir := filepath.Join(dir, "go")
			path := filepath.Join(goDir, FileName(c))
			if *update {
				if err := os.MkdirAll(goDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			entries, _ := os.ReadDir(goDir)
			for _, e := range entries {
				if e.Name() != FileName(c) {
					t.Errorf("%s: a file the generator does not produce", filepath.Join(goDir, e.Name()))
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./gen/golang -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the generator's output (run go test ./gen/golang -update to accept):\n%s", path, firstDifference(got, want))
			}
		})
	}
}

func firstDifference(got, want []byte) string {
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

// TestGoldensCompile builds and vets every generated golden against the
// runtime in this repository. testdata is outside ./..., so the packages
// are named explicitly.
func TestGoldensCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds packages with the go command")
	}
	t.Chdir("../..")
	var pkgs []string
	for dir := range goldenCases(t) {
		pkgs = append(pkgs, "./"+filepath.Join(dir, "go"))
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	for _, args := range [][]string{{"build"}, {"vet"}} {
		cmd := exec.Command(gobin, append(args, pkgs...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("go %s %s: %v\n%s", args[0], strings.Join(pkgs, " "), err, out)
		}
	}
}

// TestExampleIsCurrent checks that the committed examples/chat/chat.tio.go
// is what `go generate ./examples/chat` writes.
func TestExampleIsCurrent(t *testing.T) {
	t.Chdir("../../examples/chat") // where its go:generate line runs
	src, err := os.ReadFile("chat.tio")
	if err != nil {
		t.Fatal(err)
	}
	c, diags := check.Source("chat.tio", src)
	if len(diags) > 0 {
		t.Fatalf("chat.tio: %v", diags)
	}
	got, err := Generate(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("chat.tio.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("examples/chat/chat.tio.go is stale (run go generate ./examples/chat):\n%s", firstDifference(got, want))
	}
}
