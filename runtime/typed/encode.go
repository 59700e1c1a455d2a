package typed

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/transport-io/tiogen/runtime/wire"
)

// Encoder appends one JSON value to a buffer. Generated encoders call it;
// what cannot be sent (an unknown enum value, a float that is not finite,
// a json field that is not valid JSON) is a validation failure named by
// field path, and Encode returns it instead of the bytes.
type Encoder struct {
	b []byte
	// start is where this value begins in b: what precedes it is the
	// caller's and takes no separator.
	start int
	err   *fieldError
	// unsorted stops canonical's one-pass write of a json value
	// (canonical.go).
	unsorted bool
}

// Fail records a validation failure of the value being written.
func (e *Encoder) Fail(msg string) {
	if e.err == nil {
		e.err = &fieldError{msg: msg}
	}
}

// comma separates an item from the previous one in an object or array.
func (e *Encoder) comma() {
	if n := len(e.b); n > e.start && e.b[n-1] != '{' && e.b[n-1] != '[' && e.b[n-1] != ':' {
		e.b = append(e.b, ',')
	}
}

// Bool writes a JSON boolean.
func (e *Encoder) Bool(v bool) {
	e.comma()
	e.b = strconv.AppendBool(e.b, v)
}

// String writes a JSON string exactly as JavaScript's JSON.stringify does
// (wire.AppendJSONString), so both runtimes send the same bytes.
func (e *Encoder) String(s string) {
	e.comma()
	e.b = wire.AppendJSONString(e.b, s)
}

// Int32 writes a JSON number.
func (e *Encoder) Int32(v int32) {
	e.comma()
	e.b = strconv.AppendInt(e.b, int64(v), 10)
}

// Uint32 writes a JSON number.
func (e *Encoder) Uint32(v uint32) {
	e.comma()
	e.b = strconv.AppendUint(e.b, uint64(v), 10)
}

// Int64 writes a decimal string, so that no JavaScript peer rounds it.
func (e *Encoder) Int64(v int64) {
	e.comma()
	e.b = append(e.b, '"')
	e.b = strconv.AppendInt(e.b, v, 10)
	e.b = append(e.b, '"')
}

// Uint64 writes a decimal string.
func (e *Encoder) Uint64(v uint64) {
	e.comma()
	e.b = append(e.b, '"')
	e.b = strconv.AppendUint(e.b, v, 10)
	e.b = append(e.b, '"')
}

// Float64 writes a JSON number in the shortest form that reads back
// exactly, as JavaScript writes it; NaN and infinities have no JSON form and
// fail.
func (e *Encoder) Float64(v float64) {
	e.comma()
	if math.IsNaN(v) || math.IsInf(v, 0) {
		e.Fail("must be a finite number, not " + strconv.FormatFloat(v, 'g', -1, 64))
		e.b = append(e.b, '0')
		return
	}
	if v == 0 {
		// -0 too: JSON.stringify(-0) is "0" (ECMAScript Number::toString).
		e.b = append(e.b, '0')
		return
	}
	// The same cut-over between plain and exponent forms as
	// ECMAScript's Number::toString and encoding/json.
	abs := math.Abs(v)
	format := byte('f')
	if abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	e.b = strconv.AppendFloat(e.b, v, format, -1, 64)
	if format == 'e' {
		// "1e-07" -> "1e-7", as JavaScript writes it.
		n := len(e.b)
		if n >= 4 && e.b[n-4] == 'e' && e.b[n-3] == '-' && e.b[n-2] == '0' {
			e.b[n-2] = e.b[n-1]
			e.b = e.b[:n-1]
		}
	}
}

// Bytes writes standard padded base64 in a JSON string.
func (e *Encoder) Bytes(v []byte) {
	e.comma()
	e.b = append(e.b, '"')
	e.b = base64.StdEncoding.AppendEncode(e.b, v)
	e.b = append(e.b, '"')
}

// JSON writes a json value in its canonical form, the one every tiogen
// runtime writes (docs/contract-language.md): compact; object members
// sorted by the code points of their keys, the last of duplicate keys
// kept; numbers read as float64 and written as Float64 writes them (1.0 ->
// 1, -0 -> 0); strings written as String writes them. nil writes null.
// What cannot travel fails as the decoder words it, at the path inside the
// value: bytes that are not one JSON value, a lone surrogate, a number
// beyond float64.
func (e *Encoder) JSON(v json.RawMessage) {
	if v == nil {
		e.comma()
		e.b = append(e.b, "null"...)
		return
	}
	mark := len(e.b)
	d := decoders.Get().(*Decoder)
	*d = Decoder{b: v}
	if !utf8.Valid(v) {
		d.Fail("is not UTF-8")
	}
	e.canonicalValue(d)
	if d.err == nil && !d.atEnd() {
		d.syntax("data after the value")
	}
	if d.err != nil {
		if e.err == nil {
			e.err = d.err
		}
		e.b = e.b[:mark]
		e.comma()
		e.b = append(e.b, "null"...)
	}
	*d = Decoder{}
	decoders.Put(d)
}

// Object starts a JSON object; write its members with Fields.Key and finish
// it with Fields.End.
func (e *Encoder) Object() Fields {
	e.comma()
	e.b = append(e.b, '{')
	return Fields{}
}

// Fields writes the members of an object. The failure of a member's value
// is attributed to its key as the error passes through Key or End.
type Fields struct {
	key     string
	inValue bool
}

func (f *Fields) settle(e *Encoder) {
	if e.err != nil && f.inValue {
		e.err.in(keyElem(f.key))
	}
	f.inValue = false
}

// Key writes a member's key; its value follows.
func (f *Fields) Key(e *Encoder, key string) {
	f.settle(e)
	e.comma()
	e.b = wire.AppendJSONString(e.b, key)
	e.b = append(e.b, ':')
	if e.err == nil {
		f.key, f.inValue = key, true
	}
}

// End closes the object.
func (f *Fields) End(e *Encoder) {
	f.settle(e)
	e.b = append(e.b, '}')
}

// Array starts a JSON array; call Items.Item before each element and
// Items.End after the last.
func (e *Encoder) Array() Items {
	e.comma()
	e.b = append(e.b, '[')
	return Items{index: -1}
}

// Items writes the elements of an array; a failure inside one is attributed
// to its index.
type Items struct {
	index   int
	inValue bool
}

func (it *Items) settle(e *Encoder) {
	if e.err != nil && it.inValue {
		e.err.in(indexElem(it.index))
	}
	it.inValue = false
}

// Item announces the next element.
func (it *Items) Item(e *Encoder) {
	it.settle(e)
	it.index++
	it.inValue = e.err == nil
}

// End closes the array.
func (it *Items) End(e *Encoder) {
	it.settle(e)
	e.b = append(e.b, ']')
}
