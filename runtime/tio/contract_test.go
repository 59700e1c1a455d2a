package tio

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/transport-io/tiogen/runtime/wire"
)

func TestContractDerivesIDsAndTable(t *testing.T) {
	c := MustContract("chat",
		Event{Name: "chat", Lane: wire.Reliable, Payload: wire.CodecJSON},
		Event{Name: "cursor", Lane: wire.Unreliable, Payload: wire.CodecJSON, Fallback: Newest},
		Event{Name: "save", Lane: wire.Reliable, Kind: Returns, Payload: wire.CodecJSON, Result: wire.CodecJSON},
	)
	for name, id := range map[string]uint32{"chat": 836792189, "cursor": 1185214141, "save": 360565394} {
		ev, ok := c.EventByName(name)
		if !ok || ev.ID != id {
			t.Fatalf("%s: %+v", name, ev)
		}
		if byID, _ := c.Event(id); byID != ev {
			t.Fatalf("lookup by id %d", id)
		}
	}
	payload := wire.AppendHandshake(nil, wire.Handshake{V: 0, Events: c.Table()})
	want := `{"v":0,"feat":[],"events":[["chat",836792189,"reliable"],["cursor",1185214141,"unreliable"],["save",360565394,"reliable"]]}`
	if string(payload) != want {
		t.Fatalf("handshake %s", payload)
	}
	if f, err := handshakeFrame(c, nil); err != nil || string(f[12:]) != want || wire.FrameType(f[4]) != wire.FrameHandshake {
		t.Fatalf("frame %x %v", f, err)
	}
	if _, err := NewServer(c, ServerOptions{Options: Options{Features: []string{strings.Repeat("f", wire.MaxPayload)}}}); err == nil {
		t.Fatal("a handshake over the 1 MiB cap was accepted")
	}
}

func TestContractRefusesBadDeclarations(t *testing.T) {
	ok := Event{Name: "a", Lane: wire.Reliable, Payload: wire.CodecJSON}
	cases := []struct {
		name   string
		events []Event
		has    string
	}{
		{"DuplicateName", []Event{ok, ok}, "declared twice"},
		{"DuplicateID", []Event{ok, {Name: "b", ID: wire.EventID("a"), Lane: wire.Reliable, Payload: wire.CodecJSON}}, "'a' and 'b' share id"},
		{"NoName", []Event{{Lane: wire.Reliable, Payload: wire.CodecJSON}}, "no name"},
		{"BadLane", []Event{{Name: "x", Lane: "sometimes", Payload: wire.CodecJSON}}, "lane"},
		{"ReservedCodec", []Event{{Name: "x", Lane: wire.Reliable, Payload: 3}}, "codec"},
		{"UnreliableCall", []Event{{Name: "x", Lane: wire.Unreliable, Kind: Returns, Payload: 1, Result: 1}}, "must be reliable"},
		{"CallWithDirection", []Event{{Name: "x", Lane: wire.Reliable, Kind: Yields, From: FromServer, Payload: 1, Result: 1}}, "no direction"},
		{"CallWithoutResult", []Event{{Name: "x", Lane: wire.Reliable, Kind: Returns, Payload: 1}}, "returns slot"},
		{"EmitWithResult", []Event{{Name: "x", Lane: wire.Reliable, Payload: 1, Result: 1}}, "no result"},
		{"ReliableFallback", []Event{{Name: "x", Lane: wire.Reliable, Payload: 1, Fallback: Newest}}, "fallback"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewContract("bad", c.events...)
			if err == nil || !strings.Contains(err.Error(), c.has) {
				t.Fatalf("error %v, want one containing %q", err, c.has)
			}
		})
	}
}

func TestErrorsCarryCodesForIsAndAs(t *testing.T) {
	err := error(Errorf(SessionClosed, "gone"))
	var e *Error
	if !errors.As(err, &e) || e.Code != SessionClosed || e.Remedy == "" {
		t.Fatalf("%#v", err)
	}
	if !errors.Is(err, &Error{Code: SessionClosed}) || errors.Is(err, &Error{Code: Aborted}) {
		t.Fatal("errors.Is does not match on the code")
	}
	ce := callErrorOf(errors.New("plain"))
	if ce.Code != HandlerError || ce.Message != "plain" {
		t.Fatalf("%+v", ce)
	}
	if ce := callErrorOf(Errorf(ValidationFailed, "field 'x'")); ce.Code != ValidationFailed || ce.Message != "field 'x'" {
		t.Fatalf("%+v", ce)
	}
}

// TestContractEventFindsEveryID: the per-frame index finds every event,
// derived ids (§5.4) and explicit ones in a run alike, and no other id.
func TestContractEventFindsEveryID(t *testing.T) {
	var events []Event
	for i := range 40 {
		events = append(events, Event{Name: fmt.Sprintf("derived%d", i), Lane: wire.Reliable, Payload: wire.CodecJSON})
		events = append(events, Event{Name: fmt.Sprintf("explicit%d", i), ID: uint32(i + 1), Lane: wire.Reliable, Payload: wire.CodecJSON})
	}
	c, err := NewContract("index", events...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range c.Events() {
		got, ok := c.Event(want.ID)
		if !ok || got.Name != want.Name {
			t.Fatalf("Event(%d) = %v, %v; want %s", want.ID, got, ok, want.Name)
		}
	}
	for _, id := range []uint32{41, 1000, 0xFFFFFFFF} {
		if e, ok := c.Event(id); ok {
			t.Fatalf("Event(%d) found %s, which has another id", id, e.Name)
		}
	}
}
