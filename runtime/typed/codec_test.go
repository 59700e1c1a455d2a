package typed

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/transport-io/tiogen/runtime/wire"
)

// note is a record written the way gen/golang writes them, so these tests
// exercise the codec through the same calls generated code makes.
type note struct {
	Title string
	Count *int64
	Tags  []string
	Next  *note
	Kind  kind
}

type kind string

var valuesKind = []kind{"plain", "urgent"}

func encodeKind(e *Encoder, v kind) { EncodeEnum(e, v, valuesKind) }
func decodeKind(d *Decoder) kind    { return Enum(d, valuesKind) }

func encodeNote(e *Encoder, v note) {
	f := e.Object()
	f.Key(e, "title")
	e.String(v.Title)
	if v.Count != nil {
		f.Key(e, "count")
		e.Int64(*v.Count)
	}
	f.Key(e, "tags")
	EncodeList(e, v.Tags, (*Encoder).String)
	if v.Next != nil {
		f.Key(e, "next")
		encodeNote(e, *v.Next)
	}
	f.Key(e, "kind")
	encodeKind(e, v.Kind)
	f.End(e)
}

func decodeNote(d *Decoder) (v note) {
	var seen [3]bool
	m := d.Object()
	for m.Next(d) {
		switch string(m.Key()) {
		case "title":
			v.Title, seen[0] = d.String(), true
		case "count":
			v.Count = Optional(d, (*Decoder).Int64)
		case "tags":
			v.Tags, seen[1] = List(d, (*Decoder).String), true
		case "next":
			v.Next = Optional(d, decodeNote)
		case "kind":
			v.Kind, seen[2] = decodeKind(d), true
		default:
			d.Skip()
		}
	}
	d.Require(seen[:], "title", "tags", "kind")
	return v
}

var codecNote = JSON[note]{Encode: encodeNote, Decode: decodeNote}

