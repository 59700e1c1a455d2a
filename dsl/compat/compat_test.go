package compat

import (
	"fmt"
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

// TestTypeChangeJudgedByHowValuesTravel: a changed type is judged by the
// JSON form each side writes and reads, per direction of the deploy.
func TestTypeChangeJudgedByHowValuesTravel(t *testing.T) {
	cases := []struct {
		old, new string
		// oldToNew and newToOld are what the message says of each direction.
		oldToNew, newToOld string
	}{
		// 64-bit integers travel as decimal strings, which int32 never reads;
		// int64 reads exact integer numbers, so every int32 arrives.
		{"int64", "int32", "every message from a peer built from old that carries it fails", "every value from a peer built from new is accepted"},
		{"int32", "int64", "every value from a peer built from old is accepted", "every message from a peer built from new that carries it fails"},
		{"int32", "uint32", "a value from a peer built from old that the type in new cannot hold", "a value from a peer built from new that the type in old cannot hold"},
		{"int32", "float64", "every value from a peer built from old is accepted", "a value from a peer built from new that the type in old cannot hold"},
		{"uint64", "int64", "a value from a peer built from old that the type in new cannot hold", "a value from a peer built from new that the type in old cannot hold"},
		{"int64", "string", "every value from a peer built from old is accepted", "a value from a peer built from new that the type in old cannot hold"},
		{"string", "list<string>", "every message from a peer built from old that carries it fails", "every message from a peer built from new that carries it fails"},
		{"json", "string", "a value from a peer built from old that the type in new cannot hold", "every value from a peer built from new is accepted"},
	}
	for _, c := range cases {
		src := "contract c\ntype T { v: %s }\nevent e reliable T\n"
		changes := Compare(contract(t, fmt.Sprintf(src, c.old)), contract(t, fmt.Sprintf(src, c.new)))
		if len(changes) != 1 || changes[0].Level != Warn || changes[0].Subject != "T.v" {
			t.Errorf("%s -> %s: %v, want one warning on T.v", c.old, c.new, changes)
			continue
		}
		msg := changes[0].Message
		halves := strings.SplitN(msg, "; ", 2)
		if len(halves) != 2 || !strings.Contains(halves[1], c.oldToNew) || !strings.Contains(halves[1], c.newToOld) ||
			strings.Index(halves[1], c.oldToNew) > strings.Index(halves[1], c.newToOld) {
			t.Errorf("%s -> %s: %q\nwant old->new %q, then new->old %q", c.old, c.new, msg, c.oldToNew, c.newToOld)
		}
	}
}
