package typed

import (
	"bytes"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/transport-io/tiogen/runtime/wire"
)

// Codec is how one event slot's values become payload bytes and back
// (§5.3): JSON for every declared type, Raw for bytes() slots.
type Codec[T any] interface {
	// Append validates v and appends its encoding to dst.
	Append(dst []byte, v T) ([]byte, error)
	// Parse decodes and validates one payload; it does not keep b.
	Parse(b []byte) (T, error)
}

// JSON is the codec of a slot of a declared type, codec 0x01.
type JSON[T any] struct {
	Encode func(*Encoder, T)
	Decode func(*Decoder) T
}

// Append implements Codec.
func (c JSON[T]) Append(dst []byte, v T) ([]byte, error) {
	// Encoders and decoders escape through the generated functions they are
	// handed to, so they are pooled rather than allocated per message.
	e := encoders.Get().(*Encoder)
	*e = Encoder{b: dst, start: len(dst)}
	c.Encode(e, v)
	b, ferr := e.b, e.err
	*e = Encoder{}
	encoders.Put(e)
	if ferr != nil {
		return dst, ferr.wireError()
	}
	return b, nil
}

var (
	encoders = sync.Pool{New: func() any { return new(Encoder) }}
	decoders = sync.Pool{New: func() any { return new(Decoder) }}
)

// Parse implements Codec: exactly one JSON value, surrounded by nothing but
// white space, in UTF-8 (codec 0x01 is UTF-8 JSON, §5.3: invalid UTF-8 is
// refused, never replaced).
func (c JSON[T]) Parse(b []byte) (T, error) {
	if !utf8.Valid(b) {
		var zero T
		return zero, wire.Errorf(wire.ValidationFailed, "the payload is not UTF-8 (codec 0x01 is UTF-8 JSON, §5.3)")
	}
	d := decoders.Get().(*Decoder)
	*d = Decoder{b: b}
	v := c.Decode(d)
	if d.err == nil && !d.atEnd() {
		d.syntax("data after the value")
	}
	ferr := d.err
	*d = Decoder{}
	decoders.Put(d)
	if ferr != nil {
		var zero T
		return zero, ferr.wireError()
	}
	return v, nil
}

// Raw is the codec of a bytes() slot, codec 0x02: the payload is the value.
type Raw struct{}

// Append implements Codec.
func (Raw) Append(dst []byte, v []byte) ([]byte, error) { return append(dst, v...), nil }

// Parse implements Codec with a copy, so the value outlives the frame: an
// emit's payload is the engine's read buffer, reused for the next frame.
// Where the engine already handed the payload over (a call's request and
// its response), the helpers of this package take it without a copy
// (parseOwned).
func (Raw) Parse(b []byte) ([]byte, error) { return bytes.Clone(b), nil }

// parseOwned parses a payload that is the caller's to keep: a bytes() value
// is then the payload itself, with no copy; anything else is c.Parse.
func parseOwned[T any](c Codec[T], b []byte) (T, error) {
	if _, ok := any(c).(Raw); ok {
		return any(b).(T), nil
	}
	return c.Parse(b)
}

// Marshal is v as it travels in the JSON codec: int64 and uint64 as
// decimal strings, bytes as base64 (see the package doc). The MarshalJSON
// methods of generated types call it.
func Marshal[T any](encode func(*Encoder, T), v T) ([]byte, error) {
	buf := getBuffer()
	defer putBuffer(buf)
	b, err := JSON[T]{Encode: encode}.Append((*buf)[:0], v)
	*buf = b[:0]
	if err != nil {
		return nil, err
	}
	return bytes.Clone(b), nil
}

// Unmarshal decodes b into *v and validates it as it reads, as a received
// message is. The UnmarshalJSON methods of generated types call it.
func Unmarshal[T any](decode func(*Decoder) T, b []byte, v *T) error {
	got, err := JSON[T]{Decode: decode}.Parse(b)
	if err != nil {
		return err
	}
	*v = got
	return nil
}

