package wire

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
)

// mixedStream is frames of small and large payloads back to back, so a
// large payload's last bytes share the read-ahead buffer with the frames
// after it.
func mixedStream(t *testing.T) ([]byte, [][]byte) {
	t.Helper()
	var stream []byte
	var payloads [][]byte
	for i, size := range []int{10, 5000, 30, 20000, 1, 70000, 4096, 4097, 64 << 10, 3, 200} {
		p := bytes.Repeat([]byte{byte('a' + i)}, size)
		var err error
		if stream, err = AppendFrame(stream, FrameEmit, CodecBytes, uint32(i+1), p); err != nil {
			t.Fatal(err)
		}
		payloads = append(payloads, p)
	}
	return stream, payloads
}

// readsMixedStream checks that r yields want's payloads as frames 1, 2, …
// and then a clean end.
func readsMixedStream(t *testing.T, name string, r *Reader, want [][]byte) {
	t.Helper()
	for i, w := range want {
		f, err := r.Next()
		if err != nil || f.EventID != uint32(i+1) || !bytes.Equal(f.Payload, w) {
			t.Fatalf("%s: frame %d: id %d, %d bytes, %v; want %d bytes", name, i, f.EventID, len(f.Payload), err, len(w))
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("%s: after the last frame: %v, want io.EOF", name, err)
	}
}

// §5: every frame is decoded whole and in order whatever size the
// read-ahead buffer has grown to, including a large payload's tail followed
// by other frames in the same Read.
func TestSpec5_FramesSurviveAGrownReadAhead(t *testing.T) {
	stream, want := mixedStream(t)
	for name, src := range map[string]func() io.Reader{
		"whole reads":   func() io.Reader { return bytes.NewReader(stream) },
		"half reads":    func() io.Reader { return iotest.HalfReader(bytes.NewReader(stream)) },
		"EOF with data": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(stream)) },
		"one byte":      func() io.Reader { return iotest.OneByteReader(bytes.NewReader(stream)) },
	} {
		r := NewReader(src())
		r.ReadAhead(64 << 10)
		readsMixedStream(t, name, r, want)
	}
}

// chunkReader returns at most chunk bytes of an endless stream per Read.
type chunkReader struct {
	repeater
	chunk int
}

func (c *chunkReader) Read(p []byte) (int, error) { return c.repeater.Read(p[:min(len(p), c.chunk)]) }

