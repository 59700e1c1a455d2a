package wire

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"slices"
	"testing"
)

// The golden vectors live in testdata/wire/vectors.json, shared with the
// TypeScript runtime's tests. testdata/wire/gen_vectors.py, an encoder
// written independently of this package, produced them, so checking both
// directions here tests this codec against the spec's layouts, not against
// itself.

type vectorFile struct {
	Description string
	Frames      []struct {
		Name          string
		Clause        string
		Type          uint8
		Codec         uint8
		EventID       uint32 `json:"eventId"`
		PayloadHex    string `json:"payloadHex"`
		PayloadRepeat *struct {
			Hex   string
			Count int
		} `json:"payloadRepeat"`
		Hex string
	}
	InvalidFrames []struct {
		Name, Clause, Hex string
		Code              Code
	} `json:"invalidFrames"`
	TruncatedFrames []struct {
		Name, Hex, Error string
	} `json:"truncatedFrames"`
	Datagrams []struct {
		Name, Clause string
		Codec        uint8
		EventID      uint32 `json:"eventId"`
		Origin, Seq  uint32
		PayloadHex   string `json:"payloadHex"`
		Hex          string
	}
	InvalidDatagrams []struct {
		Name, Clause, Hex string
		Code              string // a WT_ code, or "discard" for §7.2's silent discard
	} `json:"invalidDatagrams"`
	Handshakes []struct {
		Name, Clause string
		JSON         string `json:"json"`
		Encodes      bool
		V            int
		Feat         []string
		Events       [][3]any
	}
	InvalidHandshakes []struct {
		Name string
		JSON string `json:"json"`
		Code Code
	} `json:"invalidHandshakes"`
	WebSocketCloseCodes []struct {
		SessionCode uint32 `json:"sessionCode"`
		WebSocket   uint16 `json:"webSocket"`
	} `json:"webSocketCloseCodes"`
}

func loadVectors(t testing.TB) *vectorFile {
	t.Helper()
	b, err := os.ReadFile("../../testdata/wire/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectorFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	if len(v.Frames) == 0 || len(v.InvalidFrames) == 0 || len(v.Datagrams) == 0 || len(v.Handshakes) == 0 {
		t.Fatal("vectors.json is missing a section")
	}
	return &v
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSpec5_GoldenFramesBothWays(t *testing.T) {
	v := loadVectors(t)
	seen := map[FrameType]bool{}
	for _, f := range v.Frames {
		t.Run(f.Name, func(t *testing.T) {
			payload := unhex(t, f.PayloadHex)
			if r := f.PayloadRepeat; r != nil {
				payload = append(payload, bytes.Repeat(unhex(t, r.Hex), r.Count)...)
			}
			encoded, err := AppendFrame(nil, FrameType(f.Type), Codec(f.Codec), f.EventID, payload)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			want := unhex(t, f.Hex)
			if f.PayloadRepeat != nil {
				want = append(want, payload...)
			}
			if !bytes.Equal(encoded, want) {
				t.Fatalf("encode:\n got % x\nwant % x", head(encoded), head(want))
			}
			got, err := NewReader(bytes.NewReader(want)).Next()
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got.Type != FrameType(f.Type) || got.Codec != Codec(f.Codec) || got.EventID != f.EventID || !bytes.Equal(got.Payload, payload) {
				t.Fatalf("decode: got %v %v %d (%d bytes)", got.Type, got.Codec, got.EventID, len(got.Payload))
			}
			seen[got.Type] = true
		})
	}
	for ft := FrameHandshake; ft <= FrameDatagram; ft++ {
		if !seen[ft] {
			t.Errorf("no golden vector for %v", ft)
		}
	}
}

func head(b []byte) []byte { return b[:min(len(b), 64)] }

func TestSpec5_GoldenInvalidFramesCarryTheirCode(t *testing.T) {
	v := loadVectors(t)
	for _, f := range v.InvalidFrames {
		t.Run(f.Name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(unhex(t, f.Hex))).Next()
			if CodeOf(err) != f.Code {
				t.Fatalf("got %v, want %s", err, f.Code)
			}
		})
	}
}

func TestSpec5_GoldenTruncatedFrames(t *testing.T) {
	v := loadVectors(t)
	want := map[string]error{"EOF": io.EOF, "UnexpectedEOF": io.ErrUnexpectedEOF}
	for _, f := range v.TruncatedFrames {
		t.Run(f.Name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(unhex(t, f.Hex))).Next()
			if err != want[f.Error] || want[f.Error] == nil {
				t.Fatalf("got %v, want %s", err, f.Error)
			}
		})
	}
}

