package conformance

import (
	"os"
	"testing"

	"github.com/transport-io/tiogen/dsl/check"
	"github.com/transport-io/tiogen/dsl/ir"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/wire"
)

const tioFile = "../../../testdata/conformance/conformance.tio"

// The contract written out in Go is the .tio file's, event for event: ids,
// lanes, kinds, directions, codecs of every slot and fallbacks (§4.3, §5.3,
// §5.4, §7.6).
func TestContractMatchesTioFile(t *testing.T) {
	src, err := os.ReadFile(tioFile)
	if err != nil {
		t.Fatal(err)
	}
	want, diags := check.Source(tioFile, src)
	if len(diags) > 0 {
		t.Fatalf("%s: %s", tioFile, check.Format(diags))
	}
	if Contract.Name() != want.Name {
		t.Errorf("contract name %q, the file says %q", Contract.Name(), want.Name)
	}
	got := Contract.Events()
	if len(got) != len(want.Events) {
		t.Fatalf("%d events in Go, %d in the file", len(got), len(want.Events))
	}
	for _, w := range want.Events {
		g, ok := Contract.EventByName(w.Name)
		if !ok {
			t.Errorf("event '%s' is in the file, not in Go", w.Name)
			continue
		}
		if g.ID != w.ID || g.Lane != w.Lane {
			t.Errorf("event '%s': id %d %s in Go, %d %s in the file", w.Name, g.ID, g.Lane, w.ID, w.Lane)
		}
		if k := kindOf(w.Kind); g.Kind != k {
			t.Errorf("event '%s': kind %s in Go, %s in the file", w.Name, g.Kind, w.Kind)
		}
		if d := directionOf(w); g.From != d {
			t.Errorf("event '%s': direction %d in Go, %s in the file", w.Name, g.From, w.Direction)
		}
		if c := wire.Codec(w.Payload.Codec.Byte()); g.Payload != c {
			t.Errorf("event '%s': payload codec %s in Go, %s in the file", w.Name, g.Payload, c)
		}
		var result wire.Codec
		if w.Result != nil {
			result = wire.Codec(w.Result.Codec.Byte())
		}
		if g.Result != result {
			t.Errorf("event '%s': result codec %s in Go, %s in the file", w.Name, g.Result, result)
		}
		if f := fallbackOf(w.Fallback); g.Fallback != f {
			t.Errorf("event '%s': fallback %d in Go, %q in the file", w.Name, g.Fallback, w.Fallback)
		}
	}
	// The handshake tables are equal too (§4.3: sorted by name).
	table := Contract.Table()
	if len(table) != len(want.Events) {
		t.Fatalf("handshake table has %d entries", len(table))
	}
	if err := wire.CompareTables(table, tableOf(want)); err != nil {
		t.Errorf("handshake tables differ: %v", err)
	}
}

func tableOf(c *ir.Contract) []wire.EventEntry {
	out := make([]wire.EventEntry, len(c.Events))
	for i, e := range c.Events {
		out[i] = wire.EventEntry{Name: e.Name, ID: e.ID, Lane: e.Lane}
	}
	return out
}

func kindOf(k ir.Kind) tio.Kind {
	switch k {
	case ir.KindReturns:
		return tio.Returns
	case ir.KindYields:
		return tio.Yields
	}
	return tio.Emit
}

// directionOf maps the IR's direction onto the engine's: a call's is the
// client's in the IR and implied in the engine.
func directionOf(e ir.Event) tio.Direction {
	if e.Kind != ir.KindEmit {
		return tio.Either
	}
	switch e.Direction {
	case ir.DirClient:
		return tio.FromClient
	case ir.DirServer:
		return tio.FromServer
	}
	return tio.Either
}

func fallbackOf(f ir.Fallback) tio.Fallback {
	if f == ir.FallbackNewest {
		return tio.Newest
	}
	return tio.NoFallback
}
