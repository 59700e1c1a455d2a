package typed

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// These tests pin the JSON rules the Go and TypeScript runtimes share
// (docs/contract-language.md, "JSON on the wire"): a TypeScript decoder
// sees a payload only after JSON.parse, so every rule here is one both
// sides can apply to the same value. testdata/golden/*/fixtures.json runs
// the same rules through generated code in both languages.

var (
	i32Codec  = JSON[int32]{Encode: (*Encoder).Int32, Decode: (*Decoder).Int32}
	u32Codec  = JSON[uint32]{Encode: (*Encoder).Uint32, Decode: (*Decoder).Uint32}
	i64Codec  = JSON[int64]{Encode: (*Encoder).Int64, Decode: (*Decoder).Int64}
	u64Codec  = JSON[uint64]{Encode: (*Encoder).Uint64, Decode: (*Decoder).Uint64}
	f64Codec  = JSON[float64]{Encode: (*Encoder).Float64, Decode: (*Decoder).Float64}
	strCodec  = JSON[string]{Encode: (*Encoder).String, Decode: (*Decoder).String}
	anyCodec  = JSON[json.RawMessage]{Encode: (*Encoder).JSON, Decode: (*Decoder).JSON}
	strMap    = JSON[map[string]string]{Encode: func(e *Encoder, v map[string]string) { EncodeMap(e, v, (*Encoder).String) }, Decode: func(d *Decoder) map[string]string { return Map(d, (*Decoder).String) }}
	bytesCdc  = JSON[[]byte]{Encode: (*Encoder).Bytes, Decode: (*Decoder).Bytes}
	noteOrErr = func(in string) error { _, err := codecNote.Parse([]byte(in)); return err }
)

// roundTrip decodes in with c and re-encodes it.
func roundTrip[T any](t *testing.T, c JSON[T], in string) (string, error) {
	t.Helper()
	v, err := c.Parse([]byte(in))
	if err != nil {
		return "", err
	}
	out, err := c.Append(nil, v)
	if err != nil {
		t.Fatalf("%s decoded but does not encode: %v", in, err)
	}
	return string(out), nil
}

func wantRoundTrip[T any](t *testing.T, c JSON[T], in, want string) {
	t.Helper()
	got, err := roundTrip(t, c, in)
	if err != nil {
		t.Errorf("%s: %v", in, err)
	} else if got != want {
		t.Errorf("%s re-encodes as %s, want %s", in, got, want)
	}
}

func wantRefused[T any](t *testing.T, c JSON[T], in, msg string) {
	t.Helper()
	if _, err := c.Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), msg) {
		t.Errorf("%s: %v, want %q", in, err, msg)
	}
}

// TestSpec5_3_IntegralNumbers: JSON.parse reads 1.0 and 1e2 as 1 and 100,
// so a TypeScript peer cannot refuse them; both runtimes accept any number
// whose float64 value is an integer in range, as protobuf's JSON mapping
// does, and refuse 1.5.
func TestSpec5_3_IntegralNumbers(t *testing.T) {
	for in, want := range map[string]string{"1.0": "1", "1e2": "100", "0.1e1": "1", "-0": "0", "-0.0": "0", "2147483647": "2147483647",
		"-2147483648.0": "-2147483648", "1e-400": "0", "21474836.47e2": "2147483647"} {
		wantRoundTrip(t, i32Codec, in, want)
	}
	for _, in := range []string{"1.5", "2147483648", "-2147483649", "1e10", "1e400", "-1e-1", `"5"`, "true"} {
		wantRefused(t, i32Codec, in, "must be an integer from -2147483648 to 2147483647")
	}
	wantRoundTrip(t, u32Codec, "4294967295.0", "4294967295")
	wantRefused(t, u32Codec, "-1", "must be an integer from 0 to 4294967295, not '-1'")
}

