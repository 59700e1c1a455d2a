package typed

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// MaxDepth bounds how deeply JSON values may nest in one payload, so that a
// hostile payload cannot exhaust the stack through a recursive type.
const MaxDepth = 512

// Decoder reads one JSON value from a payload. Generated decoders call it;
// after the first failure every method is a no-op returning a zero value,
// and the failure comes back once from Decode.
type Decoder struct {
	b     []byte
	i     int
	depth int
	err   *fieldError
}

// Fail records a validation failure at the current position: msg completes
// "field 'x' …" (e.g. "must be one of 'a', 'b', not 'c'"). Only the first
// failure is kept.
func (d *Decoder) Fail(msg string) {
	if d.err == nil {
		d.err = &fieldError{msg: msg}
	}
}

// Failed reports whether the decoder has failed.
func (d *Decoder) Failed() bool { return d.err != nil }

func (d *Decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the first byte of the next value, or 0 at the end.
func (d *Decoder) peek() byte {
	d.ws()
	if d.i >= len(d.b) {
		return 0
	}
	return d.b[d.i]
}

// mismatch fails because the next value is not what the field needs.
func (d *Decoder) mismatch(want string) {
	if d.err != nil {
		return
	}
	c := d.peek()
	got := "nothing"
	switch {
	case c == '{':
		got = "an object"
	case c == '[':
		got = "an array"
	case c == '"':
		got = "a string"
	case c == 'n':
		got = "null"
	case c == 't' || c == 'f':
		got = "a boolean"
	case c == '-' || ('0' <= c && c <= '9'):
		got = shortValue(d.b[d.i:d.scanNumberEnd()])
	case c != 0:
		d.syntax("unexpected character " + strconv.QuoteRune(rune(c)))
		return
	}
	d.Fail("must be " + want + ", not " + got)
}

func (d *Decoder) syntax(what string) {
	d.Fail("is not valid JSON: " + what + " at offset " + strconv.Itoa(d.i))
}

// Null consumes a JSON null and reports whether there was one; optional
// fields read null as absent.
func (d *Decoder) Null() bool {
	if d.err != nil || d.peek() != 'n' {
		return false
	}
	return d.literal("null")
}

func (d *Decoder) literal(lit string) bool {
	if len(d.b)-d.i < len(lit) || string(d.b[d.i:d.i+len(lit)]) != lit {
		d.syntax("bad literal")
		return false
	}
	d.i += len(lit)
	return true
}

// Bool reads a JSON boolean.
func (d *Decoder) Bool() bool {
	switch d.peek() {
	case 't':
		return d.err == nil && d.literal("true")
	case 'f':
		if d.err == nil {
			d.literal("false")
		}
		return false
	}
	d.mismatch("a boolean")
	return false
}

// String reads a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json and JavaScript do.
func (d *Decoder) String() string {
	raw, ok := d.rawString("a string")
	if !ok {
		return ""
	}
	return d.unquote(raw)
}

// rawString returns the contents of the next JSON string with escapes
// still in place, and whether it has any.
func (d *Decoder) rawString(want string) ([]byte, bool) {
	if d.err != nil {
		return nil, false
	}
	if d.peek() != '"' {
		d.mismatch(want)
		return nil, false
	}
	start := d.i
	d.i++
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return d.b[start:d.i], true
		case c == '\\':
			d.i += 2
		case c < 0x20:
			d.syntax("control character in a string")
			return nil, false
		default:
			d.i++
		}
	}
	d.syntax("unterminated string")
	return nil, false
}

// unquote turns a quoted JSON string into its value: directly when it has
// no escapes, otherwise through encoding/json, which implements every
// escape. Parse refused a payload that is not UTF-8 before, so nothing is
// replaced here.
func (d *Decoder) unquote(quoted []byte) string {
	inner := quoted[1 : len(quoted)-1]
	plain := true
	for _, c := range inner {
		if c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return string(inner)
	}
	var s string
	if err := json.Unmarshal(quoted, &s); err != nil {
		d.syntax("bad escape in a string")
		return ""
	}
	return s
}

