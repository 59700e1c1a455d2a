package main

import (
	"fmt"
	"io"
	"os"

	"github.com/transport-io/tiogen/dsl/check"
	"github.com/transport-io/tiogen/dsl/ir"
)

// maxContractSize bounds what tiogen reads: a contract is hand-written, and
// a file this large is a mistake, not a contract.
const maxContractSize = 16 << 20

// load reads and checks one contract, printing its diagnostics and their
// count (or why it could not be read) to stderr. The contract is nil when
// it has errors.
func load(e *env, path string) *ir.Contract {
	src, err := readContract(path)
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: cannot read: %v\n", path, err)
		return nil
	}
	c, diags := check.Source(path, src)
	if len(diags) > 0 {
		fmt.Fprint(e.stderr, check.Format(diags))
		fmt.Fprintf(e.stderr, "%s: %s\n", path, plural(len(diags), "error"))
	}
	return c
}

func readContract(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, maxContractSize+1))
	if err != nil {
		return nil, err
	}
	if len(src) > maxContractSize {
		return nil, fmt.Errorf("larger than %d MiB", maxContractSize>>20)
	}
	return src, nil
}

// plural is "1 error", "2 errors".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
