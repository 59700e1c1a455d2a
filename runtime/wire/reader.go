package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"sync"
)

// Buffer policy of Reader.
//
// Bytes are read ahead into a fixed readAhead-byte buffer, so a run of small
// frames costs about one Read of the stream per readAhead bytes rather than
// three Reads per frame, and a small frame's payload is handed out without a
// copy.
//
// A payload larger than that goes into a separate buffer that starts at
// readAhead bytes and grows in steps that at most double what has arrived,
// so a header that claims 16 MiB and is followed by nothing costs readAhead
// bytes, not 16 MiB (nor 64 KiB). With a Budget, every step is reserved
// from it first, and a refused step fails the frame. That buffer is
// released once shrinkAfter frames in a row have fit in retainCap bytes, so
// one large call does not pin its memory for the session's life, while a run
// of large frames keeps reusing it.
const (
	readAhead = 4 << 10
	// startAhead is the buffer a growing reader (ReadAhead) starts with, so
	// a long-lived stream that never carries more than its first frame (an
	// idle session's emit stream after the handshake) holds 512 bytes, not
	// readAhead; it doubles from there on the first Reads that fill it.
	startAhead  = 512
	retainCap   = 64 << 10
	shrinkAfter = 16
	// maxEmptyReads is how many (0, nil) reads in a row Next tolerates from
	// a broken io.Reader before it reports io.ErrNoProgress.
	maxEmptyReads = 100
)

// Reader decodes stream frames (§5) from a byte stream. It owns no
// goroutine and does no I/O beyond calling Read on the stream it wraps; it
// reads ahead of the current frame, so the stream belongs to it. It is not
// safe for concurrent use.
type Reader struct {
	r          io.Reader
	ahead      []byte // read-ahead buffer; unread bytes are ahead[start:end]
	start, end int
	// maxAhead, when above readAhead, lets ahead grow to it (ReadAhead);
	// filled (below) says the last Read filled all the room it was given,
	// and shortReads counts Reads in a row that would have fit readAhead.
	maxAhead   int
	shortReads int
	readErr    error  // an error the stream returned along with data, not yet reported
	big        []byte // payloads larger than the read-ahead buffer
	small      int    // frames in a row that fit in retainCap while big is larger
	err        error  // sticky: after a decode or read error the framing is lost
	// stream names the stream in the error of a type it does not carry
	// (valid, below).
	stream string
	// budget, when set, holds charged bytes: big's capacity.
	budget  Budget
	charged int
	// The small fields share the last word, so a Reader takes 192 B: an
	// idle session holds its emit stream's for its whole life.
	filled bool
	// shed says the read-ahead buffer was given up (Shed): the next Read
	// goes into first, and the buffer is made once bytes arrived.
	shed bool
	// valid, when not 0, are the types this stream carries (§5.2).
	valid Types
	first [HeaderLen]byte
}

// Budget bounds the bytes Readers hold for large payloads, across the
// Readers that share it.
type Budget interface {
	// Take reserves n more bytes, or returns the error to fail the frame
	// with when that would exceed the bound.
	Take(n int) error
	// Give returns n bytes taken before.
	Give(n int)
}

// Limit makes every growth of the large-payload buffer a reservation from
// b, given back when the buffer is released (Release, an error, or the
// shrink policy above).
func (r *Reader) Limit(b Budget) { r.budget = b }

// Keep returns p, the payload Next just returned, as the caller's to keep
// past the next Next: a large payload's buffer is handed over, with the
// bytes charged to the budget for it, which the caller gives back once done
// with it; a small one is copied, charged nothing.
func (r *Reader) Keep(p []byte) ([]byte, int) {
	if len(p) <= readAhead {
		return bytes.Clone(p), 0
	}
	charged := r.charged
	r.big, r.small, r.charged = nil, 0, 0
	return p, charged
}