func TestReadAheadGrowsToItsBoundAndShrinksBack(t *testing.T) {
	frame, _ := AppendFrame(nil, FrameEmit, CodecJSON, 7, bytes.Repeat([]byte("x"), 1024))
	src := &chunkReader{repeater: repeater{frame: bytes.Repeat(frame, 64)}, chunk: 1 << 20}
	r := NewReader(src)
	r.ReadAhead(64 << 10)
	next := func(n int) {
		t.Helper()
		for range n {
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		}
	}
	next(2000)
	if len(r.ahead) != 64<<10 {
		t.Fatalf("read-ahead is %d bytes on a stream with more than it holds, want %d", len(r.ahead), 64<<10)
	}
	reads := src.reads
	next(6400)
	if per := float64(src.reads-reads) / 6400; per > 0.05 {
		t.Fatalf("%.3f Reads per 1 KiB frame with a 64 KiB read-ahead, want ≤ 0.05", per)
	}
	src.chunk = 512 // the stream slows to small reads
	next(200)
	if len(r.ahead) != readAhead {
		t.Fatalf("read-ahead is %d bytes after a run of small reads, want %d", len(r.ahead), readAhead)
	}
	// Without ReadAhead the buffer never grows.
	plain := NewReader(&chunkReader{repeater: repeater{frame: frame}, chunk: 1 << 20})
	for range 1000 {
		if _, err := plain.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if len(plain.ahead) != readAhead {
		t.Fatalf("read-ahead grew to %d bytes without ReadAhead", len(plain.ahead))
	}
}

func TestReaderEndedOnlyWhenTheEndCameWithTheFrame(t *testing.T) {
	frame, _ := AppendFrame(nil, FrameCallRequest, CodecJSON, 7, []byte("{}"))
	withEOF := NewReader(iotest.DataErrReader(bytes.NewReader(frame)))
	if _, err := withEOF.Next(); err != nil {
		t.Fatal(err)
	}
	if !withEOF.Ended() {
		t.Fatal("Ended is false though the stream's end was read with the frame")
	}
	later := NewReader(bytes.NewReader(frame)) // (n, nil), then (0, io.EOF)
	if _, err := later.Next(); err != nil {
		t.Fatal(err)
	}
	if later.Ended() {
		t.Fatal("Ended is true before the stream's end was read")
	}
	two := NewReader(iotest.DataErrReader(bytes.NewReader(append(bytes.Clone(frame), frame...))))
	if _, err := two.Next(); err != nil {
		t.Fatal(err)
	}
	if two.Ended() {
		t.Fatal("Ended is true with a frame still buffered")
	}
}

func TestRecycledReaderStartsClean(t *testing.T) {
	big := bytes.Repeat([]byte("b"), 10000)
	stream, _ := AppendFrame(nil, FrameCallRequest, CodecBytes, 7, big)
	stream, _ = AppendFrame(stream, FrameCallResponse, CodecBytes, 0, []byte{0xff})
	b := budget{max: 1 << 20}
	r := AcquireReader(bytes.NewReader(stream))
	r.Limit(&b)
	r.Only(TypesOf(FrameCallRequest), "a call stream")
	f, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	kept, charged := r.Keep(f.Payload)
	if _, err := r.Next(); CodeOf(err) != ProtocolError {
		t.Fatalf("CALL_RESPONSE refused by Only: %v", err)
	}
	r.Recycle()
	if !bytes.Equal(kept, big) || charged == 0 {
		t.Fatalf("a kept payload did not survive Recycle (%d bytes, %d charged)", len(kept), charged)
	}
	b.Give(charged)
	if b.held != 0 {
		t.Fatalf("%d bytes still charged after Recycle", b.held)
	}
	small, _ := AppendFrame(nil, FrameCallResponse, CodecJSON, 0, []byte(`"ok"`))
	for range 10 { // from the pool or new: either starts with no state
		r := AcquireReader(iotest.DataErrReader(bytes.NewReader(small)))
		f, err := r.Next()
		if err != nil || string(f.Payload) != `"ok"` || !r.Ended() {
			t.Fatalf("a recycled reader read %q, %v (ended %v)", f.Payload, err, r.Ended())
		}
		r.Recycle()
	}
}

// TestGrowingReaderStartsSmall: a reader with ReadAhead holds startAhead
// bytes after a first small frame (an idle session's emit stream after its
// handshake), and still takes a payload above that and below readAhead.
func TestGrowingReaderStartsSmall(t *testing.T) {
	small, _ := AppendFrame(nil, FrameHandshake, CodecJSON, 0, []byte(`{"v":0}`))
	mid, _ := AppendFrame(nil, FrameEmit, CodecJSON, 7, bytes.Repeat([]byte("x"), 3000))
	src := &chunkReader{repeater: repeater{frame: small}, chunk: len(small)}
	r := NewReader(src)
	r.ReadAhead(64 << 10)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if len(r.ahead) != startAhead {
		t.Fatalf("read-ahead is %d bytes after one small frame, want %d", len(r.ahead), startAhead)
	}
	src.frame, src.off, src.chunk = mid, 0, 1<<20
	for range 10 {
		f, err := r.Next()
		if err != nil || len(f.Payload) != 3000 {
			t.Fatalf("a 3000-byte payload after a small start: %d bytes, %v", len(f.Payload), err)
		}
	}
}

// §5: a Reader that shed its read-ahead buffer holds none until bytes
// arrive, then decodes every frame after it whole and in order, however
// the stream hands them over, and still reports a clean end between
// frames and an end inside one.
func TestSpec5_FramesSurviveAShedReadAhead(t *testing.T) {
	stream, want := mixedStream(t)
	first, _ := AppendFrame(nil, FrameHandshake, CodecJSON, 0, []byte(`{}`))
	for name, src := range map[string]func(b []byte) io.Reader{
		"whole reads":   func(b []byte) io.Reader { return bytes.NewReader(b) },
		"half reads":    func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) },
		"EOF with data": func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) },
		"one byte":      func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
	} {
		// The first frame alone in the first Read, as a handshake is.
		r := NewReader(io.MultiReader(bytes.NewReader(first), src(stream)))
		r.ReadAhead(64 << 10)
		if f, err := r.Next(); err != nil || f.Type != FrameHandshake {
			t.Fatalf("%s: frame 0: %+v, %v", name, f, err)
		}
		r.Shed()
		if r.ahead != nil {
			t.Fatalf("%s: %d bytes of read-ahead held after Shed with nothing buffered", name, len(r.ahead))
		}
		readsMixedStream(t, name, r, want)
	}
	for name, tail := range map[string][]byte{"clean end": nil, "end inside a header": stream[:5], "end inside a payload": stream[:20]} {
		r := NewReader(io.MultiReader(bytes.NewReader(first), bytes.NewReader(tail)))
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		r.Shed()
		_, err := r.Next()
		if wantErr := map[bool]error{true: io.EOF, false: io.ErrUnexpectedEOF}[tail == nil]; err != wantErr {
			t.Fatalf("%s after Shed: %v, want %v", name, err, wantErr)
		}
	}
	// Bytes still buffered are kept: Shed then does nothing.
	r := NewReader(bytes.NewReader(append(append([]byte(nil), first...), stream...)))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	r.Shed()
	if r.ahead == nil || r.Buffered() == 0 {
		t.Fatal("Shed dropped buffered bytes")
	}
	if f, err := r.Next(); err != nil || !bytes.Equal(f.Payload, want[0]) {
		t.Fatalf("the frame after a Shed with bytes buffered: %v", err)
	}
}

