package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/transport-io/tiogen/gen/golang"
)

var genCmd = &command{
	name:    "gen",
	args:    "--go DIR [--go-package NAME] FILE",
	summary: "generate typed Go code from a contract",
	help: `
Check the contract and write DIR/<contract>.tio.go: its types with JSON
codecs and validation, the runtime contract value, a typed server (Handler,
UnimplementedHandler, NewServer, typed emitters on peers and rooms) and a
typed client (Dial, EmitX, OnX, calls and streams).

The package name is the contract name lower-cased without underscores (a Go
keyword or predeclared name gets a trailing underscore) unless --go-package
names it. The file holds no version and no timestamp: the same contract
always generates the same bytes, so CI can regenerate and run
git diff --exit-code. Use it from go:generate:

  //go:generate go run github.com/transport-io/tiogen/cmd/tiogen gen --go . chat.tio`,
	minArgs: 1,
	maxArgs: 1,
	flags: func(fs *flag.FlagSet) {
		fs.String("go", "", "write the Go file to this `DIR`")
		fs.String("go-package", "", "package `NAME` of the Go file (default: from the contract name)")
	},
	run: runGen,
}

func runGen(e *env, fs *flag.FlagSet) int {
	dir := fs.Lookup("go").Value.String()
	pkg := fs.Lookup("go-package").Value.String()
	if dir == "" {
		fmt.Fprintf(e.stderr, "tiogen gen: --go DIR is required (Go is the only generator so far); see tiogen gen --help\n")
		return exitUsage
	}
	if pkg != "" {
		if why := golang.ValidPackageName(pkg); why != "" {
			fmt.Fprintf(e.stderr, "tiogen gen: --go-package %q %s\n", pkg, why)
			return exitUsage
		}
	}
	c := load(e, fs.Arg(0))
	if c == nil {
		return exitFail
	}
	// The source line names the contract relative to the output folder, so
	// `tiogen gen` from the repository root and go:generate in the package
	// write the same bytes.
	if rel, err := relativeTo(dir, c.Source); err == nil {
		c.Source = rel
	}
	src, err := golang.Generate(c, golang.Options{Package: pkg})
	if err != nil {
		fmt.Fprintf(e.stderr, "tiogen gen: %v\n", err)
		return exitFail
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(e.stderr, "tiogen gen: %v\n", err)
		return exitFail
	}
	out := filepath.Join(dir, golang.FileName(c))
	if err := writeIfChanged(out, src); err != nil {
		fmt.Fprintf(e.stderr, "tiogen gen: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(e.stdout, "wrote %s: package %s, %s, %s, %s\n", out, golang.PackageName(c, pkg),
		plural(len(c.Events), "event"), plural(len(c.Types), "type"), plural(len(c.Enums), "enum"))
	return exitOK
}

// relativeTo returns file's path relative to dir, with forward slashes.
func relativeTo(dir, file string) (string, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	absFile, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(absDir, absFile)
	if err != nil {
		return "", err
	}
	return filepath.ToSlash(rel), nil
}

// writeIfChanged leaves a file with the same bytes untouched, so its
// modification time, and a build cache keyed on it, stay as they were.
func writeIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tiogen-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
