package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// The strict JSON readers read valid JSON in place; encoding/json is the
// oracle they must agree with, on every input. These are the readers as
// they were, on encoding/json alone.

func oracleObject(b []byte, field func(key string, raw []byte) error) error {
	if !utf8.Valid(b) {
		return errors.New("not UTF-8 (codec 0x01 is UTF-8 JSON, §5.3)")
	}
	if json.Valid(b) && oracleUnpairedSurrogate(b) {
		return errors.New("a \\u escape of an unpaired surrogate (not Unicode text, §5.3)")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("not valid JSON: %v", syntaxReason(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("not valid JSON: %v", syntaxReason(err))
		}
		key := tok.(string)
		if seen[key] {
			return fmt.Errorf("field %s appears twice", quoteShort(key))
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("not valid JSON: %v", syntaxReason(err))
		}
		if err := field(key, bytes.TrimSpace(raw)); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("not valid JSON: %v", syntaxReason(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON object")
	}
	return nil
}

// escapeRe matches one escape of valid JSON, the \uXXXX ones with their unit.
var escapeRe = regexp.MustCompile(`\\(?:u([0-9a-fA-F]{4})|.)`)

// oracleUnpairedSurrogate finds, in valid JSON, a surrogate escape that is
// not one half of an escaped pair (utf16 judges the pair).
func oracleUnpairedSurrogate(b []byte) bool {
	ms := escapeRe.FindAllSubmatchIndex(b, -1)
	for k := 0; k < len(ms); k++ {
		unit := func(k int) rune {
			if k >= len(ms) || ms[k][2] < 0 {
				return -1
			}
			n, _ := strconv.ParseUint(string(b[ms[k][2]:ms[k][3]]), 16, 16)
			return rune(n)
		}
		u := unit(k)
		if !utf16.IsSurrogate(u) {
			continue
		}
		if k+1 < len(ms) && ms[k+1][0] == ms[k][1] && utf16.DecodeRune(u, unit(k+1)) != utf8.RuneError {
			k++ // a pair
			continue
		}
		return true
	}
	return false
}

func oracleArray(raw []byte) ([]json.RawMessage, error) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, fmt.Errorf("must be an array, not %s", quoteShort(string(raw)))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("is not a valid array")
	}
	for i := range items {
		items[i] = bytes.TrimSpace(items[i])
	}
	return items, nil
}

func oracleString(raw []byte) (string, error) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", fmt.Errorf("must be a string, not %s", quoteShort(string(raw)))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("is not a valid string")
	}
	return s, nil
}

// members records what a reader hands its field callback, and the error.
func members(read func([]byte, func(string, []byte) error) error, b []byte) string {
	var out []string
	err := read(b, func(key string, raw []byte) error {
		out = append(out, fmt.Sprintf("%q=%s", key, raw))
		if key == "stop" {
			return errors.New("stopped by the field")
		}
		return nil
	})
	return fmt.Sprintf("%v err=%v", out, err)
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// agree checks one input against the oracle: as an object, as an array
// and as a string.
func agree(t *testing.T, b []byte) {
	t.Helper()
	if got, want := members(decodeObject, b), members(oracleObject, b); got != want {
		t.Fatalf("decodeObject(%q):\n got %s\nwant %s", b, got, want)
	}
	gotItems, gotErr := jsonArray(b)
	wantItems, wantErr := oracleArray(b)
	if errText(gotErr) != errText(wantErr) || len(gotItems) != len(wantItems) ||
		!slices.EqualFunc(gotItems, wantItems, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
		t.Fatalf("jsonArray(%q) = %q, %v; want %q, %v", b, gotItems, gotErr, wantItems, wantErr)
	}
	gotS, gotErr := jsonString(b)
	wantS, wantErr := oracleString(b)
	if gotS != wantS || errText(gotErr) != errText(wantErr) {
		t.Fatalf("jsonString(%q) = %q, %v; want %q, %v", b, gotS, gotErr, wantS, wantErr)
	}
}

var jsonSeeds = []string{
	`{"v":0,"feat":[],"events":[["chat",836792189,"reliable"],["cursor",1185214141,"unreliable"]]}`,
	" \t\n{ \"v\" : 0 , \"feat\" : [ \"a\" , \"b\" ] , \"events\" : [ [ \"x\" , 1 , \"reliable\" ] ] } \r\n",
	`{"k\u0065y":"v\"al\\ue","stop":1,"after":2}`,
	`{"a":{"b":[1,{"c":"]}"}],"d":null},"e":true,"f":false,"g":-1.5e+10,"h":"\u00e9\ud83d\ude00"}`,
	`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{}`, `{ }`, `[]`, `[ ]`, `[1, "two", [3], {"four":4}, null]`,
	`"plain"`, `"esc\"aped"`, `"\u0000"`, `"é"`, `""`, `"`, `"abc`, `"a"b"`,
	`{"a":1}{"b":2}`, `{"a":1} x`, `{"a":}`, `{"a" 1}`, `{,}`, `{"a":1,}`, `[1,]`, `[1 2]`, `[`, `{`,
	`{"credit":16}`, `{"credit":1e9}`, `{"code":"WT_X","message":"m"}`, `{"room":"lobby"}`, "{\"a\":\"\xff\"}",
	`123`, `null`, `true`, ``, ` `,
}

// TestSpec4_1_JSONReadersAgreeWithEncodingJSON: the handshake (§4.1) and
// the control payloads (§6.4–§6.6) are read as encoding/json reads them:
// on the seeds, the spec vectors' handshakes and deterministic mutations
// of them, the readers hand out exactly the members, items, strings and
// errors encoding/json does.
func TestSpec4_1_JSONReadersAgreeWithEncodingJSON(t *testing.T) {
	seeds := slices.Clone(jsonSeeds)
	v := loadVectors(t)
	for _, h := range v.Handshakes {
		seeds = append(seeds, h.JSON)
	}
	for _, h := range v.InvalidHandshakes {
		seeds = append(seeds, h.JSON)
	}
	const alphabet = " \t\n{}[],:\"\\0123456789-+.eEtrufalsn\u00e9\xffx"
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range seeds {
		agree(t, []byte(s))
		for range 300 {
			b := []byte(s)
			for range 1 + rng.IntN(3) {
				c := alphabet[rng.IntN(len(alphabet))]
				switch p := rng.IntN(len(b) + 1); {
				case len(b) == 0 || rng.IntN(3) == 0:
					b = slices.Insert(b, p, c)
				case rng.IntN(2) == 0 && p < len(b):
					b = slices.Delete(b, p, p+1)
				case p < len(b):
					b[p] = c
				}
			}
			agree(t, b)
			// Items and members are read again as the handshake does.
			if items, err := jsonArray(b); err == nil {
				for _, it := range items {
					agree(t, it)
				}
			}
			_ = decodeObject(b, func(_ string, raw []byte) error { agree(t, raw); return nil })
		}
	}
}
