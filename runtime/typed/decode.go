package typed

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
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

// atEnd reports whether nothing but white space is left: a NUL byte is
// data, though peek shows it as the end.
func (d *Decoder) atEnd() bool {
	d.ws()
	return d.i >= len(d.b)
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
	if d.err == nil {
		d.err = &fieldError{msg: "is not valid JSON: " + what + " at offset " + strconv.Itoa(d.i), syntax: true}
	}
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

// String reads a JSON string. A lone UTF-16 surrogate escape ("\ud800"
// with no pair) is refused: it is no Unicode text, and a Go string cannot
// hold it while a JavaScript one can, so peers would read different values
// (I-JSON, RFC 7493 §2.1).
func (d *Decoder) String() string {
	raw, ok := d.rawString("a string")
	if !ok {
		return ""
	}
	return d.text(raw)
}

const loneSurrogate = "must not contain a lone surrogate"

// text is the value of a quoted string that must be Unicode text.
func (d *Decoder) text(quoted []byte) string {
	s, lone := d.unquote(quoted)
	if lone {
		d.Fail(loneSurrogate + ", not " + shortValue(quoted))
	}
	return s
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
// no escapes (Parse refused a payload that is not UTF-8 before, so nothing
// needs replacing), otherwise through unescape. lone reports a lone
// surrogate escape, written as U+FFFD; callers that need text refuse it.
func (d *Decoder) unquote(quoted []byte) (s string, lone bool) {
	inner := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner), false
	}
	var small [64]byte
	out, lone, ok := unescape(small[:0], inner)
	if !ok {
		d.syntax("bad escape in a string")
		return "", false
	}
	return string(out), lone
}

// unescape appends the value of a JSON string's contents (escapes in
// place) to dst. ok is false for an escape JSON does not have (RFC 8259
// §7); lone reports a \u escape of a lone UTF-16 surrogate.
func unescape(dst, s []byte) (out []byte, lone, ok bool) {
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			j := i + 1
			for j < len(s) && s[j] != '\\' {
				j++
			}
			dst = append(dst, s[i:j]...)
			i = j
			continue
		}
		if i+1 == len(s) {
			return dst, lone, false
		}
		c := s[i+1]
		i += 2
		switch c {
		case '"', '\\', '/':
			dst = append(dst, c)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(s[i:])
			if !ok {
				return dst, lone, false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if low, ok := lowSurrogate(s[i:]); ok && r < 0xdc00 {
					dst = utf8.AppendRune(dst, utf16.DecodeRune(r, low))
					i += 6
					continue
				}
				lone, r = true, utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, lone, false
		}
	}
	return dst, lone, true
}

// lowSurrogate reads a \u escape of a low surrogate at the start of s.
func lowSurrogate(s []byte) (rune, bool) {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return 0, false
	}
	r, ok := hex4(s[2:])
	return r, ok && 0xdc00 <= r && r < 0xe000
}

func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
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

const (
	int32Range  = "an integer from -2147483648 to 2147483647"
	uint32Range = "an integer from 0 to 4294967295"
	int64Range  = "an integer from -9223372036854775808 to 9223372036854775807 (a decimal string)"
	uint64Range = "an integer from 0 to 18446744073709551615 (a decimal string)"
	// A JSON number beyond 2^53-1 may already have been rounded by the
	// sender's or any intermediary's JSON.parse (I-JSON, RFC 7493 §2.2), so
	// 64-bit integers that large travel only as decimal strings.
	int64Number  = "an integer from -9007199254740991 to 9007199254740991 when sent as a JSON number; send a decimal string for any other int64"
	uint64Number = "an integer from 0 to 9007199254740991 when sent as a JSON number; send a decimal string for any other uint64"
	maxSafe      = 1<<53 - 1
)