// Release drops the large-payload buffer, giving its bytes back to the
// budget: a Frame.Payload from it must no longer be used.
func (r *Reader) Release() {
	r.big, r.small = nil, 0
	if r.budget != nil && r.charged > 0 {
		r.budget.Give(r.charged)
	}
	r.charged = 0
}

// reserve takes n bytes from the budget for a large-payload buffer about
// to replace the current one.
func (r *Reader) reserve(n int) error {
	if r.budget == nil {
		return nil
	}
	if err := r.budget.Take(n); err != nil {
		return err
	}
	r.charged += n
	return nil
}

// unreserve gives back a replaced buffer's n bytes.
func (r *Reader) unreserve(n int) {
	if r.budget != nil && n > 0 {
		r.budget.Give(n)
		r.charged -= n
	}
}

// NewReader returns a Reader of the frames on r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: r}
}

// readers holds Readers given back by Recycle with their read-ahead
// buffers, so a stream that lives for one call (§3.2) costs neither a
// Reader nor a readAhead-byte buffer.
var readers = sync.Pool{New: func() any { return new(Reader) }}

// AcquireReader is NewReader from a pool: the caller gives it back with
// Recycle once done with the stream.
func AcquireReader(r io.Reader) *Reader {
	rd := readers.Get().(*Reader)
	rd.r = r
	return rd
}

// Recycle gives r back to the pool of AcquireReader: it releases the
// large-payload buffer (Release) and keeps the read-ahead buffer. Neither
// r nor a Frame.Payload it returned may be used afterwards; a payload
// handed over by Keep stays the caller's.
func (r *Reader) Recycle() {
	r.Release()
	ahead := r.ahead
	*r = Reader{}
	if cap(ahead) == readAhead {
		r.ahead = ahead[:readAhead]
	}
	readers.Put(r)
}

// Ended reports that the stream ended cleanly right after the frames Next
// returned: its end of stream was read along with them (as QUIC
// implementations return it with a stream's last bytes) and nothing is
// buffered, so the next Next would return io.EOF without reading.
func (r *Reader) Ended() bool {
	return r.err == nil && r.start == r.end && r.readErr == io.EOF
}

// Buffered is the count of bytes read ahead and not yet returned: 0 when
// the next Next has to Read the stream.
func (r *Reader) Buffered() int { return r.end - r.start }

// ReadAhead lets the read-ahead buffer grow up to max bytes for a stream
// that carries more than it holds: it doubles whenever a Read filled all
// the room it had, and goes back to readAhead bytes after shrinkAfter
// Reads in a row that would have fit that. A long-lived stream at full
// speed then costs one Read per max bytes, as a raw reader with a buffer
// of that size, while an idle one holds readAhead bytes (startAhead if it
// never carried more than its first frame). Payloads larger
// than readAhead still go through the large-payload buffer.
func (r *Reader) ReadAhead(max int) { r.maxAhead = max }

// Only makes a type outside valid a protocol error on its header, before
// its payload is buffered, naming stream ("the emit stream"): a type
// invalid on the stream must not make the reader hold up to its cap first
// (§5.1, §5.2).
func (r *Reader) Only(valid Types, stream string) {
	r.valid, r.stream = valid, stream
}

// Next reads one frame. Frame.Payload aliases a buffer that is reused: it is
// valid until the next call to Next.
//
// The header is checked before any payload byte is buffered, in this order:
// Length ≥ 9 (§5.1), a known type (§5.2), a type valid on the stream when
// Only was called (§5.2), the type's payload cap (§5.1,
// WT_PAYLOAD_TOO_LARGE), reserved bits zero (§5.1), a known codec (§5.3,
// WT_UNSUPPORTED_CODEC), codec 0x01 on control frames (§5.3), and the event
// id rule of §5.4. Every decode error is an *Error (WT_PROTOCOL_ERROR unless
// said otherwise). Which frame may appear where beyond Only is the caller's
// concern.
//
// Next returns io.EOF only when the stream ends cleanly between frames,
// io.ErrUnexpectedEOF when it ends inside one, and the stream's own error
// otherwise. Errors are sticky: once Next fails, it keeps returning that
// error, because the frame boundaries are lost.
func (r *Reader) Next() (Frame, error) {
	if r.err != nil {
		return Frame{}, r.err
	}
	f, err := r.next()
	if err != nil {
		r.err = err
		if err != io.EOF {
			r.ahead = nil // kept at a clean end, for Recycle
		}
		r.Release()
	}
	return f, err
}

