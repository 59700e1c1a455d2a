package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

// header builds a raw 12-byte header without validation, for hostile input.
func header(length uint32, t FrameType, c Codec, reserved uint16, eventID uint32) []byte {
	b := make([]byte, HeaderLen)
	binary.BigEndian.PutUint32(b[0:], length)
	b[4], b[5] = byte(t), byte(c)
	binary.BigEndian.PutUint16(b[6:], reserved)
	binary.BigEndian.PutUint32(b[8:], eventID)
	return b
}

// validID returns an event id that satisfies §5.4 for type t.
func validID(t FrameType) uint32 {
	if t.hasEventID() {
		return 0x31e06f7d
	}
	return 0
}

// countingReader counts the bytes a Reader pulls from the stream.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestSpec5_1_LengthBelowNineIsProtocolError(t *testing.T) {
	for length := range uint32(minLength) {
		in := append(header(length, FrameEmit, CodecJSON, 0, 1), 0xaa, 0xbb)
		_, err := NewReader(bytes.NewReader(in)).Next()
		if CodeOf(err) != ProtocolError {
			t.Errorf("length %d: got %v, want %s", length, err, ProtocolError)
		}
	}
	// Decided from the four length bytes alone: nothing else need arrive.
	_, err := NewReader(bytes.NewReader([]byte{0, 0, 0, 8})).Next()
	if CodeOf(err) != ProtocolError {
		t.Errorf("bare length 8: got %v", err)
	}
}

func TestSpec5_1_EmptyPayloadRefusedOnEncode(t *testing.T) {
	for ft := FrameHandshake; ft <= FrameDatagram; ft++ {
		dst := []byte("keep")
		got, err := AppendFrame(dst, ft, CodecJSON, validID(ft), nil)
		if CodeOf(err) != ProtocolError || string(got) != "keep" {
			t.Errorf("%v: got %q, %v", ft, got, err)
		}
	}
}

func TestSpec5_1_CapIsDecidedByType(t *testing.T) {
	for ft := FrameHandshake; ft <= FrameDatagram; ft++ {
		limit := MaxPayload
		if ft == FrameCallRequest || ft == FrameCallResponse || ft == FrameCallError {
			limit = MaxCallPayload
		}
		if ft.MaxPayload() != limit {
			t.Errorf("%v.MaxPayload() = %d, want %d", ft, ft.MaxPayload(), limit)
		}
		c := CodecJSON
		// At the cap: accepted, and the whole payload is read.
		at := io.MultiReader(bytes.NewReader(header(uint32(8+limit), ft, c, 0, validID(ft))), io.LimitReader(zeros{}, int64(limit)))
		f, err := NewReader(at).Next()
		if err != nil || len(f.Payload) != limit {
			t.Errorf("%v at the cap: %d bytes, %v", ft, len(f.Payload), err)
		}
		// One byte over: WT_PAYLOAD_TOO_LARGE, decided with no more of the
		// stream read than the fixed read-ahead.
		over := &countingReader{r: io.MultiReader(bytes.NewReader(header(uint32(9+limit), ft, c, 0, validID(ft))), zeros{})}
		_, err = NewReader(over).Next()
		if CodeOf(err) != PayloadTooLarge {
			t.Errorf("%v over the cap: got %v", ft, err)
		}
		if over.n > readAhead {
			t.Errorf("%v over the cap: read %d bytes before refusing", ft, over.n)
		}
		payload := make([]byte, limit+1)
		if _, err := AppendFrame(nil, ft, c, validID(ft), payload); CodeOf(err) != PayloadTooLarge {
			t.Errorf("%v encode over the cap: got %v", ft, err)
		}
	}
}

func TestSpec5_1_EmitLength1048585IsTooLargeButCallResponseIsNot(t *testing.T) {
	_, err := NewReader(bytes.NewReader(header(1048585, FrameEmit, CodecJSON, 0, 1))).Next()
	if CodeOf(err) != PayloadTooLarge {
		t.Fatalf("EMIT: got %v", err)
	}
	in := io.MultiReader(bytes.NewReader(header(1048585, FrameCallResponse, CodecJSON, 0, 0)), io.LimitReader(zeros{}, 1048577))
	f, err := NewReader(in).Next()
	if err != nil || len(f.Payload) != 1048577 {
		t.Fatalf("CALL_RESPONSE: %d bytes, %v", len(f.Payload), err)
	}
}

