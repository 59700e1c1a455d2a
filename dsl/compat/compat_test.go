package compat

import (
	"strings"
	"testing"

	"github.com/transport-io/tiogen/dsl/check"
	"github.com/transport-io/tiogen/dsl/ir"
)

func contract(t *testing.T, src string) *ir.Contract {
	t.Helper()
	c, diags := check.Source("t.tio", []byte(src))
	if len(diags) > 0 {
		t.Fatalf("diagnostics:\n%s", check.Format(diags))
	}
	return c
}

// TestSpec4_3_RefusalRules: the three conditions of §4.3 that refuse, and
// the one that proceeds.
func TestSpec4_3_RefusalRules(t *testing.T) {
	base := "contract c\nevent a reliable string\nevent b reliable string id 7\n"
	cases := []struct {
		name, new string
		refuses   bool
		subject   string
	}{
		{"same name, other lane", "contract c\nevent a unreliable string\nevent b reliable string id 7\n", true, "event 'a'"},
		{"same name, other id", "contract c\nevent a reliable string\nevent b reliable string id 8\n", true, "event 'b'"},
		{"same id, other name", "contract c\nevent a reliable string\nevent c reliable string id 7\n", true, "event 'b'"},
		{"name known to one peer", "contract c\nevent a reliable string\n", false, "event 'b'"},
	}
	for _, c := range cases {
		changes := Compare(contract(t, base), contract(t, c.new))
		if Refuses(changes) != c.refuses {
			t.Errorf("%s: refuses %v, want %v: %v", c.name, Refuses(changes), c.refuses, changes)
		}
		if len(changes) == 0 || changes[0].Subject != c.subject {
			t.Errorf("%s: first change %v, want subject %s", c.name, changes, c.subject)
			continue
		}
		if c.refuses && !strings.Contains(changes[0].Message, "WT_CONTRACT_MISMATCH") {
			t.Errorf("%s: %q does not name WT_CONTRACT_MISMATCH", c.name, changes[0].Message)
		}
	}
}

func TestIdenticalContractsHaveNoChanges(t *testing.T) {
	src := "contract c\ntype T { a: int32  b?: list<T> }\nevent a reliable T returns T\n"
	if changes := Compare(contract(t, src), contract(t, src)); len(changes) != 0 {
		t.Fatalf("changes: %v", changes)
	}
}
