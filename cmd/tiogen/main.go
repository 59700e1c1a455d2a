// Command tiogen checks .tio contracts and prints what peers built from them
// exchange. Run `tiogen help` for the commands.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Exit codes, the same for every command.
const (
	exitOK    = 0
	exitFail  = 1 // a contract has errors, or compat found a refusal (--strict: or a warning)
	exitUsage = 2 // the command line is wrong
)

// command is one subcommand; each lives in its own file.
type command struct {
	name    string
	args    string // argument synopsis, e.g. "FILE..."
	summary string // one line for the command list
	help    string // what it does, for `tiogen CMD --help`
	// minArgs and maxArgs bound the positional arguments (maxArgs < 0: any).
	minArgs, maxArgs int
	// flags, if set, defines the command's flags.
	flags func(fs *flag.FlagSet)
	// run does the work once flags and arguments are valid; fs.Args() are
	// the positional arguments.
	run func(e *env, fs *flag.FlagSet) int
}

// commands in the order `tiogen help` lists them.
var commands = []*command{checkCmd, tableCmd, irCmd, compatCmd, genCmd, versionCmd}

// env is where a command writes; tests pass buffers.
type env struct {
	stdout, stderr io.Writer
}

func main() {
	os.Exit(run(&env{stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:]))
}

func run(e *env, args []string) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if cmd := lookup(args[1]); cmd != nil {
				cmd.usage(e.stdout)
				return exitOK
			}
			fmt.Fprintf(e.stderr, "tiogen: unknown command %q\n\n", args[1])
			usage(e.stderr)
			return exitUsage
		}
		usage(e.stdout)
		return exitOK
	}
	cmd := lookup(name)
	if cmd == nil {
		fmt.Fprintf(e.stderr, "tiogen: unknown command %q\n\n", name)
		usage(e.stderr)
		return exitUsage
	}
	fs, code, ok := cmd.parse(e, args[1:])
	if !ok {
		return code
	}
	return cmd.run(e, fs)
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func usage(w io.Writer) {
	fmt.Fprint(w, "tiogen checks .tio contracts and prints what peers built from them exchange.\n\nUsage:\n\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  tiogen %-20s %s\n", c.name+" "+c.args, c.summary)
	}
	fmt.Fprint(w, "\nRun `tiogen help COMMAND` or `tiogen COMMAND --help` for more.\n"+
		"Exit status: 0 success, 1 a contract has errors (or compat found a refusal, or with --strict a warning), 2 wrong command line.\n"+
		"The contract language: docs/contract-language.md\n")
}

func (c *command) usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: tiogen %s %s\n\n%s\n", c.name, c.args, strings.TrimSpace(c.help))
}
