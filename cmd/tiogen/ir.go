package main

import "flag"

var irCmd = &command{
	name:    "ir",
	args:    "FILE",
	summary: "print the checked contract (IR) as JSON",
	help: `
Print the checked contract as indented JSON: the model the Go and TypeScript
generators read. Events come sorted by name, types and enums in declaration
order; the same contract always prints the same bytes. Each type reference
says how its values travel in JSON ("json": "decimal-string" for int64 and
uint64, "base64" for bytes).`,
	minArgs: 1,
	maxArgs: 1,
	run:     runIR,
}

func runIR(e *env, fs *flag.FlagSet) int {
	files := fs.Args()
	c := load(e, files[0])
	if c == nil {
		return exitFail
	}
	e.stdout.Write(c.JSON())
	return exitOK
}