func TestSpec7_1_GoldenDatagramsBothWays(t *testing.T) {
	v := loadVectors(t)
	for _, d := range v.Datagrams {
		t.Run(d.Name, func(t *testing.T) {
			want := Datagram{Codec: Codec(d.Codec), EventID: d.EventID, Origin: d.Origin, Seq: d.Seq, Payload: unhex(t, d.PayloadHex)}
			b := unhex(t, d.Hex)
			if got := AppendDatagram(nil, want); !bytes.Equal(got, b) {
				t.Fatalf("encode:\n got % x\nwant % x", got, b)
			}
			got, ok, err := ParseDatagram(b)
			if !ok || err != nil {
				t.Fatalf("decode: ok=%v err=%v", ok, err)
			}
			if got.Codec != want.Codec || got.EventID != want.EventID || got.Origin != want.Origin || got.Seq != want.Seq || !bytes.Equal(got.Payload, want.Payload) {
				t.Fatalf("decode: got %+v, want %+v", got, want)
			}
		})
	}
	for _, d := range v.InvalidDatagrams {
		t.Run(d.Name, func(t *testing.T) {
			_, ok, err := ParseDatagram(unhex(t, d.Hex))
			if ok {
				t.Fatal("accepted")
			}
			if d.Code == "discard" {
				if err != nil {
					t.Fatalf("want a silent discard, got %v", err)
				}
				return
			}
			if CodeOf(err) != Code(d.Code) {
				t.Fatalf("got %v, want %s", err, d.Code)
			}
		})
	}
}

func TestSpec4_GoldenHandshakesBothWays(t *testing.T) {
	v := loadVectors(t)
	for _, h := range v.Handshakes {
		t.Run(h.Name, func(t *testing.T) {
			want := Handshake{V: h.V, Feat: h.Feat}
			for _, e := range h.Events {
				want.Events = append(want.Events, EventEntry{Name: e[0].(string), ID: uint32(e[1].(float64)), Lane: Lane(e[2].(string))})
			}
			got, err := DecodeHandshake([]byte(h.JSON))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got.V != want.V || !slices.Equal(got.Feat, want.Feat) || !slices.Equal(got.Events, want.Events) {
				t.Fatalf("decode: got %+v, want %+v", got, want)
			}
			if !h.Encodes {
				return
			}
			// Encode from a reversed table: the encoder must sort (§4.3).
			shuffled := want
			shuffled.Events = slices.Clone(want.Events)
			slices.Reverse(shuffled.Events)
			if enc := AppendHandshake(nil, shuffled); string(enc) != h.JSON {
				t.Fatalf("encode:\n got %s\nwant %s", enc, h.JSON)
			}
		})
	}
	for _, h := range v.InvalidHandshakes {
		t.Run(h.Name, func(t *testing.T) {
			_, err := DecodeHandshake([]byte(h.JSON))
			if CodeOf(err) != h.Code {
				t.Fatalf("got %v, want %s", err, h.Code)
			}
		})
	}
}

func TestSpec3_3_GoldenWebSocketCloseCodes(t *testing.T) {
	v := loadVectors(t)
	for _, c := range v.WebSocketCloseCodes {
		if got := WebSocketCloseCode(c.SessionCode); got != c.WebSocket {
			t.Errorf("WebSocketCloseCode(%d) = %d, want %d", c.SessionCode, got, c.WebSocket)
		}
		if got, ok := SessionCodeFromWebSocket(c.WebSocket); !ok || got != c.SessionCode {
			t.Errorf("SessionCodeFromWebSocket(%d) = %d, %v", c.WebSocket, got, ok)
		}
	}
}

// The spec's own bytes, pinned here as well as in the file, so an edit to
// the file cannot silently change them.
func TestSpec5_EmitExampleBytes(t *testing.T) {
	want := []byte{0x00, 0x00, 0x00, 0x0a, 0x02, 0x01, 0x00, 0x00, 0x31, 0xe0, 0x6f, 0x7d, 0xaa, 0xbb}
	got, err := AppendFrame(nil, FrameEmit, CodecJSON, EventID("chat"), []byte{0xaa, 0xbb})
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("got % x, %v", got, err)
	}
	r := NewReader(bytes.NewReader(want))
	f, err := r.Next()
	if err != nil || f.Type != FrameEmit || f.Codec != CodecJSON || f.EventID != 836792189 || !bytes.Equal(f.Payload, []byte{0xaa, 0xbb}) {
		t.Fatalf("got %+v, %v", f, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after the frame: %v, want io.EOF", err)
	}
}
