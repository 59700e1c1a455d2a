package main

import (
	"flag"
	"fmt"

	"github.com/transport-io/tiogen/dsl/check"
	"github.com/transport-io/tiogen/dsl/ir"
	"github.com/transport-io/tiogen/gen/golang"
)

var checkCmd = &command{
	name:    "check",
	args:    "FILE...",
	summary: "check contracts and report every problem",
	help: `
Check each contract and print every problem found, as

    file:line:col: what is wrong
        what to do about it

ordered by position. Besides the language's rules, it reports every name the
generated Go code could not declare as written (a type named Room, a call
named close, ...): tiogen never renames a contract's names. A valid contract
prints one line with what it declares.
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
		c := loadForGo(e, path)
		if c == nil {
			status = exitFail
			continue
		}
		fmt.Fprintf(e.stdout, "%s: ok, %s, %s, %s\n", path,
			plural(len(c.Events), "event"), plural(len(c.Types), "type"), plural(len(c.Enums), "enum"))
	}
	return status
}

// loadForGo is load, then the Go generator's naming check (golang.Check):
// the contract is nil, and every clash printed, when Go cannot declare one
// of its names as written.
func loadForGo(e *env, path string) *ir.Contract {
	c := load(e, path)
	if c == nil {
		return nil
	}
	if clashes := golang.Check(c); len(clashes) > 0 {
		fmt.Fprint(e.stderr, check.Format(clashes))
		fmt.Fprintf(e.stderr, "%s: %s\n", path, plural(len(clashes), "error"))
		return nil
	}
	return c
}
