package main

import (
	"flag"
	"fmt"
)

var checkCmd = &command{
	name:    "check",
	args:    "FILE...",
	summary: "check contracts and report every problem",
	help: `
Check each contract and print every problem found, as

    file:line:col: what is wrong
        what to do about it

ordered by position. A valid contract prints one line with what it declares.
Exit status: 0 when every contract is valid, 1 when any has errors (all of
them are printed), 2 when the command line is wrong.`,
	minArgs: 1,
	maxArgs: -1,
	run:     runCheck,
}

func runCheck(e *env, fs *flag.FlagSet) int {
	files := fs.Args()
	status := exitOK
	for _, path := range files {
		c := load(e, path)
		if c == nil {
			status = exitFail
			continue
		}
		fmt.Fprintf(e.stdout, "%s: ok, %s, %s, %s\n", path,
			plural(len(c.Events), "event"), plural(len(c.Types), "type"), plural(len(c.Enums), "enum"))
	}
	return status
}
