package ir

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/transport-io/tiogen/runtime/wire"
)

// TestJSONForms pins how every primitive travels inside JSON; both
// generators encode and decode by these forms. 64-bit integers are decimal
// strings so that a TypeScript peer never rounds them through a float64.
func TestJSONForms(t *testing.T) {
	want := map[Primitive]JSONForm{
		Bool:    FormBoolean,
		String:  FormString,
		Int32:   FormNumber,
		Int64:   FormDecimalString,
		Uint32:  FormNumber,
		Uint64:  FormDecimalString,
		Float64: FormNumber,
		Bytes:   FormBase64,
		JSON:    FormAny,
	}
	if len(want) != len(Primitives) {
		t.Fatalf("%d primitives, %d pinned forms", len(Primitives), len(want))
	}
	for _, p := range Primitives {
		if got := p.Form(); got != want[p] {
			t.Errorf("%s travels as %q, want %q", p, got, want[p])
		}
		ref, err := json.Marshal(PrimitiveRef(p))
		if err != nil {
			t.Fatal(err)
		}
		if wantRef := `{"kind":"primitive","primitive":"` + string(p) + `","json":"` + string(want[p]) + `"}`; string(ref) != wantRef {
			t.Errorf("PrimitiveRef(%s) = %s, want %s", p, ref, wantRef)
		}
	}
}

func TestCodecBytes(t *testing.T) {
	if CodecJSON.Byte() != 0x01 || CodecBytes.Byte() != 0x02 {
		t.Fatalf("codec bytes %#x %#x, want 0x01 0x02 (§5.3)", CodecJSON.Byte(), CodecBytes.Byte())
	}
}

// TestSpec4_3_TableIsNameIdLaneTriples checks the handshake's events value
// has the shape of the spec's example.
func TestSpec4_3_TableIsNameIdLaneTriples(t *testing.T) {
	c := &Contract{Events: []Event{
		{Name: "chat", WireName: "chat", ID: 836792189, Lane: Reliable},
		{Name: "cursor", WireName: "cursor", ID: 1185214141, Lane: Unreliable},
	}}
	want := `[["chat",836792189,"reliable"],["cursor",1185214141,"unreliable"]]`
	if got := string(c.TableJSON()); got != want {
		t.Fatalf("table %s, want %s", got, want)
	}
	frame0 := string(wire.AppendHandshake(nil, wire.Handshake{Events: c.Table()}))
	if !strings.Contains(frame0, `"events":`+want+"}") {
		t.Fatalf("handshake %s does not carry the table %s", frame0, want)
	}
	if got := string((&Contract{}).TableJSON()); got != "[]" {
		t.Fatalf("empty table %s, want []", got)
	}
}

func TestTypeRefString(t *testing.T) {
	ref := MapRef(ListRef(NamedRef("Message", NamedType)))
	if got := ref.String(); got != "map<string, list<Message>>" {
		t.Fatalf("got %q", got)
	}
	if got := BytesSlotRef().String(); got != "bytes()" {
		t.Fatalf("got %q", got)
	}
}