func TestRoundTrip(t *testing.T) {
	n := int64(-9007199254740993)
	in := note{Title: "hé \"q\"\n\x01", Count: &n, Tags: []string{"a", "b"}, Kind: "urgent",
		Next: &note{Title: "inner", Tags: nil, Kind: "plain"}}
	b, err := codecNote.Append(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"title":"hé \"q\"\n\u0001","count":"-9007199254740993","tags":["a","b"],"next":{"title":"inner","tags":[],"kind":"plain"},"kind":"urgent"}`
	if string(b) != want {
		t.Fatalf("encoded\n%s\nwant\n%s", b, want)
	}
	out, err := codecNote.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if out.Title != in.Title || *out.Count != n || len(out.Tags) != 2 || out.Next.Title != "inner" || out.Kind != "urgent" {
		t.Fatalf("decoded %+v", out)
	}
}

// TestSpec6_4_ValidationNamesFieldPath checks the §6.4 message form:
// WT_VALIDATION_FAILED with "field 'path' ...".
func TestSpec6_4_ValidationNamesFieldPath(t *testing.T) {
	for _, tc := range []struct{ in, msg string }{
		{`{"title":5,"tags":[],"kind":"plain"}`, "field 'title' must be a string, not '5'"},
		{`{"title":"t","tags":[],"kind":"plain","next":{"title":"x","tags":[],"kind":"plain","next":{"tags":[],"kind":"plain"}}}`, "field 'next.next.title' is required"},
		{`{"title":"t","tags":["a",3],"kind":"plain"}`, "field 'tags[1]' must be a string, not '3'"},
		{`{"title":"t","tags":[],"kind":"loud"}`, "field 'kind' must be one of 'plain', 'urgent', not '\"loud\"'"},
		{`{"title":"t","tags":[],"kind":"plain","count":"1.5"}`, "field 'count' must be an integer from -9223372036854775808 to 9223372036854775807 (a decimal string), not '\"1.5\"'"},
		{`{"title":"t","tags":[],"kind":"plain","count":"9223372036854775808"}`, "field 'count' must be an integer"},
		{`{"title":"t","tags":null,"kind":"plain"}`, "field 'tags' must be an array, not null"},
		{`[]`, "the payload must be an object, not an array"},
		{`{"title":"t","tags":[],"kind":"plain"} x`, "the payload is not valid JSON: data after the value"},
		{"{\"title\":\"t\",\"tags\":[],\"kind\":\"plain\"}\x00", "the payload is not valid JSON: data after the value"},
		{`{"title":"t","tags":[],"kind":"plain",}`, "is not valid JSON"},
		{`{"title":"t" "tags":[]}`, "is not valid JSON: expected ',' or '}'"},
		{``, "the payload must be an object, not nothing"},
		{`{"title":"\ud83d\ude00","tags":[],"kind":"plain","x":01}`, "is not valid JSON: bad number '01'"},
		{`{"title":"t","tags":[],"kind":"plain","x":{"\x":1}}`, "field 'x' is not valid JSON: bad escape"},
		{"{\"title\":\"\xff\",\"tags\":[],\"kind\":\"plain\"}", "the payload is not UTF-8"},
		{"{\"title\":\"t\",\"tags\":[],\"kind\":\"plain\",\"extra\":\"\xff\"}", "the payload is not UTF-8"},
	} {
		_, err := codecNote.Parse([]byte(tc.in))
		if err == nil {
			t.Errorf("%s: no error", tc.in)
			continue
		}
		if wire.CodeOf(err) != wire.ValidationFailed || !strings.Contains(err.(*wire.Error).Message, tc.msg) {
			t.Errorf("%s:\n got %v\nwant %s", tc.in, err, tc.msg)
		}
	}
}

func TestDecodeAccepts(t *testing.T) {
	for _, in := range []string{
		` { "kind" : "plain" , "tags" : [ ] , "title" : "" } `,
		`{"title":"t","tags":[],"kind":"plain","count":42}`,                                 // an exact integer number is accepted for int64
		`{"title":"t","tags":[],"kind":"plain","count":null}`,                               // null is absent for an optional field
		`{"title":"t","tags":[],"kind":"plain","extra":{"a":[1,2.5e3,true,null,"\u00e9"]}}`, // unknown keys are skipped
		`{"ti\u0074le":"t","tags":[],"kind":"plain"}`,                                       // escaped keys
	} {
		if _, err := codecNote.Parse([]byte(in)); err != nil {
			t.Errorf("%s: %v", in, err)
		}
	}
}

func TestIntegersInRange(t *testing.T) {
	i32 := JSON[int32]{Encode: (*Encoder).Int32, Decode: (*Decoder).Int32}
	for in, ok := range map[string]bool{"2147483647": true, "-2147483648": true, "2147483648": false, "1.0": true, "1e3": true, "1.5": false, `"5"`: false, "-0": true} {
		if _, err := i32.Parse([]byte(in)); (err == nil) != ok {
			t.Errorf("int32 %s: err %v, want ok=%v", in, err, ok)
		}
	}
	u64 := JSON[uint64]{Encode: (*Encoder).Uint64, Decode: (*Decoder).Uint64}
	for in, ok := range map[string]bool{`"18446744073709551615"`: true, "18446744073709551615": false, `"-1"`: false, `"18446744073709551616"`: false, `" 1"`: false, `"01"`: false} {
		if _, err := u64.Parse([]byte(in)); (err == nil) != ok {
			t.Errorf("uint64 %s: err %v, want ok=%v", in, err, ok)
		}
	}
	b, _ := u64.Append(nil, math.MaxUint64)
	if string(b) != `"18446744073709551615"` {
		t.Errorf("uint64 encodes as %s", b)
	}
}

func TestEncodeRefusesWhatCannotTravel(t *testing.T) {
	f := JSON[float64]{Encode: (*Encoder).Float64, Decode: (*Decoder).Float64}
	if _, err := f.Append(nil, math.NaN()); wire.CodeOf(err) != wire.ValidationFailed {
		t.Errorf("NaN: %v", err)
	}
	err := Validate(encodeNote, note{Title: "t", Kind: "plain", Next: &note{Kind: "loud"}})
	if err == nil || !strings.Contains(err.Error(), "field 'next.kind' must be one of 'plain', 'urgent', not 'loud'") {
		t.Errorf("unknown enum: %v", err)
	}
	j := JSON[json.RawMessage]{Encode: (*Encoder).JSON, Decode: (*Decoder).JSON}
	if _, err := j.Append(nil, json.RawMessage(`{`)); err == nil {
		t.Error("invalid json value accepted")
	}
	if b, _ := j.Append(nil, nil); string(b) != "null" {
		t.Errorf("nil json writes %s", b)
	}
}

// TestFloatsAsJavaScript checks that floats are written as
// JSON.stringify writes them, so Go and TypeScript peers send equal bytes.
func TestFloatsAsJavaScript(t *testing.T) {
	f := JSON[float64]{Encode: (*Encoder).Float64, Decode: (*Decoder).Float64}
	for v, want := range map[float64]string{0: "0", 1.5: "1.5", -2: "-2", 1e21: "1e+21", 1e20: "100000000000000000000", 1e-7: "1e-7", 0.000001: "0.000001", 123.456: "123.456"} {
		if b, _ := f.Append(nil, v); string(b) != want {
			t.Errorf("%v writes %s, want %s", v, b, want)
		}
	}
}

func TestAppendKeepsWhatPrecedes(t *testing.T) {
	s := JSON[string]{Encode: (*Encoder).String, Decode: (*Decoder).String}
	b, err := s.Append([]byte(`prefix"`), "v")
	if err != nil || string(b) != `prefix""v"` {
		t.Fatalf("got %s %v", b, err)
	}
}

func TestBytesAndMaps(t *testing.T) {
	b := JSON[[]byte]{Encode: (*Encoder).Bytes, Decode: (*Decoder).Bytes}
	out, _ := b.Append(nil, []byte{0, 1, 2, 255})
	if string(out) != `"AAEC/w=="` {
		t.Errorf("bytes write %s", out)
	}
	if _, err := b.Parse([]byte(`"AAEC/w"`)); err == nil {
		t.Error("unpadded base64 accepted")
	}
	m := JSON[map[string]int32]{
		Encode: func(e *Encoder, v map[string]int32) { EncodeMap(e, v, (*Encoder).Int32) },
		Decode: func(d *Decoder) map[string]int32 { return Map(d, (*Decoder).Int32) },
	}
	out, _ = m.Append(nil, map[string]int32{"b": 2, "a": 1, "é\"": 3})
	if string(out) != `{"a":1,"b":2,"é\"":3}` {
		t.Errorf("map writes %s", out)
	}
	if got, err := m.Parse([]byte(`{"a":1,"a":2}`)); err != nil || got["a"] != 2 || len(got) != 1 {
		t.Errorf("duplicate key: %v %v, want the last value", got, err)
	}
	if _, err := m.Parse([]byte(`{"a":1,"b":"x"}`)); err == nil || !strings.Contains(err.Error(), "field 'b' must be") {
		t.Errorf("bad value: %v", err)
	}
}

// TestHostileNesting checks that nesting is bounded: no stack exhaustion,
// a validation failure instead.
func TestHostileNesting(t *testing.T) {
	deep := strings.Repeat(`{"title":"t","tags":[],"kind":"plain","next":`, 100000) + "null" + strings.Repeat("}", 100000)
	if _, err := codecNote.Parse([]byte(deep)); err == nil || !strings.Contains(err.Error(), "nests deeper than 512 levels") {
		t.Errorf("deep note: %v", err)
	}
	skip := `{"title":"t","tags":[],"kind":"plain","x":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "}"
	if _, err := codecNote.Parse([]byte(skip)); err == nil || !strings.Contains(err.Error(), "nests deeper") {
		t.Errorf("deep unknown value: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"title":"t","tags":["a"],"kind":"plain","count":"5","next":{"title":"u","tags":[],"kind":"urgent"}}`))
	f.Add([]byte(`{"x":[1,{"y":"\u00e9\\"}],"title":"\ud83d\ude00"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := codecNote.Parse(b)
		if err != nil {
			if wire.CodeOf(err) != wire.ValidationFailed {
				t.Fatalf("error without WT_VALIDATION_FAILED: %v", err)
			}
			return
		}
		// Whatever decodes re-encodes and decodes to the same bytes.
		out, err := codecNote.Append(nil, v)
		if err != nil {
			t.Fatalf("decoded value does not encode: %v", err)
		}
		v2, err := codecNote.Parse(out)
		if err != nil {
			t.Fatalf("re-encoded value does not decode: %v\n%s", err, out)
		}
		out2, _ := codecNote.Append(nil, v2)
		if string(out) != string(out2) {
			t.Fatalf("not stable:\n%s\n%s", out, out2)
		}
		if !json.Valid(out) {
			t.Fatalf("encoder wrote invalid JSON: %s", out)
		}
	})
}
