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

// TestSpec3_2_WhoSendsWhat: a call is sent by the client only (the server
// answers it); an emit by the side its direction names, or both.
func TestSpec3_2_WhoSendsWhat(t *testing.T) {
	for _, tc := range []struct {
		kind           Kind
		dir            Direction
		client, server bool
	}{
		{KindEmit, DirEither, true, true},
		{KindEmit, DirClient, true, false},
		{KindEmit, DirServer, false, true},
		{KindReturns, DirClient, true, false},
		{KindYields, DirClient, true, false},
	} {
		e := Event{Kind: tc.kind, Direction: tc.dir}
		if e.SentByClient() != tc.client || e.SentByServer() != tc.server {
			t.Errorf("%s from %s: client %v server %v, want %v %v", tc.kind, tc.dir, e.SentByClient(), e.SentByServer(), tc.client, tc.server)
		}
	}
}

// TestSpec5_3_JSONSlotTypes: each JSON slot type once, in event order,
// payload before result; bytes() slots (codec 0x02) have none.
func TestSpec5_3_JSONSlotTypes(t *testing.T) {
	msg := NamedRef("Message", NamedType)
	list := ListRef(PrimitiveRef(String))
	c := Contract{Events: []Event{
		{Name: "a", Payload: Slot{Type: msg, Codec: CodecJSON}, Result: &Slot{Type: list, Codec: CodecJSON}},
		{Name: "b", Payload: Slot{Type: BytesSlotRef(), Codec: CodecBytes}, Result: &Slot{Type: msg, Codec: CodecJSON}},
		{Name: "c", Payload: Slot{Type: ListRef(PrimitiveRef(String)), Codec: CodecJSON}},
	}}
	var got []string
	for _, ref := range c.JSONSlotTypes() {
		got = append(got, ref.String())
	}
	if want := "Message list<string>"; strings.Join(got, " ") != want {
		t.Errorf("JSONSlotTypes = %v, want %s", got, want)
	}
	if n := len(c.Events[1].Slots()); n != 2 {
		t.Errorf("a call has %d slots, want 2", n)
	}
}