// TestSpec5_3_64BitNumbersOnlyWhenSafe: a number beyond 2^53-1 may already
// have been rounded by a JSON.parse on its way (I-JSON, RFC 7493 §2.2:
// 9007199254740993 parses as 9007199254740992), so int64 and uint64 read a
// number only within ±(2^53-1) and tell the sender to use a decimal string.
func TestSpec5_3_64BitNumbersOnlyWhenSafe(t *testing.T) {
	wantRoundTrip(t, i64Codec, "9007199254740991", `"9007199254740991"`)
	wantRoundTrip(t, i64Codec, "-9007199254740991", `"-9007199254740991"`)
	wantRoundTrip(t, i64Codec, "1e3", `"1000"`)
	wantRoundTrip(t, i64Codec, `"9223372036854775807"`, `"9223372036854775807"`)
	wantRoundTrip(t, i64Codec, `"-9223372036854775808"`, `"-9223372036854775808"`)
	wantRoundTrip(t, i64Codec, `"-0"`, `"0"`)
	wantRoundTrip(t, i64Codec, `"\u0031\u0032"`, `"12"`) // JSON.parse gives "12"
	for _, in := range []string{"9007199254740992", "9007199254740993", "-9007199254740993", "9223372036854775807", "1e300", "1.5"} {
		wantRefused(t, i64Codec, in, "must be an integer from -9007199254740991 to 9007199254740991 when sent as a JSON number; send a decimal string for any other int64, not '"+in+"'")
	}
	for _, in := range []string{`"9223372036854775808"`, `"1.0"`, `"1e3"`, `"+1"`, `"01"`, `" 1"`, `""`, `"-"`, "true", "null"} {
		wantRefused(t, i64Codec, in, "must be an integer from -9223372036854775808 to 9223372036854775807 (a decimal string)")
	}
	wantRoundTrip(t, u64Codec, `"18446744073709551615"`, `"18446744073709551615"`)
	wantRoundTrip(t, u64Codec, `"-0"`, `"0"`)
	wantRefused(t, u64Codec, "18446744073709551615", "must be an integer from 0 to 9007199254740991 when sent as a JSON number; send a decimal string for any other uint64")
	wantRefused(t, u64Codec, "-1", "when sent as a JSON number")
	wantRefused(t, u64Codec, `"18446744073709551616"`, "must be an integer from 0 to 18446744073709551615 (a decimal string)")
}

// TestSpec5_3_LoneSurrogatesRefused: a lone UTF-16 surrogate is no Unicode
// text (I-JSON, RFC 7493 §2.1); a JavaScript string can hold one and a Go
// string cannot, so both refuse it wherever the value is read: a string, a
// map key, a string or key inside a json value. A skipped unknown field is
// never read, on either side.
func TestSpec5_3_LoneSurrogatesRefused(t *testing.T) {
	for _, in := range []string{`"\ud800"`, `"a\udc00"`, `"\ud800\u0041"`, `"\udbff\ud800"`} {
		wantRefused(t, strCodec, in, "the payload must not contain a lone surrogate, not '"+in+"'")
	}
	wantRoundTrip(t, strCodec, `"\ud83d\ude00\uD834\uDD1E"`, `"😀𝄞"`)
	wantRefused(t, strMap, `{"ok":"x","\ud800":"y"}`, "the payload must not contain a lone surrogate")
	if err := noteOrErr(`{"title":"t","tags":["a","\udfff"],"kind":"plain"}`); err == nil || !strings.Contains(err.Error(), "field 'tags[1]' must not contain a lone surrogate") {
		t.Errorf("in a list: %v", err)
	}
	wantRefused(t, anyCodec, `{"a":[1,"\ud800"]}`, "field 'a[1]' must not contain a lone surrogate")
	wantRefused(t, anyCodec, `{"a":{"\ud800":1}}`, "field 'a' must not contain a lone surrogate")
	if err := noteOrErr(`{"title":"t","tags":[],"kind":"plain","unknown":"\ud800","\udc00":1}`); err != nil {
		t.Errorf("a lone surrogate in a skipped field: %v", err)
	}
	wantRefused(t, strCodec, `"\ud80"`, "is not valid JSON: bad escape")
	wantRefused(t, strCodec, `"\x"`, "is not valid JSON: bad escape")
}

