package golang

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/transport-io/tiogen/dsl/check"
	"github.com/transport-io/tiogen/dsl/ir"
	"github.com/transport-io/tiogen/internal/goldentest"
)

var update = flag.Bool("update", false, "rewrite the generated Go goldens under testdata/golden/*/go")

// goldenCases returns every golden case whose contract checks, with its
// contract; each has its generated Go file in <case>/go/.
func goldenCases(t *testing.T) map[string]*ir.Contract {
	t.Helper()
	return goldentest.Cases(t, func(c *ir.Contract) bool { return len(Check(c)) == 0 })
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
			goldentest.Compare(t, dir, "go", FileName(c), got, *update, "./gen/golang")
		})
	}
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
		t.Errorf("examples/chat/chat.tio.go is stale (run go generate ./examples/chat):\n%s", goldentest.FirstDifference(got, want))
	}
}
