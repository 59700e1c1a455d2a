package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/transport-io/tiogen/dsl/check"
	"github.com/transport-io/tiogen/dsl/compat"
	"github.com/transport-io/tiogen/dsl/ir"
)

var compatCmd = &command{
	name:    "compat",
	args:    "OLD NEW | --against REF FILE",
	summary: "say what a rolling deploy from OLD to NEW does to sessions",
	help: `
Compare two versions of a contract the way two peers built from them do
during a rolling deploy (spec §4.3), and print each difference as

    refuse: the handshake refuses every session between the two peers
            (an event's lane or id changed, or an id now names another event)
    warn:   sessions open but some messages fail: WT_VALIDATION_FAILED on
            that message, or a codec protocol error (§5.3)
    safe:   nothing fails (events added or removed, optional fields added)

A changed type is judged by how its values travel, in each direction: int64
travels as a decimal string, which int32 never reads, so int64 -> int32 fails
every message from the old side.

  --against REF  compare FILE as it is at git revision REF (a commit, branch
                 or tag of the repository holding FILE) with FILE as it is now,
                 as buf breaking --against does
  --strict       exit 1 on warnings too, not only on refusals
  --json         print the verdicts as one JSON object, for tools

Exit status: 0 when nothing refuses (with --strict: nothing refuses or warns),
1 when something does or a contract has errors, 2 when the command line is
wrong.`,
	minArgs: 1,
	maxArgs: 2,
	flags: func(fs *flag.FlagSet) {
		fs.Bool("strict", false, "exit 1 on warnings too")
		fs.Bool("json", false, "print the verdicts as JSON")
		fs.String("against", "", "compare FILE with itself at git revision `REF`")
	},
	run: runCompat,
}

// compatReport is what --json prints.
type compatReport struct {
	Old      string          `json:"old"`
	New      string          `json:"new"`
	Changes  []compat.Change `json:"changes"`
	Refusals int             `json:"refusals"`
	Warnings int             `json:"warnings"`
	Safe     int             `json:"safe"`
	Verdict  string          `json:"verdict"`
}

func runCompat(e *env, fs *flag.FlagSet) int {
	files := fs.Args()
	against := fs.Lookup("against").Value.String()
	strict := fs.Lookup("strict").Value.String() == "true"
	asJSON := fs.Lookup("json").Value.String() == "true"
	var old, new *ir.Contract
	var oldName, newName string
	switch {
	case against != "" && len(files) == 1:
		oldName, newName = against+":"+files[0], files[0]
		old, new = loadAt(e, against, files[0]), load(e, files[0])
	case against == "" && len(files) == 2:
		oldName, newName = files[0], files[1]
		old, new = load(e, files[0]), load(e, files[1])
	default:
		fmt.Fprintf(e.stderr, "tiogen compat: expected OLD NEW, or --against REF FILE; see tiogen compat --help\n")
		return exitUsage
	}
	if old == nil || new == nil {
		return exitFail
	}
	changes := compat.Compare(old, new)
	counts := [3]int{}
	for _, c := range changes {
		counts[c.Level]++
	}
	verdict := "peers built from them can talk during a rolling deploy"
	switch {
	case counts[compat.Refuse] > 0:
		verdict = "a rolling deploy between them is refused"
	case counts[compat.Warn] > 0:
		verdict = "sessions open during a rolling deploy, but the messages warned about fail"
	}
	if asJSON {
		if changes == nil {
			changes = []compat.Change{}
		}
		b, _ := json.MarshalIndent(compatReport{Old: oldName, New: newName, Changes: changes,
			Refusals: counts[compat.Refuse], Warnings: counts[compat.Warn], Safe: counts[compat.Safe], Verdict: verdict}, "", "  ")
		fmt.Fprintf(e.stdout, "%s\n", b)
	} else {
		for _, c := range changes {
			fmt.Fprintln(e.stdout, c)
		}
		fmt.Fprintf(e.stdout, "old %s, new %s: %s, %s, %s; %s\n", oldName, newName,
			plural(counts[compat.Refuse], "refusal"), plural(counts[compat.Warn], "warning"),
			plural(counts[compat.Safe], "safe change"), verdict)
	}
	if counts[compat.Refuse] > 0 || (strict && counts[compat.Warn] > 0) {
		return exitFail
	}
	return exitOK
}

// loadAt reads and checks file as it is at git revision ref of the
// repository that holds it. Diagnostics name it ref:file.
func loadAt(e *env, ref, file string) *ir.Contract {
	name := ref + ":" + file
	abs, err := filepath.Abs(file)
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: cannot read: %v\n", name, err)
		return nil
	}
	// ./ makes the path relative to the folder git runs in, not to the
	// repository's root.
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("git", "-C", filepath.Dir(abs), "show", ref+":./"+filepath.Base(abs))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		why := strings.TrimSpace(stderr.String())
		if why == "" {
			why = err.Error()
		}
		fmt.Fprintf(e.stderr, "%s: cannot read it from git: %s\n    check that %s is a revision of the repository holding %s and that the file existed there\n", name, why, ref, file)
		return nil
	}
	if stdout.Len() > maxContractSize {
		fmt.Fprintf(e.stderr, "%s: cannot read: larger than %d MiB\n", name, maxContractSize>>20)
		return nil
	}
	c, diags := check.Source(name, stdout.Bytes())
	if len(diags) > 0 {
		fmt.Fprint(e.stderr, check.Format(diags))
		fmt.Fprintf(e.stderr, "%s: %s\n", name, plural(len(diags), "error"))
	}
	return c
}