// TestSpec5_3_FloatsAsNumberToString: floats are written as ECMAScript's
// Number::toString writes them (what JSON.stringify sends), -0 included:
// JSON.stringify(-0) is "0".
func TestSpec5_3_FloatsAsNumberToString(t *testing.T) {
	for in, want := range map[string]string{"-0": "0", "-0.0": "0", "-0e5": "0", "1e21": "1e+21", "1e-7": "1e-7", "5e-324": "5e-324",
		"1.7976931348623157e308": "1.7976931348623157e+308", "1E400": "", "1e-400": "0", "123456789012345678901234": "1.2345678901234569e+23",
		"0.1": "0.1", "100": "100", "2.5e-5": "0.000025", "1.5e-7": "1.5e-7", "-1e-100": "-1e-100"} {
		if want == "" {
			wantRefused(t, f64Codec, in, "the payload must be a number within the range of float64, not '"+in+"'")
			continue
		}
		wantRoundTrip(t, f64Codec, in, want)
	}
	if v, err := f64Codec.Parse([]byte("-0")); err != nil || !math.Signbit(v) {
		t.Errorf("-0 decodes to %v %v, want -0 (JSON.parse keeps the sign)", v, err)
	}
}

// TestSpec5_3_StringsAsJSONStringify: strings are escaped exactly as
// JSON.stringify escapes them (ECMAScript QuoteJSONString): the two-letter
// escapes, other controls as lowercase \u00xx, and nothing else: no HTML
// escaping, U+2028/2029 and DEL as they are, non-ASCII as UTF-8.
func TestSpec5_3_StringsAsJSONStringify(t *testing.T) {
	wantRoundTrip(t, strCodec, `"\"\\\/\b\f\n\r\t\u0000\u001F\u007f<>&\u2028\u2029\u00e9\uFFFF"`,
		"\"\\\"\\\\/\\b\\f\\n\\r\\t\\u0000\\u001f\x7f<>&\u2028\u2029é\uffff\"")
}

// TestSpec5_3_MapKeysByCodePoint: map keys are sorted by code point, which
// is Go's byte order of UTF-8. JavaScript's default sort compares UTF-16
// code units and would put "😀" (U+1F600, surrogates D83D DE00) before
// U+E000..U+FFFF; object key order would put integer-like keys first.
func TestSpec5_3_MapKeysByCodePoint(t *testing.T) {
	wantRoundTrip(t, strMap, `{"😀":"a","\uffff":"b","\ue000":"c","9":"d","10":"e","__proto__":"f","":"g","Z":"h"}`,
		"{\"\":\"g\",\"10\":\"e\",\"9\":\"d\",\"Z\":\"h\",\"__proto__\":\"f\",\"\ue000\":\"c\",\"\uffff\":\"b\",\"😀\":\"a\"}")
	wantRoundTrip(t, strMap, `{"a":"1","b":"2","a":"3"}`, `{"a":"3","b":"2"}`) // the last of a duplicate wins, as in JSON.parse
}

// TestSpec5_3_JSONValuesCanonical: a json value is written in one form on
// every peer: compact, keys by code point, the last duplicate kept,
// numbers and strings as float64 and string are written.
func TestSpec5_3_JSONValuesCanonical(t *testing.T) {
	for in, want := range map[string]string{
		` { "b" : 1.0 , "a" : [ 1e2 , -0 , "\u0041\/" , true , false , null , { } , [ ] ] } `: `{"a":[100,0,"A/",true,false,null,{},[]],"b":1}`,
		`{"b":1,"a":2,"b":3}`:                           `{"a":2,"b":3}`,
		`{"10":1,"9":2,"😀":3,"\ue000":4}`:               "{\"10\":1,\"9\":2,\"\ue000\":4,\"😀\":3}",
		`12345678901234567890`:                          `12345678901234567000`,
		`"<\u2028>"`:                                    "\"<\u2028>\"",
		`{"z":{"y":1,"x":2},"a":{"d":[{"c":1,"b":2}]}}`: `{"a":{"d":[{"b":2,"c":1}]},"z":{"x":2,"y":1}}`,
		`{"k\u0000":1,"k":2}`:                           `{"k":2,"k\u0000":1}`,
		`null`:                                          `null`,
	} {
		wantRoundTrip(t, anyCodec, in, want)
	}
	wantRefused(t, anyCodec, `{"a":[1,1e400]}`, "field 'a[1]' must be a number within the range of float64, not '1e400'")
	// The same failures inside objects out of order, which are read twice.
	wantRefused(t, anyCodec, `{"b":1,"a":[0,{"d":1,"c":1e400}]}`, "field 'a[1].c' must be a number within the range of float64, not '1e400'")
	wantRefused(t, anyCodec, `{"b":1,"a":{"\ud800":1}}`, "field 'a' must not contain a lone surrogate")
	wantRefused(t, anyCodec, `{"b":1,"a":`+strings.Repeat("[", MaxDepth)+strings.Repeat("]", MaxDepth)+`}`, "nests deeper than 512 levels")
	wantRoundTrip(t, anyCodec, `{"b":1,"a":`+strings.Repeat("[", MaxDepth-1)+strings.Repeat("]", MaxDepth-1)+`}`, `{"a":`+strings.Repeat("[", MaxDepth-1)+strings.Repeat("]", MaxDepth-1)+`,"b":1}`)
	e := Encoder{}
	e.JSON(json.RawMessage(`{"b":[1,2],"a":1,`))
	if e.err == nil {
		t.Error("an invalid json value encodes")
	}
	for _, bad := range []string{`{"a":"\ud800"}`, "\"\xff\"", `1 2`, `1e999`} {
		if err := Validate((*Encoder).JSON, json.RawMessage(bad)); err == nil {
			t.Errorf("json %q can be sent", bad)
		}
	}
}