// A 12-byte input claiming a 16 MiB call frame must not cost 16 MiB: the
// payload buffer grows only as bytes arrive.
func TestSpec5_1_ClaimedLengthIsNotAllocatedUpFront(t *testing.T) {
	in := header(uint32(8+MaxCallPayload), FrameCallResponse, CodecBytes, 0, 0)
	allocated := bytesAllocated(func() {
		_, err := NewReader(bytes.NewReader(in)).Next()
		if err != io.ErrUnexpectedEOF {
			t.Errorf("got %v, want io.ErrUnexpectedEOF", err)
		}
	})
	// The read-ahead buffer and a first large-payload step of the same
	// size: not 64 KiB, not the 16 MiB announced.
	if allocated > 2*readAhead+512 {
		t.Fatalf("allocated %d bytes for a 12-byte input", allocated)
	}
	// A peer that sends 1 MiB of a claimed 16 MiB frame costs about 2 MiB.
	sent := 1 << 20
	allocated = bytesAllocated(func() {
		_, err := NewReader(io.MultiReader(bytes.NewReader(in), io.LimitReader(zeros{}, int64(sent)))).Next()
		if err != io.ErrUnexpectedEOF {
			t.Errorf("got %v, want io.ErrUnexpectedEOF", err)
		}
	})
	if allocated > 4*uint64(sent)+4*readAhead {
		t.Fatalf("allocated %d bytes after receiving %d", allocated, sent)
	}
}

// bytesAllocated is the fewest bytes the process allocated over three runs
// of f, on one P: the count is process-wide, so another goroutine's
// allocations (the race detector's, the test runner's) can only add to it.
func bytesAllocated(f func()) uint64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	fewest := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		fewest = min(fewest, after.TotalAlloc-before.TotalAlloc)
	}
	return fewest
}

func TestSpec5_1_ReservedBitsMustBeZero(t *testing.T) {
	for _, reserved := range []uint16{0x0001, 0x0100, 0x8000, 0xffff} {
		in := append(header(9, FrameEmit, CodecJSON, reserved, 1), 'x')
		if _, err := NewReader(bytes.NewReader(in)).Next(); CodeOf(err) != ProtocolError {
			t.Errorf("reserved %#04x: got %v", reserved, err)
		}
	}
	b, err := AppendFrame(nil, FrameEmit, CodecJSON, 1, []byte("x"))
	if err != nil || b[6] != 0 || b[7] != 0 {
		t.Fatalf("encoder reserved bytes % x, %v", b[6:8], err)
	}
}

func TestSpec5_2_ReservedTypesAreProtocolErrors(t *testing.T) {
	for v := range 256 {
		ft := FrameType(v)
		if ft.Known() != (v >= 1 && v <= 9) {
			t.Errorf("%#02x: Known() = %v", v, ft.Known())
		}
		if ft.Known() {
			continue
		}
		in := append(header(9, ft, CodecJSON, 0, 0), 'x')
		if _, err := NewReader(bytes.NewReader(in)).Next(); CodeOf(err) != ProtocolError {
			t.Errorf("type %#02x: got %v", v, err)
		}
		if _, err := AppendFrame(nil, ft, CodecJSON, 0, []byte("x")); CodeOf(err) != ProtocolError {
			t.Errorf("encode type %#02x: got %v", v, err)
		}
	}
}

func TestSpec5_2_TypeNames(t *testing.T) {
	want := []string{"", "HANDSHAKE", "EMIT", "CALL_REQUEST", "CALL_RESPONSE", "CALL_ERROR", "JOIN", "LEAVE", "CALL_CREDIT", "DATAGRAM"}
	for v := 1; v <= 9; v++ {
		if got := FrameType(v).String(); got != want[v] {
			t.Errorf("%d: %q", v, got)
		}
	}
	if got := FrameType(0x0a).String(); got != "type 0x0a" {
		t.Errorf("reserved: %q", got)
	}
}

func TestSpec5_3_ReservedCodecsAreUnsupported(t *testing.T) {
	for v := range 256 {
		c := Codec(v)
		if c.Known() {
			continue
		}
		in := append(header(9, FrameEmit, c, 0, 1), 'x')
		if _, err := NewReader(bytes.NewReader(in)).Next(); CodeOf(err) != UnsupportedCodec {
			t.Errorf("codec %#02x: got %v", v, err)
		}
		if _, err := AppendFrame(nil, FrameEmit, c, 1, []byte("x")); CodeOf(err) != UnsupportedCodec {
			t.Errorf("encode codec %#02x: got %v", v, err)
		}
	}
}

