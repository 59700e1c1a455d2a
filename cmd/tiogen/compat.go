package main

import (
	"flag"
	"fmt"

	"github.com/transport-io/tiogen/dsl/compat"
)

var compatCmd = &command{
	name:    "compat",
	args:    "OLD NEW",
	summary: "say what a rolling deploy from OLD to NEW does to sessions",
	help: `
Compare two versions of a contract the way two peers built from them do
during a rolling deploy (spec §4.3), and print each difference as

    refuse: the handshake refuses every session between the two peers
            (an event's lane or id changed, or an id now names another event)
    warn:   sessions open but some messages fail: WT_VALIDATION_FAILED on
            that message, or a codec protocol error (§5.3)
    safe:   nothing fails (events added or removed, optional fields added)

Exit status: 0 when nothing refuses, 1 when something does or a contract has
errors, 2 when the command line is wrong.`,
	minArgs: 2,
	maxArgs: 2,
	run:     runCompat,
}

func runCompat(e *env, fs *flag.FlagSet) int {
	files := fs.Args()
	old := load(e, files[0])
	new := load(e, files[1])
	if old == nil || new == nil {
		return exitFail
	}
	changes := compat.Compare(old, new)
	counts := [3]int{}
	for _, c := range changes {
		fmt.Fprintln(e.stdout, c)
		counts[c.Level]++
	}
	verdict := "peers built from them can talk during a rolling deploy"
	switch {
	case counts[compat.Refuse] > 0:
		verdict = "a rolling deploy between them is refused"
	case counts[compat.Warn] > 0:
		verdict = "sessions open during a rolling deploy, but the messages warned about fail"
	}
	fmt.Fprintf(e.stdout, "old %s, new %s: %s, %s, %s; %s\n", files[0], files[1],
		plural(counts[compat.Refuse], "refusal"), plural(counts[compat.Warn], "warning"),
		plural(counts[compat.Safe], "safe change"), verdict)
	if counts[compat.Refuse] > 0 {
		return exitFail
	}
	return exitOK
}