// TestSpec5_3_DepthInsideJSONValues: MaxDepth counts every object and
// array from the payload's root, json values included.
func TestSpec5_3_DepthInsideJSONValues(t *testing.T) {
	nested := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	if _, err := anyCodec.Parse([]byte(nested(MaxDepth))); err != nil {
		t.Errorf("%d levels: %v", MaxDepth, err)
	}
	wantRefused(t, anyCodec, nested(MaxDepth+1), "field '"+strings.Repeat("[0]", MaxDepth)+"' nests deeper than 512 levels")
	// A record is one level: its json field holds 511 more.
	field := func(n int) string { return `{"title":"t","tags":[],"kind":"plain","extra":` + nested(n) + `}` }
	if err := noteOrErr(field(MaxDepth)); err == nil || !strings.Contains(err.Error(), "nests deeper") {
		t.Errorf("skipped field 1+%d levels deep: %v", MaxDepth, err)
	}
}

// TestSpec5_3_StrictBase64: one value, one encoding: standard padded
// base64 with zero padding bits (RFC 4648 §3.5) and no line breaks (§3.3),
// which Go's decoder would otherwise skip and atob would too.
func TestSpec5_3_StrictBase64(t *testing.T) {
	wantRoundTrip(t, bytesCdc, `"AAEC/w=="`, `"AAEC/w=="`)
	wantRoundTrip(t, bytesCdc, `"\u0041A=="`, `"AA=="`)
	wantRoundTrip(t, bytesCdc, `""`, `""`)
	for _, in := range []string{`"AB=="`, `"AAEC/w"`, `"AAEC/w="`, `"AA\nEC/w=="`, `"AA\r\nEC/w=="`, `"AAEC_w=="`, `" AAEC/w=="`, `"AAE=C/w="`} {
		wantRefused(t, bytesCdc, in, "the payload must be standard padded base64, not '"+in+"'")
	}
}

// TestSpec5_3_NullForOptional: an explicit null for an optional field is
// the field absent, re-encoded by omission; null for a required one is
// refused with its rule.
func TestSpec5_3_NullForOptional(t *testing.T) {
	wantRoundTrip(t, codecNote, `{"title":"t","count":null,"tags":[],"next":null,"kind":"plain"}`, `{"title":"t","tags":[],"kind":"plain"}`)
	wantRefused(t, codecNote, `{"title":null,"tags":[],"kind":"plain"}`, "field 'title' must be a string, not null")
	wantRefused(t, codecNote, `{"title":"t","tags":[null],"kind":"plain"}`, "field 'tags[0]' must be a string, not null")
}

// TestEncodeDoesNotAllocate guards the send path: encoding a record into a
// buffer that is large enough allocates nothing.
func TestEncodeDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 512)
	if n := testing.AllocsPerRun(100, func() { buf, _ = codecNote.Append(buf[:0], benchNote) }); n != 0 {
		t.Errorf("Append allocates %v times", n)
	}
	raw := json.RawMessage(`{"a":[1,2.5,"x"],"b":{"c":null}}`)
	if n := testing.AllocsPerRun(100, func() { buf, _ = anyCodec.Append(buf[:0], raw) }); n != 0 {
		t.Errorf("Append of a canonical json value allocates %v times", n)
	}
}