func (r *Reader) next() (Frame, error) {
	if err := r.fill(4); err != nil {
		if err == io.EOF && r.end == r.start {
			return Frame{}, io.EOF // a clean end between frames
		}
		return Frame{}, unexpected(err)
	}
	length := binary.BigEndian.Uint32(r.ahead[r.start:])
	if length < minLength {
		return Frame{}, Errorf(ProtocolError, "frame length %d is below the minimum of %d (§5.1)", length, minLength)
	}
	if err := r.fill(HeaderLen); err != nil {
		return Frame{}, unexpected(err)
	}
	h := r.ahead[r.start : r.start+HeaderLen]
	t, c := FrameType(h[4]), Codec(h[5])
	eventID := binary.BigEndian.Uint32(h[8:12])
	n := int(length) - 8
	if !t.Known() {
		return Frame{}, Errorf(ProtocolError, "reserved frame %s (§5.2)", t)
	}
	if r.valid != 0 && !r.valid.Has(t) {
		return Frame{}, Errorf(ProtocolError, "%s frame on %s (§5.2)", t, r.stream)
	}
	if n > t.MaxPayload() {
		return Frame{}, Errorf(PayloadTooLarge, "%s frame length %d exceeds the %d-byte payload cap (§5.1)", t, length, t.MaxPayload())
	}
	if h[6] != 0 || h[7] != 0 {
		return Frame{}, Errorf(ProtocolError, "%s frame with reserved bits 0x%02x%02x set (§5.1)", t, h[6], h[7])
	}
	if err := checkHeader(t, c, eventID, n); err != nil {
		return Frame{}, err
	}
	r.start += HeaderLen
	payload, err := r.readPayload(n)
	if err != nil {
		return Frame{}, unexpected(err)
	}
	return Frame{Type: t, Codec: c, EventID: eventID, Payload: payload}, nil
}

// fill makes at least n ≤ readAhead unread bytes available in r.ahead.
func (r *Reader) fill(n int) error {
	if r.end-r.start >= n {
		return nil
	}
	if r.ahead == nil {
		if r.shed {
			r.awaitShed()
		} else {
			r.ahead = make([]byte, r.startSize())
		}
	}
	size := r.nextSize()
	if size < n {
		size = readAhead // n ≤ readAhead, and a growing reader may start below it
	}
	if size != len(r.ahead) {
		// n ≤ readAhead ≤ size, and fewer than n bytes are unread.
		ahead := make([]byte, size)
		r.end = copy(ahead, r.ahead[r.start:r.end])
		r.start, r.ahead = 0, ahead
	} else if r.start > 0 {
		// Every Read goes to the buffer's start, after the fewer than n
		// bytes unread: a stream of small frames reuses the same first
		// bytes (in cache, where a cursor walking the whole buffer is not
		// once many sessions read), and a Read given all the room left
		// filled it only if the stream had about the buffer's size
		// (nextSize), not because the cursor neared the buffer's end.
		r.end = copy(r.ahead, r.ahead[r.start:r.end])
		r.start = 0
	}
	for empty := 0; r.end-r.start < n; {
		if r.readErr != nil {
			err := r.readErr
			r.readErr = nil
			return err
		}
		room := len(r.ahead) - r.end
		k, err := r.r.Read(r.ahead[r.end:])
		r.end += k
		r.readErr = err
		r.filled = k == room
		if k <= readAhead {
			r.shortReads++
		} else {
			r.shortReads = 0
		}
		if k == 0 && err == nil {
			if empty++; empty >= maxEmptyReads {
				return io.ErrNoProgress
			}
		}
	}
	return nil
}

