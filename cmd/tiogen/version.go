package main

import (
	"flag"
	"fmt"
	"runtime/debug"
)

var versionCmd = &command{
	name:    "version",
	summary: "print tiogen's module version",
	help: `
Print the version of the tiogen module this binary was built from, as Go
records it: the module version for go install, go get -tool and go run
module@version, or (devel) for a build from a checkout.`,
	maxArgs: 0,
	run: func(e *env, _ *flag.FlagSet) int {
		fmt.Fprintf(e.stdout, "tiogen %s\n", version(debug.ReadBuildInfo))
		return exitOK
	},
}

// version is the module version of the main package, or (devel) when the
// build recorded none.
func version(read func() (*debug.BuildInfo, bool)) string {
	bi, ok := read()
	if !ok || bi.Main.Version == "" {
		return "(devel)"
	}
	return bi.Main.Version
}
