package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
)

func BenchmarkPutHeader(b *testing.B) {
	var hdr [HeaderLen]byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		PutHeader(hdr[:], FrameEmit, CodecJSON, uint32(i)|1, 64)
	}
}

// BenchmarkDecodeHeader is the header half of Reader.Next: the §5 checks on
// 12 bytes already in memory.
func BenchmarkDecodeHeader(b *testing.B) {
	var hdr [HeaderLen]byte
	PutHeader(hdr[:], FrameEmit, CodecJSON, 7, 64)
	b.ReportAllocs()
	for b.Loop() {
		length := binary.BigEndian.Uint32(hdr[:4])
		if length < minLength || hdr[6]|hdr[7] != 0 {
			b.Fatal("bad header")
		}
		if err := checkHeader(FrameType(hdr[4]), Codec(hdr[5]), binary.BigEndian.Uint32(hdr[8:]), int(length)-8); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendFrame(b *testing.B) {
	for _, size := range []int{64, 1024} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			payload := bytes.Repeat([]byte("x"), size)
			buf := make([]byte, 0, HeaderLen+size)
			b.SetBytes(int64(HeaderLen + size))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				buf, err = AppendFrame(buf[:0], FrameEmit, CodecJSON, 7, payload)
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkReaderNext(b *testing.B) {
	for _, c := range []struct {
		size, ahead int
	}{{64, 0}, {1024, 0}, {64, 64 << 10}, {1024, 64 << 10}} {
		name := fmt.Sprintf("%dB", c.size)
		if c.ahead > 0 {
			name += fmt.Sprintf("/readahead%dK", c.ahead>>10)
		}
		b.Run(name, func(b *testing.B) {
			frame, _ := AppendFrame(nil, FrameEmit, CodecJSON, 7, bytes.Repeat([]byte("x"), c.size))
			// 256 frames back to back, replayed: the reader sees one long stream.
			stream := bytes.Repeat(frame, 256)
			src := &repeater{frame: stream}
			r := NewReader(src)
			r.ReadAhead(c.ahead)
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			frames := 0
			for b.Loop() {
				if _, err := r.Next(); err != nil {
					b.Fatal(err)
				}
				frames++
			}
			// Each Read of a QUIC stream takes a lock; fewer is better.
			b.ReportMetric(float64(src.reads)/float64(frames), "reads/frame")
		})
	}
}

func BenchmarkParseDatagram(b *testing.B) {
	d := AppendDatagram(nil, Datagram{Codec: CodecJSON, EventID: 7, Origin: 1, Seq: 1, Payload: []byte(`{"x":1,"y":2}`)})
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := ParseDatagram(d); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkAppendDatagram(b *testing.B) {
	d := Datagram{Codec: CodecJSON, EventID: 7, Origin: 1, Seq: 1, Payload: []byte(`{"x":1,"y":2}`)}
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendDatagram(buf[:0], d)
	}
}

func BenchmarkParseCredit(b *testing.B) {
	p := AppendCredit(nil, 16)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := ParseCredit(p); !ok {
			b.Fatal("refused")
		}
	}
}

func BenchmarkDecodeHandshake(b *testing.B) {
	p := AppendHandshake(nil, Handshake{Events: specTable})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeHandshake(p); err != nil {
			b.Fatal(err)
		}
	}
}
