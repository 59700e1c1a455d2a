package typed_test

import (
	"fmt"

	"github.com/transport-io/tiogen/runtime/typed"
)

// point is a record written the way generated code writes one.
type point struct{ X, Y int32 }

func encodePoint(e *typed.Encoder, p point) {
	f := e.Object()
	f.Key(e, "x")
	e.Int32(p.X)
	f.Key(e, "y")
	e.Int32(p.Y)
	f.End(e)
}

func decodePoint(d *typed.Decoder) (p point) {
	var seen [2]bool
	m := d.Object()
	for m.Next(d) {
		switch string(m.Key()) {
		case "x":
			p.X, seen[0] = d.Int32(), true
		case "y":
			p.Y, seen[1] = d.Int32(), true
		default:
			d.Skip()
		}
	}
	d.Require(seen[:], "x", "y")
	return p
}

// The JSON codec of a slot: what is sent is validated on the way out, what
// arrives on the way in, and a failure names the field (WT_VALIDATION_FAILED).
func ExampleJSON() {
	codec := typed.JSON[point]{Encode: encodePoint, Decode: decodePoint}
	b, _ := codec.Append(nil, point{X: 3, Y: 4})
	fmt.Println(string(b))
	p, err := codec.Parse([]byte(`{"y":2,"x":1,"z":"ignored"}`))
	fmt.Println(p, err)
	_, err = codec.Parse([]byte(`{"x":1}`))
	fmt.Println(err)
	// Output:
	// {"x":3,"y":4}
	// {1 2} <nil>
	// WT_VALIDATION_FAILED: field 'y' is required (Match the schema.)
}
