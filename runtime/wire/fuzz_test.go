package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// seedVectors adds the bytes of every frame and datagram vector, valid or
// not, to the corpus through add.
func seedVectors(f *testing.F, add func(b []byte)) {
	v := loadVectors(f)
	for _, x := range v.Frames {
		add(unhex(f, x.Hex))
	}
	for _, x := range v.InvalidFrames {
		add(unhex(f, x.Hex))
	}
	for _, x := range v.Datagrams {
		add(unhex(f, x.Hex))
	}
	for _, x := range v.InvalidDatagrams {
		add(unhex(f, x.Hex))
	}
}

// FuzzReader: any byte stream yields frames, a clean end or an error, never
// a panic; every frame it yields obeys §5 and re-encodes to the bytes it was
// read from; and the reader never holds more than twice what it was given
// plus the first chunk (no allocation the input cannot justify).
func FuzzReader(f *testing.F) {
	seedVectors(f, func(b []byte) { f.Add(b) })
	f.Fuzz(func(t *testing.T, in []byte) {
		src := &countingReader{r: bytes.NewReader(in)}
		r := NewReader(src)
		consumed := 0
		for {
			fr, err := r.Next()
			if err != nil {
				var e *Error
				if err != io.EOF && err != io.ErrUnexpectedEOF && !errors.As(err, &e) {
					t.Fatalf("unexpected error type %T: %v", err, err)
				}
				if err == io.EOF && consumed != len(in) {
					t.Fatalf("io.EOF with %d of %d bytes consumed", consumed, len(in))
				}
				break
			}
			if cap(r.big) > 2*len(in)+readAhead {
				t.Fatalf("buffer of %d bytes for %d bytes of input", cap(r.big), len(in))
			}
			again, err := AppendFrame(nil, fr.Type, fr.Codec, fr.EventID, fr.Payload)
			if err != nil {
				t.Fatalf("a decoded frame does not encode: %v", err)
			}
			if !bytes.Equal(again, in[consumed:consumed+len(again)]) {
				t.Fatalf("re-encoding differs from the input")
			}
			consumed += len(again)
		}
	})
}

// FuzzParseDatagram: no panic; an accepted datagram re-encodes to its bytes,
// and a short one is always a silent discard.
func FuzzParseDatagram(f *testing.F) {
	seedVectors(f, func(b []byte) { f.Add(b) })
	f.Fuzz(func(t *testing.T, in []byte) {
		d, ok, err := ParseDatagram(in)
		if len(in) < DatagramHeaderLen {
			if ok || err != nil {
				t.Fatalf("short datagram: ok=%v err=%v", ok, err)
			}
			return
		}
		if ok == (err != nil) {
			t.Fatalf("ok=%v with err=%v", ok, err)
		}
		if ok && !bytes.Equal(AppendDatagram(nil, d), in) {
			t.Fatal("re-encoding differs from the input")
		}
		if !ok && CodeOf(err) == "" {
			t.Fatalf("error without a code: %v", err)
		}
	})
}

// FuzzDecodeHandshake: no panic; an accepted handshake re-encodes to a
// handshake that decodes to the same value; a refusal is WT_PROTOCOL_ERROR,
// or WT_PROTOCOL_VERSION_MISMATCH for a v other than 0 (§4.2).
func FuzzDecodeHandshake(f *testing.F) {
	v := loadVectors(f)
	for _, h := range v.Handshakes {
		f.Add([]byte(h.JSON))
	}
	for _, h := range v.InvalidHandshakes {
		f.Add([]byte(h.JSON))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err := DecodeHandshake(in)
		if err != nil {
			if c := CodeOf(err); c != ProtocolError && c != ProtocolVersionMismatch {
				t.Fatalf("error without WT_PROTOCOL_ERROR or WT_PROTOCOL_VERSION_MISMATCH: %v", err)
			}
			return
		}
		enc := AppendHandshake(nil, h)
		h2, err := DecodeHandshake(enc)
		if err != nil {
			t.Fatalf("re-encoded handshake refused: %v\n%s", err, enc)
		}
		if !bytes.Equal(AppendHandshake(nil, h2), enc) {
			t.Fatalf("encoding is not stable:\n%s", enc)
		}
	})
}

// FuzzControlPayloads: the JSON control payloads never panic and refuse
// with a code.
func FuzzControlPayloads(f *testing.F) {
	for _, s := range []string{`{"credit":16}`, `{"room":"lobby"}`, `{"code":"WT_X","message":"m"}`, `{"credit":1e9}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if n, ok := ParseCredit(in); ok && n <= 0 {
			t.Fatalf("credit %d accepted", n)
		}
		if room, err := ParseRoom(in); err == nil {
			if back, err := ParseRoom(AppendRoom(nil, room)); err != nil || back != room {
				t.Fatalf("room %q does not round-trip: %q, %v", room, back, err)
			}
		} else if CodeOf(err) != ProtocolError {
			t.Fatal(err)
		}
		if e, err := ParseCallError(in); err == nil {
			if back, err := ParseCallError(AppendCallError(nil, e)); err != nil || back != e {
				t.Fatalf("call error %+v does not round-trip: %+v, %v", e, back, err)
			}
		} else if CodeOf(err) != ProtocolError {
			t.Fatal(err)
		}
	})
}