func TestSpec5_3_ControlFramesCarryCodecJSON(t *testing.T) {
	control := map[FrameType]bool{FrameHandshake: true, FrameJoin: true, FrameLeave: true, FrameCallError: true, FrameCallCredit: true, FrameDatagram: true}
	for ft := FrameHandshake; ft <= FrameDatagram; ft++ {
		in := append(header(9, ft, CodecBytes, 0, validID(ft)), 'x')
		_, err := NewReader(bytes.NewReader(in)).Next()
		_, encErr := AppendFrame(nil, ft, CodecBytes, validID(ft), []byte("x"))
		if control[ft] {
			if CodeOf(err) != ProtocolError || CodeOf(encErr) != ProtocolError {
				t.Errorf("%v with bytes codec: decode %v, encode %v", ft, err, encErr)
			}
		} else if err != nil || encErr != nil {
			t.Errorf("%v with bytes codec refused: decode %v, encode %v", ft, err, encErr)
		}
	}
}

func TestSpec5_4_EventIDZeroExactlyWhereSpecSays(t *testing.T) {
	named := map[FrameType]bool{FrameEmit: true, FrameCallRequest: true}
	for ft := FrameHandshake; ft <= FrameDatagram; ft++ {
		for _, id := range []uint32{0, 1, 0xffffffff} {
			in := append(header(9, ft, CodecJSON, 0, id), 'x')
			_, err := NewReader(bytes.NewReader(in)).Next()
			_, encErr := AppendFrame(nil, ft, CodecJSON, id, []byte("x"))
			valid := (id != 0) == named[ft]
			if valid && (err != nil || encErr != nil) {
				t.Errorf("%v id %d refused: %v / %v", ft, id, err, encErr)
			}
			if !valid && (CodeOf(err) != ProtocolError || CodeOf(encErr) != ProtocolError) {
				t.Errorf("%v id %d: decode %v, encode %v, want %s", ft, id, err, encErr, ProtocolError)
			}
		}
	}
}

// §5: a byte stream does not preserve write boundaries; the reader must
// recover every frame however the bytes are split.
func TestSpec5_FramesSurviveAnySplitOfTheStream(t *testing.T) {
	var stream []byte
	var want []Frame
	for i := range 50 {
		payload := bytes.Repeat([]byte{byte(i)}, 1+i*37)
		ft, id := FrameEmit, uint32(i+1)
		if i%3 == 0 {
			ft, id = FrameCallResponse, 0
		}
		var err error
		stream, err = AppendFrame(stream, ft, CodecBytes, id, payload)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, Frame{Type: ft, Codec: CodecBytes, EventID: id, Payload: payload})
	}
	for name, r := range map[string]io.Reader{
		"one byte at a time": iotest.OneByteReader(bytes.NewReader(stream)),
		"half reads":         iotest.HalfReader(bytes.NewReader(stream)),
		"EOF with data":      iotest.DataErrReader(bytes.NewReader(stream)),
	} {
		fr := NewReader(r)
		for i, w := range want {
			f, err := fr.Next()
			if err != nil || f.Type != w.Type || f.EventID != w.EventID || !bytes.Equal(f.Payload, w.Payload) {
				t.Fatalf("%s: frame %d: %v %d (%d bytes), %v", name, i, f.Type, f.EventID, len(f.Payload), err)
			}
		}
		if _, err := fr.Next(); err != io.EOF {
			t.Fatalf("%s: after the last frame: %v, want io.EOF", name, err)
		}
	}
}

func TestReaderEndsAndErrors(t *testing.T) {
	frame, _ := AppendFrame(nil, FrameEmit, CodecJSON, 1, []byte("{}"))
	for cut := 1; cut < len(frame); cut++ {
		_, err := NewReader(bytes.NewReader(frame[:cut])).Next()
		if err != io.ErrUnexpectedEOF {
			t.Errorf("cut at %d: got %v, want io.ErrUnexpectedEOF", cut, err)
		}
	}
	if _, err := NewReader(bytes.NewReader(nil)).Next(); err != io.EOF {
		t.Errorf("empty stream: got %v, want io.EOF", err)
	}
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(bytes.NewReader(frame), iotest.ErrReader(boom)))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != boom {
		t.Errorf("stream error: got %v, want it unchanged", err)
	}
	if _, err := r.Next(); err != boom {
		t.Errorf("second call: got %v, want the sticky error", err)
	}
	// A decode error is sticky too: the boundaries after it are unknown.
	bad := append(header(9, FrameEmit, CodecJSON, 1, 1), 'x')
	r = NewReader(bytes.NewReader(append(bad, frame...)))
	_, err1 := r.Next()
	_, err2 := r.Next()
	if CodeOf(err1) != ProtocolError || err2 != err1 {
		t.Errorf("got %v then %v", err1, err2)
	}
}

