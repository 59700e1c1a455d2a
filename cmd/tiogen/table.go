package main

import "flag"

var tableCmd = &command{
	name:    "table",
	args:    "FILE",
	summary: "print the handshake's event table",
	help: `
Print the contract's event table as compact JSON on one line, exactly as the
"events" value of the handshake (frame 0) carries it: [name, id, lane]
triples sorted by name (spec §4.3). Two peers whose tables give a name a
different id or lane refuse each other; see tiogen compat.`,
	minArgs: 1,
	maxArgs: 1,
	run:     runTable,
}

func runTable(e *env, fs *flag.FlagSet) int {
	files := fs.Args()
	c := load(e, files[0])
	if c == nil {
		return exitFail
	}
	e.stdout.Write(append(c.TableJSON(), '\n'))
	return exitOK
}
