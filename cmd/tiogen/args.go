package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// parse reads the command's flags and checks the number of positional
// arguments. When ok is false the command ends now with code: after
// --help, or on a usage error.
func (c *command) parse(e *env, args []string) (fs *flag.FlagSet, code int, ok bool) {
	fs = flag.NewFlagSet("tiogen "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if c.flags != nil {
		c.flags(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.usage(e.stdout)
			return nil, exitOK, false
		}
		fmt.Fprintf(e.stderr, "tiogen %s: %v\n\n", c.name, err)
		c.usage(e.stderr)
		return nil, exitUsage, false
	}
	if n := fs.NArg(); n < c.minArgs || (c.maxArgs >= 0 && n > c.maxArgs) {
		fmt.Fprintf(e.stderr, "tiogen %s: expected %s, got %s\n\n", c.name, c.args, plural(n, "argument"))
		c.usage(e.stderr)
		return nil, exitUsage, false
	}
	return fs, exitOK, true
}