func (d *Decoder) scanNumberEnd() int {
	j := d.i
	for j < len(d.b) {
		switch c := d.b[j]; {
		case '0' <= c && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			j++
		default:
			return j
		}
	}
	return j
}

// number returns the next JSON number token, checked against the grammar of
// RFC 8259 §6.
func (d *Decoder) number(want string) ([]byte, bool) {
	if d.err != nil {
		return nil, false
	}
	c := d.peek()
	if c != '-' && (c < '0' || c > '9') {
		d.mismatch(want)
		return nil, false
	}
	end := d.scanNumberEnd()
	tok := d.b[d.i:end]
	if !validNumber(tok) {
		d.syntax("bad number " + shortValue(tok))
		return nil, false
	}
	d.i = end
	return tok, true
}

func validNumber(s []byte) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}

// integer reads an exact integer in [lo, hi]: a JSON number written without
// fraction or exponent, or, when decimal is set (int64 and uint64), also a
// JSON string of such digits.
func (d *Decoder) integer(want string, decimal bool, parse func(string) (ok bool)) {
	var tok, shown []byte
	if decimal && d.peek() == '"' {
		raw, ok := d.rawString(want)
		if !ok {
			return
		}
		tok, shown = raw[1:len(raw)-1], raw
	} else {
		var ok bool
		if tok, ok = d.number(want); !ok {
			return
		}
		shown = tok
	}
	// ParseInt alone would take "+1" and "0x1"; the JSON grammar would not.
	if !validNumber(tok) || !parse(string(tok)) {
		d.Fail("must be " + want + ", not " + shortValue(shown))
	}
}

const (
	int32Range  = "an integer from -2147483648 to 2147483647"
	uint32Range = "an integer from 0 to 4294967295"
	int64Range  = "an integer from -9223372036854775808 to 9223372036854775807 (a decimal string)"
	uint64Range = "an integer from 0 to 18446744073709551615 (a decimal string)"
)

// Int32 reads an integer from -2^31 to 2^31-1.
func (d *Decoder) Int32() int32 {
	var v int64
	d.integer(int32Range, false, func(s string) bool {
		n, err := strconv.ParseInt(s, 10, 32)
		v = n
		return err == nil
	})
	return int32(v)
}

// Uint32 reads an integer from 0 to 2^32-1.
func (d *Decoder) Uint32() uint32 {
	var v uint64
	d.integer(uint32Range, false, func(s string) bool {
		n, err := strconv.ParseUint(s, 10, 32)
		v = n
		return err == nil
	})
	return uint32(v)
}

// Int64 reads a decimal string ("-12") or an exact integer number.
func (d *Decoder) Int64() int64 {
	var v int64
	d.integer(int64Range, true, func(s string) bool {
		n, err := strconv.ParseInt(s, 10, 64)
		v = n
		return err == nil
	})
	return v
}

// Uint64 reads a decimal string ("18446744073709551615") or an exact
// integer number.
func (d *Decoder) Uint64() uint64 {
	var v uint64
	d.integer(uint64Range, true, func(s string) bool {
		n, err := strconv.ParseUint(s, 10, 64)
		v = n
		return err == nil
	})
	return v
}

// Float64 reads a JSON number that fits a float64.
func (d *Decoder) Float64() float64 {
	tok, ok := d.number("a number")
	if !ok {
		return 0
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || math.IsInf(f, 0) {
		d.Fail("must be a number within the range of float64, not " + shortValue(tok))
		return 0
	}
	return f
}

// Bytes reads standard padded base64 (RFC 4648 §4) in a JSON string.
func (d *Decoder) Bytes() []byte {
	raw, ok := d.rawString("a base64 string")
	if !ok {
		return nil
	}
	s := d.unquote(raw)
	out, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		d.Fail("must be standard padded base64, not " + shortValue(raw))
		return nil
	}
	return out
}

// JSON reads any JSON value and returns a copy of it as written.
func (d *Decoder) JSON() json.RawMessage {
	if d.err != nil {
		return nil
	}
	d.ws()
	start := d.i
	d.Skip()
	if d.err != nil {
		return nil
	}
	return append(json.RawMessage(nil), d.b[start:d.i]...)
}