// Shed gives up the read-ahead buffer while it holds nothing: the next Read
// waits on a header's worth of bytes inside the Reader, and a buffer is
// made once they arrived. It is for a stream that may stay quiet for long
// (an emit stream after its handshake), which then holds no buffer while
// it is; the stream's first bytes after it cost one Read more.
func (r *Reader) Shed() {
	if r.end == r.start && r.readErr == nil && r.err == nil {
		r.ahead, r.start, r.end, r.shed = nil, 0, 0, true
	}
}

// awaitShed is the Read after Shed: into first, then a new buffer, the
// bytes and the Read's error carried over as fill's loop would have.
func (r *Reader) awaitShed() {
	r.shed = false
	k, err := r.r.Read(r.first[:])
	r.ahead = make([]byte, r.startSize())
	r.start, r.end, r.readErr = 0, copy(r.ahead, r.first[:k]), err
}

// startSize is the read-ahead buffer's first size.
func (r *Reader) startSize() int {
	if r.maxAhead > readAhead {
		return startAhead
	}
	return readAhead
}

// nextSize is the size the read-ahead buffer should have for the next Read
// (see ReadAhead).
func (r *Reader) nextSize() int {
	size := len(r.ahead)
	switch {
	case r.maxAhead <= readAhead:
	case r.filled && size < r.maxAhead:
		r.filled, r.shortReads = false, 0
		return min(2*size, r.maxAhead)
	case r.shortReads >= shrinkAfter && size > readAhead:
		r.shortReads = 0
		return readAhead
	}
	return size
}

// readPayload returns the next n bytes of the stream, from the read-ahead
// buffer when they fit and from the large-payload buffer otherwise (see the
// buffer policy above).
func (r *Reader) readPayload(n int) ([]byte, error) {
	if cap(r.big) > retainCap {
		if n <= retainCap {
			if r.small++; r.small >= shrinkAfter {
				r.Release()
			}
		} else {
			r.small = 0
		}
	}
	if n <= readAhead {
		if err := r.fill(n); err != nil {
			return nil, err
		}
		p := r.ahead[r.start : r.start+n : r.start+n]
		r.start += n
		return p, nil
	}
	buf := r.big[:0]
	// The read-ahead buffer may hold this payload's first bytes and, when
	// it grew past readAhead, the frames after it.
	arrived := min(n, r.end-r.start)
	if cap(buf) < n && cap(buf) < arrived {
		// Too small even for what has arrived: replace it now.
		size := min(max(readAhead, arrived), n)
		if err := r.reserve(size); err != nil {
			return nil, err
		}
		r.unreserve(cap(buf))
		buf, r.big = make([]byte, 0, size), nil
	}
	buf = append(buf, r.ahead[r.start:r.start+arrived]...)
	if r.start += arrived; r.start == r.end {
		r.start, r.end = 0, 0
	}
	if len(buf) < n && r.readErr != nil {
		err := r.readErr
		r.readErr = nil
		return nil, err
	}
	for len(buf) < n {
		if len(buf) == cap(buf) {
			size := min(max(2*cap(buf), readAhead), n)
			if err := r.reserve(size); err != nil {
				return nil, err
			}
			grown := make([]byte, len(buf), size)
			copy(grown, buf)
			r.unreserve(cap(buf))
			buf = grown
			r.big = nil // replaced: what is charged is buf
		}
		k, err := io.ReadFull(r.r, buf[len(buf):min(cap(buf), n)])
		buf = buf[:len(buf)+k]
		if err != nil {
			return nil, err
		}
	}
	r.big = buf
	return buf, nil
}

// unexpected turns an end of stream inside a frame into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
