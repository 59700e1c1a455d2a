package wire

import "encoding/binary"

// Datagram sizes (§7.2, §7.4).
const (
	// DatagramHeaderLen is the fixed overhead of a datagram: codec, event
	// id, origin and sequence.
	DatagramHeaderLen = 13
	// DefaultDatagramSize is the effective datagram size when the transport
	// reports none (§7.4).
	DefaultDatagramSize = 1024
)

// Datagram is one unreliable-lane message (§7.1).
type Datagram struct {
	Codec   Codec
	EventID uint32
	Origin  uint32
	Seq     uint32
	Payload []byte
}

// AppendDatagram appends d in the §7.1 layout to dst. It does not check the
// size ceiling; the sender does that against MaxDatagramPayload (§7.4).
func AppendDatagram(dst []byte, d Datagram) []byte {
	var h [DatagramHeaderLen]byte
	h[0] = byte(d.Codec)
	binary.BigEndian.PutUint32(h[1:5], d.EventID)
	binary.BigEndian.PutUint32(h[5:9], d.Origin)
	binary.BigEndian.PutUint32(h[9:13], d.Seq)
	dst = append(dst, h[:]...)
	return append(dst, d.Payload...)
}

// ParseDatagram decodes a datagram; Payload aliases b. A datagram shorter
// than the 13-byte header carries no event and returns ok=false with no
// error: the receiver discards it silently (§7.2), which also covers the
// empty liveness probe. A reserved codec is WT_UNSUPPORTED_CODEC (§5.3); event
// id 0 (§7.2) and an empty payload (§7.2) are WT_PROTOCOL_ERROR. Origin and
// sequence are not judged here: a client's origin is stamped by its server,
// and sequence state belongs to the receiver (§7.3).
func ParseDatagram(b []byte) (d Datagram, ok bool, err error) {
	if len(b) < DatagramHeaderLen {
		return Datagram{}, false, nil
	}
	d = Datagram{
		Codec:   Codec(b[0]),
		EventID: binary.BigEndian.Uint32(b[1:5]),
		Origin:  binary.BigEndian.Uint32(b[5:9]),
		Seq:     binary.BigEndian.Uint32(b[9:13]),
		Payload: b[DatagramHeaderLen:],
	}
	if !d.Codec.Known() {
		return Datagram{}, false, Errorf(UnsupportedCodec, "datagram with reserved %s (§5.3)", d.Codec)
	}
	if d.EventID == 0 {
		return Datagram{}, false, Errorf(ProtocolError, "datagram with event id 0 (§7.2)")
	}
	if len(d.Payload) == 0 {
		return Datagram{}, false, Errorf(ProtocolError, "datagram with an empty payload (§7.2)")
	}
	return d, true, nil
}

// MaxDatagramPayload is the largest payload a datagram may carry when the
// transport reports transportMax as its maximum datagram size (§7.4); a
// report of zero or less means 1024. It is never negative.
func MaxDatagramPayload(transportMax int) int {
	if transportMax <= 0 {
		transportMax = DefaultDatagramSize
	}
	return max(transportMax-DatagramHeaderLen, 0)
}

// SeqNewer reports whether sequence seq is newer than last (§7.3): the
// comparison is circular over the u32 space, and a difference above
// 0x7FFFFFFF is read as wrap, not as progress.
func SeqNewer(seq, last uint32) bool {
	d := seq - last
	return d != 0 && d <= 0x7FFFFFFF
}

// NextSeq returns the sequence after seq (§7.3): sequences start at 1 and
// wrap from 0xFFFFFFFF to 1, never to 0. NextSeq(0) is 1, the first.
func NextSeq(seq uint32) uint32 {
	if seq == 0xFFFFFFFF {
		return 1
	}
	return seq + 1
}