// integral is the value of a JSON number token as a float64 reads it (what
// JavaScript's JSON.parse makes of it) when that value is an integer, so
// that 1.0 and 1e2 read as 1 and 100 on every peer and 1.5 is refused, as
// in protobuf's JSON mapping. ok is false beyond ±2^63, which no integer
// type here reaches as a number.
func integral(tok []byte) (v int64, ok bool) {
	if bytes.IndexAny(tok, ".eE") < 0 {
		// Plain digits are exact below 2^53 and beyond every range above
		// it, whether read as an integer or as a float64.
		n, err := strconv.ParseInt(string(tok), 10, 64)
		return n, err == nil
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

// numberIn reads a JSON number with an integer value in [lo, hi]; a value
// of another kind is refused with want, one out of range with rule.
func (d *Decoder) numberIn(want, rule string, lo, hi int64) int64 {
	tok, ok := d.number(want)
	if !ok {
		return 0
	}
	v, ok := integral(tok)
	if !ok || v < lo || v > hi {
		d.Fail("must be " + rule + ", not " + shortValue(tok))
		return 0
	}
	return v
}

// decimal reads a JSON string of decimal digits in JSON's integer grammar
// (no sign but '-', no leading zero, no space) and parses it with parse.
func (d *Decoder) decimal(want string, parse func(string) bool) {
	raw, ok := d.rawString(want)
	if !ok {
		return
	}
	digits := raw[1 : len(raw)-1]
	if bytes.IndexByte(digits, '\\') >= 0 {
		s, _ := d.unquote(raw)
		digits = []byte(s)
	}
	if len(digits) == 2 && digits[0] == '-' && digits[1] == '0' {
		digits = digits[1:] // "-0" is 0, for uint64 too, as BigInt reads it
	}
	if !decimalInteger(digits) || !parse(string(digits)) {
		d.Fail("must be " + want + ", not " + shortValue(raw))
	}
}

func decimalInteger(s []byte) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Int32 reads an integer from -2^31 to 2^31-1.
func (d *Decoder) Int32() int32 {
	return int32(d.numberIn(int32Range, int32Range, math.MinInt32, math.MaxInt32))
}

// Uint32 reads an integer from 0 to 2^32-1.
func (d *Decoder) Uint32() uint32 {
	return uint32(d.numberIn(uint32Range, uint32Range, 0, math.MaxUint32))
}

// Int64 reads a decimal string ("-12") or a JSON number with an integer
// value from -(2^53-1) to 2^53-1.
func (d *Decoder) Int64() int64 {
	if d.peek() != '"' {
		return d.numberIn(int64Range, int64Number, -maxSafe, maxSafe)
	}
	var v int64
	d.decimal(int64Range, func(s string) bool {
		n, err := strconv.ParseInt(s, 10, 64)
		v = n
		return err == nil
	})
	return v
}

// Uint64 reads a decimal string ("18446744073709551615") or a JSON number
// with an integer value from 0 to 2^53-1.
func (d *Decoder) Uint64() uint64 {
	if d.peek() != '"' {
		return uint64(d.numberIn(uint64Range, uint64Number, 0, maxSafe))
	}
	var v uint64
	d.decimal(uint64Range, func(s string) bool {
		n, err := strconv.ParseUint(s, 10, 64)
		v = n
		return err == nil
	})
	return v
}

// shortInteger reads the next number when it is an integer of at most 15
// digits, not -0: such a token is exactly how Float64 writes its value, so
// a canonical writer can copy it.
func (d *Decoder) shortInteger() ([]byte, bool) {
	end := d.scanNumberEnd()
	tok := d.b[d.i:end]
	digits := tok
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(tok) > 1) {
		return nil, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return nil, false
		}
	}
	d.i = end
	return tok, true
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

// Bytes reads standard padded base64 (RFC 4648 §4) in a JSON string,
// strictly: no line breaks and no non-zero padding bits (§3.3, §3.5), so
// that one value has one encoding on every peer.
func (d *Decoder) Bytes() []byte {
	raw, ok := d.rawString("a base64 string")
	if !ok {
		return nil
	}
	s, _ := d.unquote(raw)
	out, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || strings.ContainsAny(s, "\r\n") {
		d.Fail("must be standard padded base64, not " + shortValue(raw))
		return nil
	}
	return out
}

// JSON reads any JSON value and returns it in its canonical form (see
// Encoder.JSON). Its strings and keys must be Unicode text and its numbers
// must fit a float64 (I-JSON, RFC 7493 §2.1, §2.2), so that every peer reads
// the same value; failures name the path inside the value ('any.a[1]').
func (d *Decoder) JSON() json.RawMessage {
	if d.err != nil {
		return nil
	}
	buf := getBuffer()
	e := Encoder{b: (*buf)[:0]}
	e.canonicalValue(d)
	var v json.RawMessage
	if d.err == nil {
		v = bytes.Clone(e.b)
	}
	*buf = e.b[:0]
	putBuffer(buf)
	return v
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
			if bytes.IndexByte(o.key, '\\') >= 0 {
				// Checks the escapes, as JSON.parse does; a bad one is the object's.
				_, _ = d.unquote(o.key)
				o.keyFailed = d.err != nil
			}
			d.Skip()
		}
	case c == '[':
		a := d.Array()
		for a.Next(d) {
			d.Skip()
		}
	case c == '"':
		if raw, ok := d.rawString("a value"); ok && bytes.IndexByte(raw, '\\') >= 0 {
			d.unquote(raw) // checks the escapes; a value never read may hold a lone surrogate
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
	if d.depth == MaxDepth {
		d.Fail("nests deeper than " + strconv.Itoa(MaxDepth) + " levels")
		return false
	}
	d.depth++
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
//
// When several members are refused, the one named is the first by code
// point order of the keys, whatever order they were sent in: the TypeScript
// decoder sees the object only after JSON.parse, which has lost that order
// (it puts keys such as "10" first), so both runtimes name the first the
// canonical form would write (docs/contract-language.md). So a refused
// member does not end the object: its failure is kept and its value
// skipped, and the object fails at its end with the first kept. A payload
// that is not JSON still ends at the first bad byte.
type Members struct {
	open, started, inValue bool
	keyFailed              bool   // the current key is refused, at the object's path
	key                    []byte // quoted, escapes in place
	dec                    *Decoder
	value, depth           int         // where the current value starts, and the depth there
	failed                 *fieldError // the member failure to report, once the object ends
	failedKey              string
}

// Next moves to the next member and reports whether there is one; Key is
// its key and the decoder is positioned at its value.
func (m *Members) Next(d *Decoder) bool {
	if d.err != nil {
		if !m.inValue {
			return false
		}
		m.inValue = false
		key, _ := d.unquote(m.key)
		if !m.keyFailed {
			d.err.in(keyElem(key))
		}
		if d.err.syntax {
			return false
		}
		if k := codePointKey(m.key); m.failed == nil || k < m.failedKey {
			m.failed, m.failedKey = d.err, k
		}
		// Skip what is left of the value: the containers the failure left
		// open, or the whole value when it failed before reading any of it
		// (a mismatch). A failure inside a value skipped its own rest, so
		// every byte is skipped once, however deep the nesting.
		d.err = nil
		if open := d.depth - m.depth; open > 0 || d.i == m.value {
			d.skipValue(open)
		}
		d.depth = m.depth
		if d.err != nil {
			return false
		}
	}
	if !m.open {
		return false
	}
	first := !m.started
	m.started = true
	if !d.next(first, '}') {
		m.open = false
		if m.failed != nil && d.err == nil {
			d.err = m.failed
		}
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
	d.ws()
	m.key, m.dec, m.inValue, m.keyFailed = raw, d, true, false
	m.value, m.depth = d.i, d.depth
	return true
}

// codePointKey is a quoted key as a string whose byte order is the order
// of the key's code points, and JavaScript's order for a lone surrogate
// escape (which the TypeScript runtime orders as the half of a pair, after
// U+FFFF; U+FFFD, what unescape writes for it, is not there): its UTF-16
// code units, surrogates moved past U+E000..U+FFFF, two bytes each.
func codePointKey(quoted []byte) string {
	s := quoted[1 : len(quoted)-1]
	var units []uint16
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			r, size := utf8.DecodeRune(s[i:])
			units = utf16.AppendRune(units, r)
			i += size
			continue
		}
		i += 2
		switch c = s[i-1]; c {
		case 'u':
			r, _ := hex4(s[i:])
			units = append(units, uint16(r))
			i += 4
			continue
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		}
		units = append(units, uint16(c))
	}
	b := make([]byte, 0, 2*len(units))
	for _, u := range units {
		switch {
		case u >= 0xe000:
			u -= 0x800
		case u >= 0xd800:
			u += 0x2000
		}
		b = append(b, byte(u>>8), byte(u))
	}
	return string(b)
}

// skipValue moves past the rest of a value that was refused, open
// containers of it already entered (with none, past one whole value): only
// where it ends matters, so it follows strings and brackets without
// reading the rest, and at any depth (a value refused for nesting too
// deeply too).
func (d *Decoder) skipValue(open int) {
	for {
		if d.ws(); d.i >= len(d.b) {
			return
		}
		switch c := d.b[d.i]; c {
		case '"':
			if _, ok := d.rawString("a value"); !ok {
				return
			}
		case '{', '[':
			open++
			d.i++
			continue
		case '}', ']':
			if open == 0 {
				return
			}
			open--
			d.i++
		case ',', ':':
			if open == 0 {
				return
			}
			d.i++
			continue
		default: // a number or a literal
			for d.i < len(d.b) && strings.IndexByte(",:{}[]\" \t\n\r", d.b[d.i]) < 0 {
				d.i++
			}
		}
		if open == 0 {
			return
		}
	}
}

// Key returns the current member's key without copying when it has no
// escapes: compare it with string(m.Key()), which does not allocate.
func (m *Members) Key() []byte {
	inner := m.key[1 : len(m.key)-1]
	if bytes.IndexByte(inner, '\\') >= 0 {
		s, _ := m.dec.unquote(m.key)
		return []byte(s)
	}
	return inner
}

// text returns the current member's key, which must be Unicode text (a map
// key or a key in a json value); a lone surrogate fails at the enclosing
// object, as the key cannot name a path.
func (m *Members) text(d *Decoder) string {
	s, lone := d.unquote(m.key)
	if lone {
		m.keyFailed = true
		d.Fail(loneSurrogate + ", not " + shortValue(m.key))
	}
	return s
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