// Skip reads past one JSON value of any kind, checking its syntax: the value
// of a key this contract does not declare (docs/contract-language.md:
// receivers ignore unknown keys).
func (d *Decoder) Skip() {
	switch c := d.peek(); {
	case d.err != nil:
	case c == '{':
		o := d.Object()
		for o.Next(d) {
			d.Skip()
		}
	case c == '[':
		a := d.Array()
		for a.Next(d) {
			d.Skip()
		}
	case c == '"':
		if raw, ok := d.rawString("a value"); ok && bytes.IndexByte(raw, '\\') >= 0 {
			d.unquote(raw) // checks the escapes
		}
	case c == 't':
		d.literal("true")
	case c == 'f':
		d.literal("false")
	case c == 'n':
		d.literal("null")
	case c == 0:
		d.syntax("unexpected end")
	default:
		d.number("a value")
	}
}

// Object starts reading a JSON object; iterate its members with Members.Next.
func (d *Decoder) Object() Members {
	if d.err == nil && d.peek() != '{' {
		d.mismatch("an object")
	}
	return Members{open: d.open()}
}

// Array starts reading a JSON array; iterate its elements with Elements.Next.
func (d *Decoder) Array() Elements {
	if d.err == nil && d.peek() != '[' {
		d.mismatch("an array")
	}
	return Elements{open: d.open(), index: -1}
}

func (d *Decoder) open() bool {
	if d.err != nil {
		return false
	}
	if d.depth++; d.depth > MaxDepth {
		d.Fail("nests deeper than " + strconv.Itoa(MaxDepth) + " levels")
		return false
	}
	d.i++ // '{' or '['
	return true
}

// next moves past the separator before the next item: it reports false at
// the closing byte (consumed) or on a failure.
func (d *Decoder) next(first bool, closing byte) bool {
	c := d.peek()
	if c == closing {
		d.i++
		d.depth--
		return false
	}
	if !first {
		if c != ',' {
			d.syntax("expected ',' or '" + string(closing) + "'")
			return false
		}
		d.i++
		d.ws()
	}
	return true
}

// Members iterates the members of an object. The failure of a member's
// value is attributed to its key as the error passes through Next.
type Members struct {
	open, started, inValue bool
	key                    []byte // quoted, escapes in place
	dec                    *Decoder
}

// Next moves to the next member and reports whether there is one; Key is
// its key and the decoder is positioned at its value.
func (m *Members) Next(d *Decoder) bool {
	if d.err != nil {
		if m.inValue {
			m.inValue = false
			d.err.in(keyElem(d.unquote(m.key)))
		}
		return false
	}
	if !m.open {
		return false
	}
	first := !m.started
	m.started = true
	if !d.next(first, '}') {
		m.open = false
		return false
	}
	raw, ok := d.rawString("a key")
	if !ok {
		return false
	}
	if d.peek() != ':' {
		d.syntax("expected ':' after a key")
		return false
	}
	d.i++
	m.key, m.dec, m.inValue = raw, d, true
	return true
}

// Key returns the current member's key without copying when it has no
// escapes: compare it with string(m.Key()), which does not allocate.
func (m *Members) Key() []byte {
	inner := m.key[1 : len(m.key)-1]
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			return []byte(m.dec.unquote(m.key))
		}
	}
	return inner
}

// Elements iterates the elements of an array; a failure inside one is
// attributed to its index.
type Elements struct {
	open, inValue bool
	index         int
}

// Next moves to the next element and reports whether there is one.
func (a *Elements) Next(d *Decoder) bool {
	if d.err != nil {
		if a.inValue {
			a.inValue = false
			d.err.in(indexElem(a.index))
		}
		return false
	}
	if !a.open {
		return false
	}
	if !d.next(a.index < 0, ']') {
		a.open = false
		return false
	}
	a.index++
	a.inValue = true
	return true
}

// Require fails naming the first required field of an object that was not
// seen: "field 'replyTo.room' is required".
func (d *Decoder) Require(seen []bool, names ...string) {
	if d.err != nil {
		return
	}
	for i, ok := range seen {
		if !ok {
			d.err = &fieldError{msg: "is required", path: []string{keyElem(names[i])}}
			return
		}
	}
}
