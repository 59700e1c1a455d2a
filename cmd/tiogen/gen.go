package main

import (
	"errors"
	"flag"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/transport-io/tiogen/dsl/ir"
	"github.com/transport-io/tiogen/gen/golang"
	"github.com/transport-io/tiogen/gen/typescript"
)

var genCmd = &command{
	name:    "gen",
	args:    "[--go DIR [--go-package NAME]] [--ts DIR] FILE",
	summary: "generate typed Go and TypeScript code from a contract",
	help: `
Check the contract and write the code of each output asked for (at least
one):

--go DIR writes DIR/<contract>.tio.go: its types with JSON codecs and
validation, the runtime contract value, a typed server (Handler,
UnimplementedHandler, NewServer, typed emitters on peers and rooms) and a
typed client (Dial, EmitX, OnX, calls and streams). DIR must exist. The
package is the one the Go files already in DIR declare (a _test package
counts as the package it tests), as stringer and mockgen do; in a folder
without Go files it is the contract name lower-cased without underscores (a
Go keyword or predeclared name gets a trailing underscore), or --go-package.

--ts DIR writes DIR/<contract>.tio.ts for @tiogen/runtime: the types as
interfaces and string-literal unions with their decoders and encoders, the
contract table and a typed client factory (createXClient, with emitX, onX,
calls returning promises and streams as async iterables). DIR must exist.
Names that would clash get a trailing underscore (docs/typescript.md).

The files hold no version and no timestamp: the same contract always
generates the same bytes, so CI can regenerate and run git diff
--exit-code. Use it from go:generate, with tiogen as a tool of the module
(go mod edit -tool=github.com/transport-io/tiogen/cmd/tiogen; the README
says how to require it):

  //go:generate go tool tiogen gen --go . --ts web chat.tio`,
	minArgs: 1,
	maxArgs: 1,
	flags: func(fs *flag.FlagSet) {
		fs.String("go", "", "write the Go file to this `DIR`")
		fs.String("go-package", "", "package `NAME` of the Go file (default: from the contract name)")
		fs.String("ts", "", "write the TypeScript file to this `DIR`")
	},
	run: runGen,
}

func runGen(e *env, flags *flag.FlagSet) int {
	goDir := flags.Lookup("go").Value.String()
	pkg := flags.Lookup("go-package").Value.String()
	tsDir := flags.Lookup("ts").Value.String()
	if goDir == "" && tsDir == "" {
		fmt.Fprintf(e.stderr, "tiogen gen: --go DIR or --ts DIR is required (or both); see tiogen gen --help\n")
		return exitUsage
	}
	if pkg != "" && goDir == "" {
		fmt.Fprintf(e.stderr, "tiogen gen: --go-package needs --go DIR\n")
		return exitUsage
	}
	if pkg != "" {
		if why := golang.ValidPackageName(pkg); why != "" {
			fmt.Fprintf(e.stderr, "tiogen gen: --go-package %q %s\n", pkg, why)
			return exitUsage
		}
	}
	for _, out := range [][2]string{{"--go", goDir}, {"--ts", tsDir}} {
		if out[1] == "" {
			continue
		}
		if st, err := os.Stat(out[1]); err != nil || !st.IsDir() {
			fmt.Fprintf(e.stderr, "tiogen gen: %s %s: no such folder; create it (tiogen writes into an existing folder)\n", out[0], out[1])
			return exitFail
		}
	}
	var c *ir.Contract
	if goDir != "" {
		c = loadForGo(e, flags.Arg(0))
	} else {
		c = load(e, flags.Arg(0))
	}
	if c == nil {
		return exitFail
	}
	if goDir != "" {
		if code := genGo(e, c, goDir, pkg); code != exitOK {
			return code
		}
	}
	if tsDir != "" {
		return genTS(e, c, tsDir)
	}
	return exitOK
}

// withSource is c with its source line relative to the output folder, so
// `tiogen gen` from the repository root and go:generate in the package
// write the same bytes.
func withSource(c *ir.Contract, dir string) *ir.Contract {
	out := *c
	if rel, err := relativeTo(dir, c.Source); err == nil {
		out.Source = rel
	}
	return &out
}

func genGo(e *env, c *ir.Contract, dir, pkg string) int {
	c = withSource(c, dir)
	pkg, err := outputPackage(dir, golang.FileName(c), pkg)
	if err != nil {
		fmt.Fprintf(e.stderr, "tiogen gen: %v\n", err)
		return exitFail
	}
	src, err := golang.Generate(c, golang.Options{Package: pkg})
	if err != nil {
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

func genTS(e *env, c *ir.Contract, dir string) int {
	c = withSource(c, dir)
	src, err := typescript.Generate(c)
	if err != nil {
		fmt.Fprintf(e.stderr, "tiogen gen: %v\n", err)
		return exitFail
	}
	out := filepath.Join(dir, typescript.FileName(c))
	if err := writeIfChanged(out, src); err != nil {
		fmt.Fprintf(e.stderr, "tiogen gen: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(e.stdout, "wrote %s: %s, %s, %s\n", out,
		plural(len(c.Events), "event"), plural(len(c.Types), "type"), plural(len(c.Enums), "enum"))
	return exitOK
}

// outputPackage is the package the generated file joins: the one the Go
// files in dir other than the generated file itself declare (as go/build reads them, so build constraints and
// _test packages count as the go command counts them), or override, or ""
// (the contract's name) when dir has no Go files. An override that differs
// from the folder's package is refused: the file would not compile there.
func outputPackage(dir, generated, override string) (string, error) {
	ctx := build.Default
	ctx.ReadDir = func(dir string) ([]fs.FileInfo, error) {
		entries, err := os.ReadDir(dir)
		var infos []fs.FileInfo
		for _, e := range entries {
			if e.Name() == generated {
				continue
			}
			if info, err := e.Info(); err == nil {
				infos = append(infos, info)
			}
		}
		return infos, err
	}
	p, err := ctx.ImportDir(dir, 0)
	var noGo *build.NoGoError
	var multi *build.MultiplePackageError
	switch {
	case errors.As(err, &noGo) && p.Name == "":
		return override, nil
	case errors.As(err, &multi):
		return "", fmt.Errorf("--go %s: its Go files declare packages %s; keep one package per folder", dir, strings.Join(multi.Packages, " and "))
	case err != nil && p.Name == "":
		return "", fmt.Errorf("--go %s: reading its Go files: %v", dir, err)
	case override != "" && override != p.Name:
		return "", fmt.Errorf("--go-package %s: the Go files in %s are package %s; drop --go-package or write to another folder", override, dir, p.Name)
	}
	return p.Name, nil
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
