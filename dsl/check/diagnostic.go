package check

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"
	"github.com/transport-io/tiogen/dsl/ir"
)

// Diagnostic is one problem in a contract: where, what, and what to do.
type Diagnostic struct {
	File    string
	Pos     ir.Pos
	Message string
	Hint    string
}

// String is the diagnostic as tiogen prints it: `file:line:col: message`,
// then the hint on an indented line.
func (d Diagnostic) String() string {
	return fmt.Sprintf("%s:%d:%d: %s\n    %s", d.File, d.Pos.Line, d.Pos.Col, d.Message, d.Hint)
}

// Format is every diagnostic, one after the other, with a final newline.
func Format(diags []Diagnostic) string {
	var b strings.Builder
	for _, d := range diags {
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Sort orders diagnostics by position, then message, so output is stable.
func Sort(diags []Diagnostic) {
	slices.SortStableFunc(diags, func(a, b Diagnostic) int {
		return cmp.Or(cmp.Compare(a.Pos.Line, b.Pos.Line), cmp.Compare(a.Pos.Col, b.Pos.Col),
			cmp.Compare(a.Message, b.Message))
	})
}

func pos(p lexer.Position) ir.Pos { return ir.Pos{Line: p.Line, Col: p.Column} }
