package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the expected files under testdata/golden")

// TestGolden runs tiogen over every case in testdata/golden and compares
// its output byte for byte with the files there:
//
//   - a case with old.tio and new.tio runs `compat old new`, expecting
//     compat.txt; a case named compat-refuse-* must exit 1, others 0;
//   - any other case runs `check contract.tio`; when it fails, the expected
//     output is diagnostics.txt (and exit 1), otherwise `table` and `ir`
//     give table.json and ir.json.
//
// A case may hold no other expected file, so a stale one fails the test.
func TestGolden(t *testing.T) {
	t.Chdir("../..") // paths in the outputs are relative to the repository
	cases, err := filepath.Glob("testdata/golden/*")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, dir := range cases {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got := map[string][]byte{}
			if exists(filepath.Join(dir, "old.tio")) {
				out, code := runTiogen("compat", filepath.Join(dir, "old.tio"), filepath.Join(dir, "new.tio"))
				want := 0
				if strings.HasPrefix(filepath.Base(dir), "compat-refuse-") {
					want = 1
				}
				if code != want {
					t.Errorf("compat exit status %d, want %d", code, want)
				}
				got["compat.txt"] = out
			} else {
				input := filepath.Join(dir, "contract.tio")
				out, code := runTiogen("check", input)
				switch code {
				case exitOK:
					got["table.json"], _ = runTiogen("table", input)
					got["ir.json"], _ = runTiogen("ir", input)
				case exitFail:
					got["diagnostics.txt"] = out
				default:
					t.Fatalf("check exit status %d:\n%s", code, out)
				}
			}
			compareCase(t, dir, got)
		})
	}
}

// runTiogen runs a command in-process and returns stdout followed by
// stderr, and the exit status.
func runTiogen(args ...string) ([]byte, int) {
	var stdout, stderr bytes.Buffer
	code := run(&env{stdout: &stdout, stderr: &stderr}, args)
	return append(stdout.Bytes(), stderr.Bytes()...), code
}

func compareCase(t *testing.T, dir string, got map[string][]byte) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		// Generator outputs (go/, later ts/) are checked by their generator's tests.
		if e.IsDir() || strings.HasSuffix(name, ".tio") {
			continue
		}
		if _, ok := got[name]; !ok {
			if *update {
				os.Remove(filepath.Join(dir, name))
				continue
			}
			t.Errorf("%s: expected file the run does not produce", filepath.Join(dir, name))
		}
	}
	names := make([]string, 0, len(got))
	for name := range got {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		path := filepath.Join(dir, name)
		if *update {
			if err := os.WriteFile(path, got[name], 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v (run go test ./cmd/tiogen -update to create it)", err)
			continue
		}
		if !bytes.Equal(got[name], want) {
			t.Errorf("%s differs (run go test ./cmd/tiogen -update to accept):\n--- got\n%s\n--- want\n%s", path, got[name], want)
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
