package wire

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

var specTable = []EventEntry{
	{"chat", 836792189, Reliable},
	{"cursor", 1185214141, Unreliable},
	{"save", 360565394, Reliable},
}

func TestSpec5_4_SpecTableIDsAreDerivedFromNames(t *testing.T) {
	for _, e := range specTable {
		if got := EventID(e.Name); got != e.ID {
			t.Errorf("EventID(%q) = %d, want %d", e.Name, got, e.ID)
		}
	}
}

func TestSpec4_1_HandshakeIsCompactJSON(t *testing.T) {
	got := AppendHandshake([]byte("pre"), Handshake{V: 0, Events: specTable[:1]})
	want := `pre{"v":0,"feat":[],"events":[["chat",836792189,"reliable"]]}`
	if string(got) != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if got := AppendHandshake(nil, Handshake{V: 3, Feat: []string{"b", "a"}}); string(got) != `{"v":3,"feat":["b","a"],"events":[]}` {
		t.Fatalf("got %s", got)
	}
}

func TestSpec4_3_EventsAreSortedByCodePointWithoutTouchingTheCaller(t *testing.T) {
	// U+E000 sorts before U+1F600 by code point; by UTF-16 units it would not.
	events := []EventEntry{{"😀", 1, Reliable}, {"b", 2, Reliable}, {"\ue000", 3, Reliable}, {"B", 4, Reliable}, {"a", 5, Reliable}}
	before := slices.Clone(events)
	got := AppendHandshake(nil, Handshake{Events: events})
	if !slices.Equal(events, before) {
		t.Fatal("AppendHandshake reordered the caller's slice")
	}
	want := `{"v":0,"feat":[],"events":[["B",4,"reliable"],["a",5,"reliable"],["b",2,"reliable"],["` + "\ue000" + `",3,"reliable"],["😀",1,"reliable"]]}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// Names are written as JavaScript's JSON.stringify writes them, so the Go
// and TypeScript runtimes produce the same handshake bytes.
func TestSpec4_1_StringsAreEscapedLikeJSONStringify(t *testing.T) {
	for in, want := range map[string]string{
		"plain":        `"plain"`,
		`q"b\`:         `"q\"b\\"`,
		"\b\t\n\f\r":   `"\b\t\n\f\r"`,
		"\x00\x1f\x7f": `"\u0000\u001f` + "\x7f" + `"`,
		"<&>":          `"<&>"`,
		"\u2028é😀":     "\"\u2028é😀\"",
		"bad\xffutf8":  "\"bad\ufffdutf8\"",
	} {
		got := string(AppendJSONString(nil, in))
		if got != want {
			t.Errorf("%q: got %s, want %s", in, got, want)
		}
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil || (back != in && !strings.Contains(want, "\ufffd")) {
			t.Errorf("%q does not round-trip: %q, %v", in, back, err)
		}
	}
}

func TestSpec4_1_DecodeRoundTripsEncode(t *testing.T) {
	h := Handshake{V: 0, Feat: []string{"emit-per-room", "zz-unknown"}, Events: specTable}
	got, err := DecodeHandshake(AppendHandshake(nil, h))
	if err != nil || got.V != h.V || !slices.Equal(got.Feat, h.Feat) || !slices.Equal(got.Events, h.Events) {
		t.Fatalf("got %+v, %v", got, err)
	}
	// An empty table decodes to an empty, non-nil table.
	got, err = DecodeHandshake([]byte(`{"events":[],"feat":[],"v":0}`))
	if err != nil || got.V != 0 || got.Events == nil || got.Feat == nil {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestSpec4_2_AnotherVersionIsRefusedBeforeItsOtherFieldsAreRead(t *testing.T) {
	// The fields a later version adds, or reshapes, are its own: a v0 reader
	// answers with the version alone, and says which two versions met.
	_, err := DecodeHandshake([]byte(`{"events":{"chat":1},"v":7,"resume":true}`))
	if CodeOf(err) != ProtocolVersionMismatch || err.(*Error).Message != "version 0 here, 7 at the peer" {
		t.Fatalf("got %v", err)
	}
}

func TestSpec4_1_DecodeErrorsNameWhatIsWrong(t *testing.T) {
	for in, want := range map[string]string{
		`{"v":0,"feat":[],"events":[],"token":"x"}`:                          "unknown field 'token'",
		`{"v":"0","feat":[],"events":[]}`:                                    "field 'v' must be an integer",
		`{"v":0,"feat":[],"events":[["chat",1,"ordered"]]}`:                  "event 'chat' has lane 'ordered'",
		`{"v":0,"feat":[],"events":[["chat","1","reliable"]]}`:               "event 'chat' id must be an integer",
		`{"v":0,"feat":[]}`:                                                  "field 'events' is missing",
		`{"v":0,"feat":[],"events":[["a",1,"reliable"],["b",1,"reliable"]]}`: "events 'a' and 'b' share id 1",
	} {
		_, err := DecodeHandshake([]byte(in))
		if CodeOf(err) != ProtocolError || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want it to mention %q", in, err, want)
		}
	}
	long := `{"v":0,"feat":[],"events":[],"` + strings.Repeat("k", 5000) + `":1}`
	if _, err := DecodeHandshake([]byte(long)); len(err.(*Error).Message) > 200 {
		t.Errorf("a hostile key inflates the message to %d bytes", len(err.(*Error).Message))
	}
}

func TestSpec4_3_SameNameDifferentLaneRefuses(t *testing.T) {
	peer := slices.Clone(specTable)
	peer[1].Lane = Reliable
	err := CompareTables(specTable, peer)
	if CodeOf(err) != ContractMismatch || err.(*Error).Message != "event 'cursor' is 'unreliable' here and 'reliable' at the peer" {
		t.Fatalf("got %v", err)
	}
}

func TestSpec4_3_SameNameDifferentIDRefuses(t *testing.T) {
	peer := slices.Clone(specTable)
	peer[2].ID = 7
	err := CompareTables(specTable, peer)
	if CodeOf(err) != ContractMismatch || err.(*Error).Message != "event 'save' has id 360565394 here and 7 at the peer" {
		t.Fatalf("got %v", err)
	}
}

func TestSpec4_3_SameIDDifferentNameRefuses(t *testing.T) {
	peer := []EventEntry{{"talk", 836792189, Reliable}}
	err := CompareTables(specTable, peer)
	if CodeOf(err) != ContractMismatch || err.(*Error).Message != "id 836792189 is event 'chat' here and 'talk' at the peer" {
		t.Fatalf("got %v", err)
	}
}

func TestSpec4_3_NameKnownToOneSideProceeds(t *testing.T) {
	if err := CompareTables(specTable, specTable[:1]); err != nil {
		t.Fatal(err)
	}
	if err := CompareTables(specTable[2:], specTable); err != nil {
		t.Fatal(err)
	}
	if err := CompareTables(nil, specTable); err != nil {
		t.Fatal(err)
	}
}

func TestSpec4_3_FirstConflictInNameOrderIsReported(t *testing.T) {
	local := []EventEntry{{"zeta", 1, Reliable}, {"beta", 2, Reliable}, {"alpha", 3, Reliable}}
	peer := []EventEntry{{"zeta", 1, Unreliable}, {"beta", 9, Reliable}, {"alpha", 3, Reliable}}
	for range 10 { // map iteration must not make it vary
		err := CompareTables(local, peer)
		if err == nil || err.(*Error).Message != "event 'beta' has id 2 here and 9 at the peer" {
			t.Fatalf("got %v", err)
		}
	}
	// Lane is reported before id for the same event.
	err := CompareTables([]EventEntry{{"x", 1, Reliable}}, []EventEntry{{"x", 2, Unreliable}})
	if err == nil || !strings.Contains(err.Error(), "'reliable' here and 'unreliable' at the peer") {
		t.Fatalf("got %v", err)
	}
}

func TestSpec4_RefusalReasonFitsTheWebSocketCap(t *testing.T) {
	name := strings.Repeat("é", 100) // 200 bytes
	err := CompareTables([]EventEntry{{name, 1, Reliable}}, []EventEntry{{name, 1, Unreliable}})
	msg := err.(*Error).Message
	if len(msg) > MaxWebSocketReason || !strings.HasPrefix(msg, "event 'éé") || !utf8.ValidString(msg) {
		t.Fatalf("reason %d bytes: %q", len(msg), msg)
	}
}

func TestSpec4_2_FeaturesIntersectAndUnknownTokensAreIgnored(t *testing.T) {
	got := NegotiateFeatures([]string{"session-resume", "emit-per-room", "emit-per-room"}, []string{"x-from-the-future", "emit-per-room", "session-resume"})
	if !slices.Equal(got, []string{"emit-per-room", "session-resume"}) {
		t.Fatalf("got %q", got)
	}
	if got := NegotiateFeatures([]string{"a"}, nil); got == nil || len(got) != 0 {
		t.Fatalf("got %#v, want empty", got)
	}
}
