package wire_test

import (
	"bytes"
	"fmt"

	"github.com/transport-io/tiogen/runtime/wire"
)

// A frame (§5) written and read back: the event id is the first four bytes
// of SHA-256 of the event's name (§5.4).
func Example() {
	id := wire.EventID("chat")
	b, err := wire.AppendFrame(nil, wire.FrameEmit, wire.CodecJSON, id, []byte(`{"body":"hi"}`))
	if err != nil {
		panic(err)
	}
	fmt.Printf("% x\n", b[:12])
	f, err := wire.NewReader(bytes.NewReader(b)).Next()
	fmt.Println(f.Type, f.Codec, f.EventID == id, string(f.Payload), err)
	// Output:
	// 00 00 00 15 02 01 00 00 31 e0 6f 7d
	// EMIT json true {"body":"hi"} <nil>
}

// Codec 0x01 is UTF-8 JSON (§5.3): a JSON payload that is not UTF-8 is a
// protocol error, never text to repair.
func ExampleCodec_Carries() {
	fmt.Println(wire.CodecJSON.Carries([]byte(`"ünïcødé"`)))
	fmt.Println(wire.CodecJSON.Carries([]byte("\"\xff\"")))
	fmt.Println(wire.CodecBytes.Carries([]byte("\xff")))
	// Output:
	// true
	// false
	// true
}
