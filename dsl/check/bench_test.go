package check

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// bigContract generates a contract of events events and types types, with
// docs, every kind of type reference and every kind of event.
func bigContract(events, types int) []byte {
	var b strings.Builder
	b.WriteString("/// A generated contract for the benchmark.\ncontract big\n\nenum Mood { happy sad angry }\n\n")
	for i := range types {
		fmt.Fprintf(&b, "/// Record %d.\ntype T%d {\n  id: int64\n  name: string /// its name\n  tags: list<string>\n  meta: map<string, json>\n  mood: Mood\n  next?: T%d\n", i, i, i)
		if i > 0 {
			fmt.Fprintf(&b, "  prev: T%d\n", i-1)
		}
		b.WriteString("}\n\n")
	}
	for i := range events {
		t := i % types
		fmt.Fprintf(&b, "/// Event %d.\n", i)
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, "event ev%d from client reliable T%d\n", i, t)
		case 1:
			fmt.Fprintf(&b, "event ev%d unreliable T%d fallback newest\n", i, t)
		case 2:
			fmt.Fprintf(&b, "event ev%d reliable T%d returns list<T%d>\n", i, t, (t+1)%types)
		case 3:
			fmt.Fprintf(&b, "event ev%d reliable map<string, T%d> yields T%d\n", i, t, t)
		default:
			fmt.Fprintf(&b, "event ev%d from server reliable bytes()\n", i)
		}
	}
	return []byte(b.String())
}

func TestBigContractIsValid(t *testing.T) {
	c, diags := Source("big.tio", bigContract(2000, 500))
	if len(diags) > 0 {
		t.Fatalf("generated contract has diagnostics:\n%s", Format(diags[:min(len(diags), 5)]))
	}
	if len(c.Events) != 2000 || len(c.Types) != 500 {
		t.Fatalf("%d events, %d types", len(c.Events), len(c.Types))
	}
}

// BenchmarkParseCheck2000Events parses and checks a contract of 2,000
// events and 500 types. The budget is 200 ms per run.
func BenchmarkParseCheck2000Events(b *testing.B) {
	src := bigContract(2000, 500)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, diags := Source("big.tio", src); len(diags) > 0 {
			b.Fatal(diags[0])
		}
	}
	// The budget: a contract this size parses and checks in under
	// 200 ms on the project's 2-core machine.
	if per := b.Elapsed() / time.Duration(b.N); per > parseCheckBudget {
		b.Errorf("parse+check of 2,000 events and 500 types took %v, over the %v budget", per, parseCheckBudget)
	}
}

const parseCheckBudget = 200 * time.Millisecond
