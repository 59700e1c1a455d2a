package nats

import (
	"encoding/binary"
	"errors"

	"github.com/transport-io/tiogen/runtime/wire"
)

// The envelope a broadcast crosses NATS in: a small binary header before
// the frame bytes the engine encoded once (§7.3), so receivers hand those
// bytes on as they arrived.
//
//	version  1 byte (envelopeVersion)
//	lane     1 byte (0 reliable, 1 unreliable)
//	origin   4 bytes, big-endian (§7.3; 0 when the server produced it)
//	stream   8 bytes: names the sender's sequence in this room, random
//	         when the sequence starts (a restarted host reusing its node
//	         id, or a sequence the sender forgot, starts a new stream)
//	seq      8 bytes, big-endian: the sender's sequence in this room
//	node     uvarint length, bytes
//	room     uvarint length, bytes (exact, whatever the subject)
//	except   uvarint count, then per peer id: uvarint length, bytes
//	frame    the rest
const envelopeVersion = 1

// envelopeFixed is the size of the fixed part of the header.
const envelopeFixed = 1 + 1 + 4 + 8 + 8

// envelopeBudget is the room for node id, room name and except list that
// a server's max_payload must leave beside a maximal frame.
const envelopeBudget = 64 << 10

// maxFrame is the largest frame the engine broadcasts: a maximal EMIT
// frame (§5.1).
const maxFrame = wire.HeaderLen + wire.MaxPayload

type envelope struct {
	lane   wire.Lane
	origin uint32
	stream uint64
	seq    uint64
	node   string // sending
	room   string
	except []string
	frame  []byte
	// Received, node and room alias the message instead: a receiver looks
	// them up without allocating.
	nodeB, roomB []byte
}

var errMalformed = errors.New("nats: malformed envelope")

func envelopeLen(e *envelope) int {
	n := envelopeFixed + uvarintLen(len(e.node)) + len(e.node) + uvarintLen(len(e.room)) + len(e.room) + uvarintLen(len(e.except))
	for _, id := range e.except {
		n += uvarintLen(len(id)) + len(id)
	}
	return n + len(e.frame)
}

func uvarintLen(v int) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func appendEnvelope(b []byte, e *envelope) []byte {
	lane := byte(0)
	if e.lane == wire.Unreliable {
		lane = 1
	}
	b = append(b, envelopeVersion, lane)
	b = binary.BigEndian.AppendUint32(b, e.origin)
	b = binary.BigEndian.AppendUint64(b, e.stream)
	b = binary.BigEndian.AppendUint64(b, e.seq)
	b = appendString(b, e.node)
	b = appendString(b, e.room)
	b = binary.AppendUvarint(b, uint64(len(e.except)))
	for _, id := range e.except {
		b = appendString(b, id)
	}
	return append(b, e.frame...)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// parseEnvelope decodes b; frame aliases b. Hostile input is rejected with
// errMalformed, never read past its end, and never allocates more than its
// own length.
func parseEnvelope(b []byte) (envelope, error) {
	var e envelope
	if len(b) < envelopeFixed || b[0] != envelopeVersion {
		return e, errMalformed
	}
	switch b[1] {
	case 0:
		e.lane = wire.Reliable
	case 1:
		e.lane = wire.Unreliable
	default:
		return e, errMalformed
	}
	e.origin = binary.BigEndian.Uint32(b[2:])
	e.stream = binary.BigEndian.Uint64(b[6:])
	e.seq = binary.BigEndian.Uint64(b[14:])
	rest := b[envelopeFixed:]
	var ok bool
	if e.nodeB, rest, ok = readBytes(rest); !ok {
		return e, errMalformed
	}
	if e.roomB, rest, ok = readBytes(rest); !ok {
		return e, errMalformed
	}
	count, n := binary.Uvarint(rest)
	// Each id takes at least its one length byte, so a count beyond the
	// bytes left is a lie, refused before anything is allocated for it.
	if n <= 0 || count > uint64(len(rest)-n) {
		return e, errMalformed
	}
	rest = rest[n:]
	if count > 0 {
		e.except = make([]string, count)
		for i := range e.except {
			if e.except[i], rest, ok = readString(rest); !ok {
				return e, errMalformed
			}
		}
	}
	if len(rest) == 0 {
		return e, errMalformed
	}
	e.frame = rest
	return e, nil
}

func readBytes(b []byte) ([]byte, []byte, bool) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return nil, nil, false
	}
	return b[n : n+int(l)], b[n+int(l):], true
}

func readString(b []byte) (string, []byte, bool) {
	s, rest, ok := readBytes(b)
	return string(s), rest, ok
}