// TestSpec5_3_EmptyIsNotAbsent: an empty list, map, string or bytes value
// decodes to a present value, so an optional field holding one is sent on
// as it came; only nil (a missing field) is omitted.
func TestSpec5_3_EmptyIsNotAbsent(t *testing.T) {
	d := Decoder{b: []byte(`[]`)}
	if l := List(&d, (*Decoder).String); l == nil {
		t.Error("[] reads as nil")
	}
	d = Decoder{b: []byte(`{}`)}
	if m := Map(&d, (*Decoder).String); m == nil {
		t.Error("{} reads as nil")
	}
	d = Decoder{b: []byte(`""`)}
	if b := d.Bytes(); b == nil {
		t.Error(`"" reads as nil bytes`)
	}
}

// TestJSONValuesInListsAndMaps: json values separate like any other
// element, valid or not.
func TestJSONValuesInListsAndMaps(t *testing.T) {
	l := JSON[[]json.RawMessage]{Encode: func(e *Encoder, v []json.RawMessage) { EncodeList(e, v, (*Encoder).JSON) }, Decode: func(d *Decoder) []json.RawMessage { return List(d, (*Decoder).JSON) }}
	wantRoundTrip(t, l, `[null, 1.0 ,"", [ ],{ "b":0,"a":1},false]`, `[null,1,"",[],{"a":1,"b":0},false]`)
	e := Encoder{}
	EncodeList(&e, []json.RawMessage{json.RawMessage(`1`), json.RawMessage(`{`), nil}, (*Encoder).JSON)
	if string(e.b) != `[1,null,null]` || e.err == nil || !strings.Contains(e.err.wireError().Message, "field '[1]' must be a key, not nothing") {
		t.Errorf("an invalid element writes %s, %v", e.b, e.err.wireError())
	}
}

// FuzzJSONCanonical: whatever json value decodes is written in a form that
// decodes to itself (a fixed point) and means what the input meant, read
// as encoding/json reads it (the last duplicate key wins, numbers as
// float64).
func FuzzJSONCanonical(f *testing.F) {
	for _, s := range []string{`{"b":[1.0,-0,"\u0041"],"a":{"y":null,"x":true},"b":2}`, `[1e21,1e-7,"\ud83d\ude00",{}]`, `"\u2028<"`, `12345678901234567890`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := anyCodec.Parse(b)
		if err != nil {
			return
		}
		again, err := anyCodec.Parse(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("canonical form %s is not a fixed point: %s %v", out, again, err)
		}
		var in, canon any
		if json.Unmarshal(b, &in) != nil || json.Unmarshal(out, &canon) != nil || !reflect.DeepEqual(in, canon) {
			t.Fatalf("%s and its canonical form %s differ", b, out)
		}
	})
}

// TestSpec5_3_UnorderedNestingIsLinear: objects out of order nested in
// objects out of order are sorted in time linear in the payload. Moving
// each level's members into place would copy the payload once per level:
// 510 levels took about 100 times as long as the same bytes in order
// (0.5 s for 1 MiB, the largest payload of §5.1, measured).
func TestSpec5_3_UnorderedNestingIsLinear(t *testing.T) {
	leaf := `"` + strings.Repeat("x", 1<<20-6000) + `"`
	ordered, unordered, want := leaf, leaf, leaf
	for range 510 {
		ordered = `{"a":0,"b":` + ordered + `}`
		unordered = `{"b":` + unordered + `,"a":0}`
		want = `{"a":0,"b":` + want + `}`
	}
	timed := func(in string) time.Duration {
		start := time.Now()
		got, err := roundTrip(t, anyCodec, in)
		if err != nil || got != want {
			t.Fatalf("%d bytes 510 levels deep: %v, equal %v", len(in), err, got == want)
		}
		return time.Since(start)
	}
	fast, slow := timed(ordered), timed(unordered)
	if slow > 20*fast+10*time.Millisecond {
		t.Errorf("in order %v, out of order %v: not linear", fast, slow)
	}
}
