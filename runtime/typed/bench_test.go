package typed

import "testing"

// benchNote is a typical chat-sized record: strings, an int64, a list and a
// nested optional record.
var (
	benchCount = int64(1733000000000)
	benchNote  = note{Title: "hello, room", Count: &benchCount, Tags: []string{"a", "b", "c"}, Kind: "urgent",
		Next: &note{Title: "earlier line", Tags: nil, Kind: "plain"}}
	benchJSON = []byte(`{"title":"hello, room","count":"1733000000000","tags":["a","b","c"],"next":{"title":"earlier line","tags":[],"kind":"plain"},"kind":"urgent"}`)
)

func BenchmarkAppend(b *testing.B) {
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		out, err := codecNote.Append(buf[:0], benchNote)
		if err != nil {
			b.Fatal(err)
		}
		buf = out
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchJSON)))
	for b.Loop() {
		if _, err := codecNote.Parse(benchJSON); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFloat64(b *testing.B) {
	f := JSON[float64]{Encode: (*Encoder).Float64, Decode: (*Decoder).Float64}
	in := []byte(`-1234.5678`)
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		v, err := f.Parse(in)
		if err != nil {
			b.Fatal(err)
		}
		buf, _ = f.Append(buf[:0], v)
	}
}

func BenchmarkInt32Map(b *testing.B) {
	m := JSON[map[string]int32]{
		Encode: func(e *Encoder, v map[string]int32) { EncodeMap(e, v, (*Encoder).Int32) },
		Decode: func(d *Decoder) map[string]int32 { return Map(d, (*Decoder).Int32) },
	}
	in := []byte(`{"b":2,"a":1,"c":3,"d":-4}`)
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		v, err := m.Parse(in)
		if err != nil {
			b.Fatal(err)
		}
		buf, _ = m.Append(buf[:0], v)
	}
}

// BenchmarkJSONValue decodes and re-encodes a json value already in
// canonical form, what a peer relaying a tiogen message sees.
func BenchmarkJSONValue(b *testing.B) {
	in := []byte(`{"a":[1,2.5,"x",true,null],"b":{"c":"d","e":[{"f":1}]},"g":"hé"}`)
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		v, err := anyCodec.Parse(in)
		if err != nil {
			b.Fatal(err)
		}
		buf, _ = anyCodec.Append(buf[:0], v)
	}
}