// pacedReader is an endless stream of one frame that arrives a frame at a
// time: a Read returns at most the rest of the current frame, and keeps
// the room it was given.
type pacedReader struct {
	frame []byte
	off   int
	rooms []int
}

func (r *pacedReader) Read(p []byte) (int, error) {
	r.rooms = append(r.rooms, len(p))
	n := copy(p, r.frame[r.off:])
	r.off = (r.off + n) % len(r.frame)
	return n, nil
}

// A paced stream (a member of a fan-out): every Read brings one small frame
// and nothing is left unread. Each Read is then given the whole buffer, so
// the stream's bytes land in the same first bytes of it (kept in cache
// across 500 sessions, where a cursor walking the buffer is not), and a
// Read that ended a few bytes before the buffer's end does not count as one
// that filled it: the buffer neither grows nor shrinks, and reading
// allocates nothing.
func TestReadAheadStaysPutForOneFrameReads(t *testing.T) {
	frame, _ := AppendFrame(nil, FrameEmit, CodecJSON, 7, bytes.Repeat([]byte("x"), 100))
	src := &pacedReader{frame: frame}
	r := NewReader(src)
	r.ReadAhead(64 << 10)
	for range 100 { // past the first size
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	size := len(r.ahead)
	src.rooms = make([]int, 0, 8192)              // the Reads' record allocates nothing either
	if allocs := testing.AllocsPerRun(1, func() { // all 2,000 frames' allocations counted, not their average
		for range 2000 {
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		}
	}); allocs != 0 {
		t.Fatalf("%.0f allocations over 2,000 one-frame Reads, want 0", allocs)
	}
	if len(r.ahead) != size {
		t.Fatalf("read-ahead went from %d to %d bytes on one-frame Reads", size, len(r.ahead))
	}
	for i, room := range src.rooms {
		if room != size {
			t.Fatalf("Read %d was given %d bytes of the %d-byte buffer with nothing unread", i, room, size)
		}
	}
}
