package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestExitStatusAndMessages(t *testing.T) {
	t.Chdir("../..")
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.tio")
	if err := os.WriteFile(bad, []byte("contract bad\nevent e reliable Nope\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const chat = "examples/chat/chat.tio"
	cases := []struct {
		name         string
		args         []string
		code         int
		stdout       string // a substring of stdout ("" = must be empty)
		stderrSubstr string // a substring of stderr ("" = must be empty)
	}{
		{"no arguments", nil, exitUsage, "", "Usage:"},
		{"help", []string{"help"}, exitOK, "tiogen check FILE...", ""},
		{"--help", []string{"--help"}, exitOK, "tiogen compat OLD NEW | --against REF FILE", ""},
		{"help for a command", []string{"help", "table"}, exitOK, "Usage: tiogen table FILE", ""},
		{"command --help", []string{"compat", "--help"}, exitOK, "Usage: tiogen compat OLD NEW | --against REF FILE", ""},
		{"unknown command", []string{"generate"}, exitUsage, "", `unknown command "generate"`},
		{"unknown flag", []string{"check", "-x", chat}, exitUsage, "", "flag provided but not defined: -x"},
		{"check without files", []string{"check"}, exitUsage, "", "expected FILE..., got 0 arguments"},
		{"table with two files", []string{"table", chat, chat}, exitUsage, "", "expected FILE, got 2 arguments"},
		{"check valid", []string{"check", chat}, exitOK, "examples/chat/chat.tio: ok, 8 events, 5 types, 1 enum\n", ""},
		{"check one invalid of two", []string{"check", chat, bad}, exitFail, "chat.tio: ok", "bad.tio:2:18: unknown type 'Nope'"},
		{"check missing file", []string{"check", filepath.Join(dir, "none.tio")}, exitFail, "", "none.tio: cannot read: "},
		{"table of invalid", []string{"table", bad}, exitFail, "", "bad.tio: 1 error"},
		{"ir of invalid", []string{"ir", bad}, exitFail, "", "unknown type 'Nope'"},
		{"compat with invalid", []string{"compat", chat, bad}, exitFail, "", "unknown type 'Nope'"},
		{"compat of itself", []string{"compat", chat, chat}, exitOK, "0 refusals, 0 warnings, 0 safe changes", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(&env{stdout: &stdout, stderr: &stderr}, c.args)
			if code != c.code {
				t.Errorf("exit status %d, want %d\nstdout: %s\nstderr: %s", code, c.code, &stdout, &stderr)
			}
			expect(t, "stdout", stdout.String(), c.stdout)
			expect(t, "stderr", stderr.String(), c.stderrSubstr)
		})
	}
}

func expect(t *testing.T, stream, got, want string) {
	t.Helper()
	if want == "" && got != "" {
		t.Errorf("%s not empty: %q", stream, got)
	}
	if !strings.Contains(got, want) {
		t.Errorf("%s %q does not contain %q", stream, got, want)
	}
}

func TestVersion(t *testing.T) {
	for _, c := range []struct {
		info *debug.BuildInfo
		want string
	}{
		{&debug.BuildInfo{Main: debug.Module{Path: "github.com/transport-io/tiogen", Version: "v0.3.1"}}, "v0.3.1"},
		{&debug.BuildInfo{Main: debug.Module{Path: "github.com/transport-io/tiogen", Version: "(devel)"}}, "(devel)"},
		{&debug.BuildInfo{}, "(devel)"},
		{nil, "(devel)"},
	} {
		got := version(func() (*debug.BuildInfo, bool) { return c.info, c.info != nil })
		if got != c.want {
			t.Errorf("version(%+v) = %q, want %q", c.info, got, c.want)
		}
	}
	out, code := runTiogen("version")
	if code != exitOK || !strings.HasPrefix(string(out), "tiogen ") || !strings.HasSuffix(string(out), "\n") {
		t.Fatalf("tiogen version: exit %d, %q", code, out)
	}
	if _, code := runTiogen("version", "extra"); code != exitUsage {
		t.Fatalf("tiogen version extra: exit %d, want 2", code)
	}
}