func TestAppendFrameKeepsWhatDstHolds(t *testing.T) {
	dst := make([]byte, 3, 64)
	copy(dst, "abc")
	out, err := AppendFrame(dst, FrameEmit, CodecJSON, 1, []byte("{}"))
	if err != nil || string(out[:3]) != "abc" || len(out) != 3+HeaderLen+2 || &out[0] != &dst[0] {
		t.Fatalf("got %q (%v); want appended in place", out, err)
	}
	small := []byte("abc")
	out, _ = AppendFrame(small, FrameEmit, CodecJSON, 1, []byte("{}"))
	if string(out[:3]) != "abc" || len(out) != 3+HeaderLen+2 {
		t.Fatalf("grown: %q", out)
	}
}

func TestReaderReusesItsBufferAndReleasesALargeOne(t *testing.T) {
	var stream []byte
	big := make([]byte, 4*retainCap)
	stream, _ = AppendFrame(stream, FrameCallResponse, CodecBytes, 0, big)
	stream, _ = AppendFrame(stream, FrameCallResponse, CodecBytes, 0, big)
	for range shrinkAfter {
		stream, _ = AppendFrame(stream, FrameEmit, CodecBytes, 1, []byte("small"))
	}
	r := NewReader(bytes.NewReader(stream))
	f1, _ := r.Next()
	f2, _ := r.Next()
	if &f1.Payload[0] != &f2.Payload[0] {
		t.Error("a second large frame did not reuse the buffer")
	}
	for i := range shrinkAfter {
		f, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if i < shrinkAfter-1 && cap(r.big) < len(big) {
			t.Fatalf("released after %d small frames, want %d", i+1, shrinkAfter)
		}
		if string(f.Payload) != "small" {
			t.Fatalf("payload %q", f.Payload)
		}
	}
	if cap(r.big) > retainCap {
		t.Fatalf("buffer of %d bytes kept after %d small frames", cap(r.big), shrinkAfter)
	}
}

// No allocation per frame header (COMMON performance rule), on either side.
func TestSpec5_HeaderEncodeAndDecodeDoNotAllocate(t *testing.T) {
	var hdr [HeaderLen]byte
	if n := testing.AllocsPerRun(100, func() { PutHeader(hdr[:], FrameEmit, CodecJSON, 7, 64) }); n != 0 {
		t.Errorf("PutHeader: %v allocs", n)
	}
	buf := make([]byte, 0, 256)
	payload := make([]byte, 64)
	if n := testing.AllocsPerRun(100, func() {
		buf, _ = AppendFrame(buf[:0], FrameEmit, CodecJSON, 7, payload)
	}); n != 0 {
		t.Errorf("AppendFrame into a reused buffer: %v allocs", n)
	}
	frame, _ := AppendFrame(nil, FrameEmit, CodecJSON, 7, payload)
	src := &repeater{frame: frame}
	r := NewReader(src)
	if _, err := r.Next(); err != nil { // the first frame sizes the buffer
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Reader.Next: %v allocs", n)
	}
}

// repeater serves the same bytes for ever, counting Read calls.
type repeater struct {
	frame []byte
	off   int
	reads int
}

func (r *repeater) Read(p []byte) (int, error) {
	r.reads++
	n := 0
	for n < len(p) {
		k := copy(p[n:], r.frame[r.off:])
		n += k
		r.off = (r.off + k) % len(r.frame)
	}
	return n, nil
}

// §5.1: every header check is made before the payload is buffered: a
// refused header followed by an endless stream is answered at once.
func TestSpec5_1_HeaderIsJudgedBeforeThePayloadIsBuffered(t *testing.T) {
	for name, h := range map[string][]byte{
		"reserved type":     header(1<<20, 0x0a, CodecJSON, 0, 0),
		"over the cap":      header(1<<20+9, FrameEmit, CodecJSON, 0, 1),
		"reserved bits":     header(1<<20, FrameEmit, CodecJSON, 1, 1),
		"reserved codec":    header(1<<20, FrameEmit, 0x03, 0, 1),
		"control codec":     header(1<<20, FrameJoin, CodecBytes, 0, 0),
		"event id on JOIN":  header(1<<20, FrameJoin, CodecJSON, 0, 1),
		"no id on EMIT":     header(1<<20, FrameEmit, CodecJSON, 0, 0),
		"call cap exceeded": header(16<<20+9, FrameCallRequest, CodecJSON, 0, 1),
	} {
		var src *countingReader
		var err error
		allocated := bytesAllocated(func() {
			src = &countingReader{r: io.MultiReader(bytes.NewReader(h), zeros{})}
			_, err = NewReader(src).Next()
		})
		if CodeOf(err) == "" {
			t.Errorf("%s: got %v", name, err)
		}
		if src.n > readAhead || allocated > 2*readAhead {
			t.Errorf("%s: read %d bytes and allocated %d before refusing", name, src.n, allocated)
		}
	}
}

