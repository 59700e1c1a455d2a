package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/transport-io/tiogen/dsl/compat"
)

const warnCase = "testdata/golden/compat-warn-int64-to-int32/"

func TestCompatStrictFailsOnWarnings(t *testing.T) {
	t.Chdir("../..")
	old, new := warnCase+"old.tio", warnCase+"new.tio"
	if out, code := runTiogen("compat", old, new); code != exitOK {
		t.Fatalf("without --strict: exit %d, want 0 (warnings only):\n%s", code, out)
	}
	if out, code := runTiogen("compat", "--strict", old, new); code != exitFail {
		t.Fatalf("--strict: exit %d, want 1:\n%s", code, out)
	}
	if out, code := runTiogen("compat", "--strict", old, old); code != exitOK {
		t.Fatalf("--strict without changes: exit %d, want 0:\n%s", code, out)
	}
}

func TestCompatJSON(t *testing.T) {
	t.Chdir("../..")
	out, code := runTiogen("compat", "--json", warnCase+"old.tio", warnCase+"new.tio")
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	var r compatReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	if r.Warnings != 2 || r.Refusals != 0 || len(r.Changes) != 2 || r.Old != warnCase+"old.tio" {
		t.Fatalf("report %+v", r)
	}
	var raw struct {
		Changes []map[string]any `json:"changes"`
	}
	_ = json.Unmarshal(out, &raw)
	if raw.Changes[0]["level"] != "warn" || raw.Changes[0]["subject"] != "Score.points" {
		t.Fatalf("first change %v, want level warn on Score.points", raw.Changes[0])
	}
	if !strings.Contains(r.Changes[0].Message, "decimal string") || r.Changes[0].Level != compat.Warn {
		t.Fatalf("first change %+v", r.Changes[0])
	}
}

// TestCompatAgainstGitRevision compares a contract with itself at a commit of
// a repository, the way buf breaking --against does.
func TestCompatAgainstGitRevision(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("compat --against needs git on PATH")
	}
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	contracts := filepath.Join(repo, "api")
	if err := os.Mkdir(contracts, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(contracts, "scores.tio")
	write := func(src string) {
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("contract scores\nevent score reliable int64\nevent hello reliable string\n")
	git("add", ".")
	git("commit", "-q", "-m", "v1")
	write("contract scores\nevent score unreliable int64 fallback newest\nevent hello reliable string\n")

	out, code := runTiogen("compat", "--against", "main", file)
	if code != exitFail || !strings.Contains(string(out), "refuse: event 'score'") || !strings.Contains(string(out), "old main:"+file) {
		t.Fatalf("against main: exit %d, want 1 naming the refused event and main:FILE:\n%s", code, out)
	}
	git("commit", "-q", "-am", "v2")
	if out, code := runTiogen("compat", "--against", "HEAD", file); code != exitOK || !strings.Contains(string(out), "0 refusals, 0 warnings") {
		t.Fatalf("against HEAD after committing: exit %d:\n%s", code, out)
	}
	// From inside the folder, with a relative path, as a user types it.
	t.Chdir(contracts)
	if out, code := runTiogen("compat", "--against", "HEAD~1", "scores.tio"); code != exitFail {
		t.Fatalf("relative path: exit %d:\n%s", code, out)
	}
	out, code = runTiogen("compat", "--against", "nope", "scores.tio")
	if code != exitFail || !strings.Contains(string(out), "nope:scores.tio: cannot read it from git") {
		t.Fatalf("unknown revision: exit %d:\n%s", code, out)
	}
	if out, code := runTiogen("compat", "--against", "HEAD", "a.tio", "b.tio"); code != exitUsage {
		t.Fatalf("--against with two files: exit %d:\n%s", code, out)
	}
}
