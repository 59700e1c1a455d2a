package check

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/transport-io/tiogen/dsl/ir"
	"github.com/transport-io/tiogen/runtime/wire"
)

func mustCheck(t *testing.T, src string) *ir.Contract {
	t.Helper()
	c, diags := Source("t.tio", []byte(src))
	if len(diags) > 0 {
		t.Fatalf("unexpected diagnostics:\n%s", Format(diags))
	}
	return c
}

// TestSpec4_3_ChatExampleTable checks the shipped example against the ids
// the spec's own handshake example gives (§4.1, §4.3) and its ordering.
func TestSpec4_3_ChatExampleTable(t *testing.T) {
	src, err := os.ReadFile("../../examples/chat/chat.tio")
	if err != nil {
		t.Fatal(err)
	}
	c, diags := Source("chat.tio", src)
	if len(diags) > 0 {
		t.Fatalf("example has diagnostics:\n%s", Format(diags))
	}
	specIDs := map[string]uint32{"chat": 836792189, "cursor": 1185214141, "save": 360565394}
	for name, id := range specIDs {
		if ev := c.Event(name); ev == nil || ev.ID != id {
			t.Errorf("event %s: %+v, want id %d", name, ev, id)
		}
	}
	var names []string
	for _, ev := range c.Events {
		names = append(names, ev.Name)
	}
	if got := strings.Join(names, " "); got != "avatar chat cursor history message ping save upload" {
		t.Fatalf("table order %q", got)
	}
	if ping := c.Event("ping"); !ping.ExplicitID || ping.ID != 0x2cf24dba {
		t.Fatalf("ping %+v", ping)
	}
}

func TestExampleIsTheChatGoldenCase(t *testing.T) {
	example, err1 := os.ReadFile("../../examples/chat/chat.tio")
	golden, err2 := os.ReadFile("../../testdata/golden/chat/contract.tio")
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !bytes.Equal(example, golden) {
		t.Fatal("examples/chat/chat.tio and testdata/golden/chat/contract.tio differ; keep them identical")
	}
}

// TestSpec5_4_CollisionPairIsReal guards the id-collision golden case: the
// two names really share the first four bytes of their SHA-256.
func TestSpec5_4_CollisionPairIsReal(t *testing.T) {
	if a, b := wire.EventID("e10732"), wire.EventID("e52101"); a != b || a != 0x10cdda1b {
		t.Fatalf("EventID(e10732)=%#x EventID(e52101)=%#x, want both 0x10cdda1b", a, b)
	}
	_, diags := Source("t.tio", []byte("contract c\nevent e10732 reliable string\nevent e52101 reliable string\n"))
	if len(diags) != 1 || !strings.Contains(diags[0].Message, "'e10732' at t.tio:2:7") ||
		!strings.Contains(diags[0].Message, "'e52101' at t.tio:3:7") {
		t.Fatalf("diagnostics:\n%s", Format(diags))
	}
	c := mustCheck(t, "contract c\nevent e10732 reliable string\nevent e52101 reliable string id 0x10cdda1c\n")
	if c.Event("e10732").ID != 0x10cdda1b || c.Event("e52101").ID != 0x10cdda1c {
		t.Fatalf("ids %#x %#x", c.Event("e10732").ID, c.Event("e52101").ID)
	}
}

func TestEventShapes(t *testing.T) {
	c := mustCheck(t, `contract c
type T { a: int32 }
event emit from server reliable T
event both reliable list<T>
event call reliable T returns map<string, T>
event stream reliable bytes() yields bytes()
event quick unreliable T fallback newest
`)
	cases := []struct {
		name     string
		kind     ir.Kind
		dir      ir.Direction
		payload  ir.Codec
		result   string
		fallback ir.Fallback
	}{
		{"emit", ir.KindEmit, ir.DirServer, ir.CodecJSON, "", ""},
		{"both", ir.KindEmit, ir.DirEither, ir.CodecJSON, "", ""},
		{"call", ir.KindReturns, ir.DirClient, ir.CodecJSON, "map<string, T> json", ""},
		{"stream", ir.KindYields, ir.DirClient, ir.CodecBytes, "bytes() bytes", ""},
		{"quick", ir.KindEmit, ir.DirEither, ir.CodecJSON, "", ir.FallbackNewest},
	}
	for _, want := range cases {
		ev := c.Event(want.name)
		result := ""
		if ev.Result != nil {
			result = ev.Result.Type.String() + " " + string(ev.Result.Codec)
		}
		if ev.Kind != want.kind || ev.Direction != want.dir || ev.Payload.Codec != want.payload ||
			result != want.result || ev.Fallback != want.fallback || ev.WireName != ev.Name {
			t.Errorf("%s: %+v", want.name, ev)
		}
	}
}

func TestDiagnosticsInPositionOrder(t *testing.T) {
	// Events are checked after types, yet their problems come first when
	// they come first in the file.
	_, diags := Source("t.tio", []byte("contract c\nevent e reliable Nope\ntype T { a: Missing }\nevent e reliable string\n"))
	if len(diags) != 3 {
		t.Fatalf("got %d diagnostics:\n%s", len(diags), Format(diags))
	}
	for i := 1; i < len(diags); i++ {
		if diags[i-1].Pos.Line > diags[i].Pos.Line {
			t.Fatalf("out of order:\n%s", Format(diags))
		}
	}
	first := diags[0].String()
	if !strings.HasPrefix(first, "t.tio:2:18: unknown type 'Nope'\n    ") {
		t.Fatalf("format %q", first)
	}
}

func TestIRIsDeterministic(t *testing.T) {
	src, err := os.ReadFile("../../examples/chat/chat.tio")
	if err != nil {
		t.Fatal(err)
	}
	first, _ := Source("chat.tio", src)
	for range 20 {
		again, _ := Source("chat.tio", src)
		if !bytes.Equal(first.JSON(), again.JSON()) {
			t.Fatal("two checks of one contract give different IR JSON")
		}
	}
}

func TestWindowsLineEndingsAndByteOrderMark(t *testing.T) {
	src := "\uFEFF/// Docs.\r\ncontract c\r\ntype T { a: int32 /// A.\r\n}\r\nevent e reliable T\r\n"
	c := mustCheck(t, src)
	if c.Docs != "Docs." || c.Types[0].Fields[0].Docs != "A." {
		t.Fatalf("docs %q and %q", c.Docs, c.Types[0].Fields[0].Docs)
	}
	if p := c.Events[0].Pos; p.Line != 5 || p.Col != 7 {
		t.Fatalf("event at %v, want 5:7", p)
	}
}
