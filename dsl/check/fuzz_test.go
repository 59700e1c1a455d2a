package check

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/transport-io/tiogen/dsl/ir"
)

// FuzzParseAndCheck feeds arbitrary bytes to the parser and checker: they
// must never panic or hang, must return a contract exactly when there are
// no diagnostics, and a contract they return must be well-formed.
func FuzzParseAndCheck(f *testing.F) {
	seeds, _ := filepath.Glob("../../testdata/golden/*/*.tio")
	for _, path := range seeds {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Add([]byte("contract c\ntype A { a: list<map<string, list<A>>> }\nevent e unreliable A fallback newest id 0xFFFFFFFF\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		c, diags := Source("f.tio", src)
		if (c == nil) == (len(diags) == 0) {
			t.Fatalf("contract %v with %d diagnostics", c != nil, len(diags))
		}
		for i, d := range diags {
			if d.Pos.Line < 1 || d.Pos.Col < 1 || d.Message == "" || d.Hint == "" {
				t.Fatalf("diagnostic without position, message or hint: %q", d.String())
			}
			if i > 0 && (diags[i-1].Pos.Line > d.Pos.Line ||
				(diags[i-1].Pos.Line == d.Pos.Line && diags[i-1].Pos.Col > d.Pos.Col)) {
				t.Fatalf("diagnostics out of order:\n%s", Format(diags))
			}
		}
		if c == nil {
			return
		}
		if !slices.IsSortedFunc(c.Events, func(a, b ir.Event) int { return strings.Compare(a.Name, b.Name) }) {
			t.Fatal("event table is not sorted by name")
		}
		for _, ev := range c.Events {
			if ev.ID == 0 || ev.WireName != ev.Name || ir.GoName(ev.Name) == "" {
				t.Fatalf("bad event %+v", ev)
			}
		}
		again, _ := Source("f.tio", src)
		if !bytes.Equal(c.JSON(), again.JSON()) {
			t.Fatal("IR JSON differs between two checks")
		}
	})
}