// Validate reports whether v can be sent: the failure encoding it would
// return, naming the field (enum values known, floats finite, json fields
// valid JSON). Received values were validated as they were decoded. The
// Validate methods of generated types call it.
func Validate[T any](encode func(*Encoder, T), v T) error {
	buf := getBuffer()
	defer putBuffer(buf)
	_, err := JSON[T]{Encode: encode}.Append((*buf)[:0], v)
	return err
}

// buffers holds encode buffers between sends; the engine copies a payload
// into its own frame before Emit, Call or SendDatagram returns.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// maxPooled keeps one huge payload from pinning its buffer in the pool.
const maxPooled = 64 << 10

func getBuffer() *[]byte { return buffers.Get().(*[]byte) }

func putBuffer(b *[]byte) {
	if cap(*b) <= maxPooled {
		buffers.Put(b)
	}
}

// encode appends v with c to a pooled buffer and passes the bytes to send.
func encode[T any](c Codec[T], v T, send func([]byte) error) error {
	buf := getBuffer()
	b, err := c.Append((*buf)[:0], v)
	if err == nil {
		err = send(b)
	}
	*buf = b[:0]
	putBuffer(buf)
	return err
}

// List reads a JSON array of elements read by elem. An empty array reads
// as an empty list, not nil: an optional list that is present but empty
// stays present when it is sent on (nil is absent), as it does in
// TypeScript.
func List[T any](d *Decoder, elem func(*Decoder) T) []T {
	out := []T{}
	a := d.Array()
	for a.Next(d) {
		out = append(out, elem(d))
	}
	return out
}

// Map reads a JSON object of values read by elem. Of a key given twice the
// last value wins, as in JavaScript's JSON.parse, so that both runtimes read
// the same map; keys must be Unicode text.
func Map[T any](d *Decoder, elem func(*Decoder) T) map[string]T {
	out := map[string]T{}
	m := d.Object()
	for m.Next(d) {
		k := m.text(d)
		out[k] = elem(d)
	}
	return out
}

// Optional reads an optional field: null reads as absent.
func Optional[T any](d *Decoder, elem func(*Decoder) T) *T {
	if d.Null() {
		return nil
	}
	v := elem(d)
	return &v
}

// Enum reads one of an enum's values.
func Enum[T ~string](d *Decoder, values []T) T {
	if d.Failed() {
		return ""
	}
	if d.peek() != '"' {
		d.mismatch(enumWant(values))
		return ""
	}
	raw, ok := d.rawString("a string")
	if !ok {
		return ""
	}
	// Values are identifiers, so a value with escapes is compared unquoted.
	s := raw[1 : len(raw)-1]
	if bytes.IndexByte(s, '\\') >= 0 {
		u, _ := d.unquote(raw)
		s = []byte(u)
	}
	for _, v := range values {
		if string(v) == string(s) {
			return v
		}
	}
	d.Fail("must be " + enumWant(values) + ", not " + shortValue(raw))
	return ""
}

func enumWant[T ~string](values []T) string {
	var b bytes.Buffer
	b.WriteString("one of ")
	for i, v := range values {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("'" + string(v) + "'")
	}
	return b.String()
}

// EncodeList writes a JSON array; nil writes [].
func EncodeList[T any](e *Encoder, v []T, elem func(*Encoder, T)) {
	it := e.Array()
	for _, x := range v {
		it.Item(e)
		elem(e, x)
	}
	it.End(e)
}

// EncodeMap writes a JSON object with keys in ascending order, so equal maps
// encode to equal bytes; nil writes {}.
func EncodeMap[T any](e *Encoder, v map[string]T, elem func(*Encoder, T)) {
	var small [16]string // most maps are small: sort their keys without allocating
	keys := small[:0]
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	f := e.Object()
	for _, k := range keys {
		f.Key(e, k)
		elem(e, v[k])
	}
	f.End(e)
}

// EncodeEnum writes an enum value; one the contract does not declare fails.
func EncodeEnum[T ~string](e *Encoder, v T, values []T) {
	for _, known := range values {
		if v == known {
			e.String(string(v))
			return
		}
	}
	e.Fail("must be " + enumWant(values) + ", not '" + string(v) + "'")
	e.String(string(v))
}
