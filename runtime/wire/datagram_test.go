package wire

import (
	"bytes"
	"testing"
)

func TestSpec7_2_ShortDatagramIsDiscardedSilently(t *testing.T) {
	full := AppendDatagram(nil, Datagram{Codec: CodecJSON, EventID: 1, Origin: 1, Seq: 1, Payload: []byte("x")})
	for n := range DatagramHeaderLen {
		d, ok, err := ParseDatagram(full[:n])
		if ok || err != nil || d.Payload != nil {
			t.Errorf("%d bytes: ok=%v err=%v", n, ok, err)
		}
	}
}

func TestSpec7_2_ZeroLengthPayloadIsProtocolError(t *testing.T) {
	b := AppendDatagram(nil, Datagram{Codec: CodecJSON, EventID: 1, Origin: 1, Seq: 1})
	if len(b) != DatagramHeaderLen {
		t.Fatalf("len %d", len(b))
	}
	if _, ok, err := ParseDatagram(b); ok || CodeOf(err) != ProtocolError {
		t.Fatalf("ok=%v err=%v", ok, err)
	}
}

func TestSpec7_2_EventIDZeroIsInvalid(t *testing.T) {
	b := AppendDatagram(nil, Datagram{Codec: CodecJSON, EventID: 0, Origin: 1, Seq: 1, Payload: []byte("x")})
	if _, ok, err := ParseDatagram(b); ok || CodeOf(err) != ProtocolError {
		t.Fatalf("ok=%v err=%v", ok, err)
	}
}

func TestSpec7_2_CodecFollowsTheFrameTable(t *testing.T) {
	for v := range 256 {
		b := AppendDatagram(nil, Datagram{Codec: Codec(v), EventID: 1, Origin: 1, Seq: 1, Payload: []byte("x")})
		_, ok, err := ParseDatagram(b)
		if Codec(v).Known() != ok {
			t.Errorf("codec %#02x: ok=%v err=%v", v, ok, err)
		}
		if !ok && CodeOf(err) != UnsupportedCodec {
			t.Errorf("codec %#02x: got %v, want %s", v, err, UnsupportedCodec)
		}
	}
}

func TestSpec7_1_PayloadAliasesTheDatagram(t *testing.T) {
	b := AppendDatagram(nil, Datagram{Codec: CodecBytes, EventID: 9, Origin: 2, Seq: 3, Payload: []byte("abc")})
	d, ok, err := ParseDatagram(b)
	if !ok || err != nil || &d.Payload[0] != &b[DatagramHeaderLen] {
		t.Fatalf("ok=%v err=%v, payload not aliased", ok, err)
	}
	prefix := []byte("zz")
	if out := AppendDatagram(prefix, d); !bytes.Equal(out, append([]byte("zz"), b...)) {
		t.Fatalf("AppendDatagram lost the prefix: % x", out)
	}
}

func TestSpec7_4_MaxPayloadIsTransportMaxMinus13(t *testing.T) {
	for _, c := range []struct{ transportMax, want int }{
		{0, 1011}, {-5, 1011}, {1024, 1011}, {1200, 1187}, {14, 1}, {13, 0}, {5, 0},
	} {
		if got := MaxDatagramPayload(c.transportMax); got != c.want {
			t.Errorf("MaxDatagramPayload(%d) = %d, want %d", c.transportMax, got, c.want)
		}
	}
}

func TestSpec7_3_SequenceComparisonIsCircular(t *testing.T) {
	for _, c := range []struct {
		seq, last uint32
		newer     bool
	}{
		{2, 1, true},
		{1, 1, false},
		{1, 2, false},
		{1, 0xFFFFFFFF, true},  // wrap: 0xFFFFFFFF -> 1
		{0xFFFFFFFF, 1, false}, // the old side of the wrap
		{0x80000000, 1, true},  // difference 0x7FFFFFFF: progress
		{0x80000001, 1, false}, // difference 0x80000000: read as wrap
		{0, 0x80000001, true},
	} {
		if got := SeqNewer(c.seq, c.last); got != c.newer {
			t.Errorf("SeqNewer(%#x, %#x) = %v, want %v", c.seq, c.last, got, c.newer)
		}
	}
}

func TestSpec7_3_SequenceStartsAtOneAndWrapsToOne(t *testing.T) {
	if NextSeq(0) != 1 || NextSeq(1) != 2 || NextSeq(0xFFFFFFFE) != 0xFFFFFFFF || NextSeq(0xFFFFFFFF) != 1 {
		t.Fatal("NextSeq does not start at 1 or wrap to 1")
	}
	if !SeqNewer(NextSeq(0xFFFFFFFF), 0xFFFFFFFF) {
		t.Fatal("the wrapped sequence is not newer than the last before the wrap")
	}
}

func TestSpec7_1_DatagramCodecDoesNotAllocate(t *testing.T) {
	d := Datagram{Codec: CodecJSON, EventID: 7, Origin: 1, Seq: 1, Payload: []byte(`{"x":1}`)}
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() {
		buf = AppendDatagram(buf[:0], d)
		if _, ok, err := ParseDatagram(buf); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}); n != 0 {
		t.Fatalf("%v allocs", n)
	}
}