type stuck struct{}

func (stuck) Read([]byte) (int, error) { return 0, nil }

func TestReaderGivesUpOnAStreamThatNeverProgresses(t *testing.T) {
	if _, err := NewReader(stuck{}).Next(); err != io.ErrNoProgress {
		t.Fatalf("got %v, want io.ErrNoProgress", err)
	}
}

// §5.1, §5.2: a type the stream does not carry is refused on its header,
// before its payload is buffered: a call frame's header announcing the
// 16 MiB cap on an emit stream, followed by an endless payload, is a
// protocol error naming the type and the stream at once.
func TestSpec5_2_TypeInvalidOnTheStreamIsRefusedOnTheHeader(t *testing.T) {
	for _, ft := range []FrameType{FrameCallRequest, FrameCallResponse, FrameCallError, FrameCallCredit} {
		h := header(uint32(8+ft.MaxPayload()), ft, CodecJSON, 0, validID(ft))
		var src *countingReader
		var err error
		allocated := bytesAllocated(func() {
			src = &countingReader{r: io.MultiReader(bytes.NewReader(h), zeros{})}
			r := NewReader(src)
			r.Only(EmitStreamTypes, "the emit stream")
			_, err = r.Next()
		})
		var e *Error
		if !errors.As(err, &e) || e.Code != ProtocolError || !strings.Contains(e.Message, ft.String()+" frame on the emit stream") {
			t.Errorf("%s: got %v, want WT_PROTOCOL_ERROR naming it and the emit stream", ft, err)
		}
		if src.n > readAhead || allocated > 2*readAhead {
			t.Errorf("%s: read %d bytes and allocated %d before refusing", ft, src.n, allocated)
		}
	}
	for _, ft := range []FrameType{FrameHandshake, FrameEmit, FrameJoin, FrameLeave, FrameDatagram} {
		if !EmitStreamTypes.Has(ft) {
			t.Errorf("%s is valid on the emit stream (§5.2)", ft)
		}
	}
}

// budget is a Budget of max bytes.
type budget struct{ held, max int }

func (b *budget) Take(n int) error {
	if b.held+n > b.max {
		return Errorf(PayloadTooLarge, "over the budget of %d bytes", b.max)
	}
	b.held += n
	return nil
}

func (b *budget) Give(n int) { b.held -= n }

// A Reader with a Budget reserves every step of its large-payload buffer
// as the bytes arrive, fails the frame with the Budget's error once a step
// is refused, and gives everything back on an error or Release.
func TestReaderChargesLargePayloadsToItsBudget(t *testing.T) {
	in := header(uint32(8+MaxCallPayload), FrameCallRequest, CodecBytes, 0, 1)
	b := &budget{max: 1 << 20}
	r := NewReader(io.MultiReader(bytes.NewReader(in), io.LimitReader(zeros{}, 100)))
	r.Limit(b)
	if _, err := r.Next(); err != io.ErrUnexpectedEOF {
		t.Fatalf("got %v", err)
	}
	if b.held != 0 {
		t.Fatalf("%d bytes still held after the stream ended", b.held)
	}
	// A stream that keeps sending meets the budget, not the 16 MiB cap.
	r = NewReader(io.MultiReader(bytes.NewReader(in), zeros{}))
	r.Limit(b)
	_, err := r.Next()
	if CodeOf(err) != PayloadTooLarge || !strings.Contains(err.Error(), "budget") {
		t.Fatalf("got %v, want the budget's error", err)
	}
	if b.held != 0 {
		t.Fatalf("%d bytes still held after the refusal", b.held)
	}
	// Within the budget the frame arrives, charged until Release.
	payload := bytes.Repeat([]byte{7}, 100<<10)
	whole, _ := AppendFrame(nil, FrameCallRequest, CodecBytes, 1, payload)
	r = NewReader(bytes.NewReader(whole))
	r.Limit(b)
	f, err := r.Next()
	if err != nil || !bytes.Equal(f.Payload, payload) {
		t.Fatalf("got %v", err)
	}
	if b.held < len(payload) || b.held > 2*len(payload) {
		t.Fatalf("%d bytes held for a %d-byte payload", b.held, len(payload))
	}
	r.Release()
	if b.held != 0 {
		t.Fatalf("%d bytes held after Release", b.held)
	}
}
