package loopback

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/internal/leakcheck"
	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// short bounds a wait for something that is already due; it is not a spec
// timeout.
const short = 5 * time.Second

func ctxShort(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), short)
	t.Cleanup(cancel)
	return ctx
}

func pair(t *testing.T, opts Options) (*Conn, *Conn, *Link) {
	t.Helper()
	leakcheck.Check(t, short)
	c, s, l := Pair(opts)
	t.Cleanup(func() { c.Close(0, "") })
	return c, s, l
}

func emitPair(t *testing.T, from, to *Conn) (transport.SendStream, transport.ReceiveStream) {
	t.Helper()
	ctx := ctxShort(t)
	w, err := from.OpenEmit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := to.AcceptEmit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return w, r
}

func callPair(t *testing.T, from, to *Conn) (transport.Stream, transport.Stream) {
	t.Helper()
	ctx := ctxShort(t)
	a, err := from.OpenCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := to.AcceptCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

// async runs f and returns a channel with its error.
func async(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

func wait(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(short):
		t.Fatal("call still blocked")
		return nil
	}
}

// blocked checks that nothing arrives on ch for a short while.
func blocked(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s returned (err %v) but should block", what, err)
	case <-time.After(20 * time.Millisecond):
	}
}

func TestEmitStreamCarriesBytesAndFIN(t *testing.T) {
	c, s, _ := pair(t, Options{})
	w, r := emitPair(t, c, s)
	if _, err := w.Write([]byte("hello ")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("world")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if err != nil || string(got) != "hello world" {
		t.Fatalf("read %q, %v; want \"hello world\", nil", got, err)
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("write after Close succeeded")
	}
	if _, err := c.OpenEmit(ctxShort(t)); err == nil {
		t.Fatal("a second emit stream was opened (§3.1: exactly one)")
	}
}

// Without SplitWrites a Read returns everything buffered: writes merge.
func TestSpec5_WritesMerge(t *testing.T) {
	c, s, _ := pair(t, Options{})
	w, r := emitPair(t, c, s)
	w.Write([]byte("abc"))
	w.Write([]byte("def"))
	buf := make([]byte, 64)
	n, err := r.Read(buf)
	if err != nil || string(buf[:n]) != "abcdef" {
		t.Fatalf("Read = %q, %v; want two writes merged into \"abcdef\"", buf[:n], err)
	}
}

// With SplitWrites one write arrives as many small reads (§5: boundaries
// carry no meaning), and the bytes are intact.
func TestSpec5_SplitWritesDeliverSmallChunks(t *testing.T) {
	c, s, _ := pair(t, Options{SplitWrites: true})
	w, r := emitPair(t, c, s)
	msg := bytes.Repeat([]byte("0123456789"), 100)
	go func() { w.Write(msg); w.Close() }()
	var got []byte
	buf := make([]byte, 4096)
	reads, sizes := 0, map[int]bool{}
	for {
		n, err := r.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if n < 1 || n > 7 {
			t.Fatalf("a split read returned %d bytes, want 1..7", n)
		}
		reads++
		sizes[n] = true
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("bytes changed in transit")
	}
	if reads < len(msg)/7 || len(sizes) < 3 || !sizes[1] {
		t.Fatalf("%d reads of %d distinct sizes (1 byte seen: %v): not split", reads, len(sizes), sizes[1])
	}
}

func TestCallStreamBothDirections(t *testing.T) {
	c, s, l := pair(t, Options{})
	a, b := callPair(t, c, s)
	a.Write([]byte("request"))
	a.Close()
	req, err := io.ReadAll(b)
	if err != nil || string(req) != "request" {
		t.Fatalf("responder read %q, %v", req, err)
	}
	b.Write([]byte("response"))
	b.Close()
	resp, err := io.ReadAll(a)
	if err != nil || string(resp) != "response" {
		t.Fatalf("initiator read %q, %v", resp, err)
	}
	st := l.Stats()
	if st.ClientToServer.StreamBytes != 7 || st.ServerToClient.StreamBytes != 8 {
		t.Fatalf("stream bytes %d / %d, want 7 / 8", st.ClientToServer.StreamBytes, st.ServerToClient.StreamBytes)
	}
}

// §8: a reset carries a one-byte code to the reader; the writer's own
// later writes fail with it too.
func TestSpec8_ResetCarriesCode(t *testing.T) {
	c, s, _ := pair(t, Options{})
	a, b := callPair(t, c, s)
	a.Write([]byte("partial"))
	a.Reset(wire.ResetAborted)
	_, err := b.Read(make([]byte, 16))
	var se *transport.StreamError
	if !errors.As(err, &se) || se.Code != wire.ResetAborted || !se.Remote {
		t.Fatalf("reader got %v, want a remote StreamError with code 1", err)
	}
	_, err = a.Write([]byte("more"))
	if !errors.As(err, &se) || se.Code != wire.ResetAborted || se.Remote {
		t.Fatalf("writer after its reset got %v, want a local StreamError with code 1", err)
	}
	// The other direction of the stream is unaffected.
	if _, err := b.Write([]byte("still open")); err != nil {
		t.Fatalf("the responder's send side failed after the initiator's reset: %v", err)
	}
}

// §8, §10.1: STOP_SENDING carries a one-byte code to the writer, and wakes
// a writer blocked on a full window.
func TestSpec10_1_StopCarriesCode(t *testing.T) {
	c, s, _ := pair(t, Options{StreamWindow: 4})
	a, b := callPair(t, c, s)
	werr := async(func() error { _, err := a.Write([]byte("more than four bytes")); return err })
	blocked(t, werr, "a write over the window")
	b.Stop(wire.ResetTooManyStreams)
	var se *transport.StreamError
	if err := wait(t, werr); !errors.As(err, &se) || se.Code != wire.ResetTooManyStreams || !se.Remote {
		t.Fatalf("blocked writer got %v, want a remote StreamError with code 9", err)
	}
	if _, err := b.Read(make([]byte, 4)); !errors.As(err, &se) || se.Code != 9 || se.Remote {
		t.Fatalf("reader after its stop got %v, want a local StreamError with code 9", err)
	}
}

// stopped is a channel closed by st's AfterStopped.
func stopped(st transport.Stream) <-chan struct{} {
	ch := make(chan struct{})
	st.AfterStopped(func() { close(ch) })
	return ch
}

// §8: a responder learns of a stop after the request's FIN only through
// AfterStopped, and a write whose bytes were all handed over before the stop
// still succeeds.
func TestSpec8_StoppedSignalsThePeersStop(t *testing.T) {
	c, s, _ := pair(t, Options{})
	a, b := callPair(t, c, s)
	if _, err := b.Write([]byte("answer")); err != nil {
		t.Fatalf("write before the stop: %v", err)
	}
	select {
	case <-stopped(b):
		t.Fatal("Stopped closed before anything ended the send side")
	default:
	}
	a.Stop(wire.ResetAborted)
	select {
	case <-stopped(b):
	case <-time.After(2 * time.Second):
		t.Fatal("Stopped did not close after the peer's stop")
	}
	var se *transport.StreamError
	if _, err := b.Write([]byte("more")); !errors.As(err, &se) || se.Code != wire.ResetAborted || !se.Remote {
		t.Fatalf("write after the stop got %v, want a remote StreamError with code 1", err)
	}
}

func TestStoppedClosesOnOwnFinishOrReset(t *testing.T) {
	c, s, _ := pair(t, Options{})
	a, _ := callPair(t, c, s)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped(a):
	case <-time.After(2 * time.Second):
		t.Fatal("Stopped did not close after FIN")
	}
	a2, _ := callPair(t, c, s)
	a2.Reset(wire.ResetAborted)
	select {
	case <-stopped(a2):
	case <-time.After(2 * time.Second):
		t.Fatal("Stopped did not close after a reset")
	}
}

func TestStreamWindowBlocksWriter(t *testing.T) {
	c, s, _ := pair(t, Options{StreamWindow: 8})
	w, r := emitPair(t, c, s)
	if _, err := w.Write([]byte("12345678")); err != nil {
		t.Fatal(err)
	}
	werr := async(func() error { _, err := w.Write([]byte("9")); return err })
	blocked(t, werr, "a write into a full window")
	buf := make([]byte, 3)
	if n, _ := r.Read(buf); n != 3 {
		t.Fatalf("read %d", n)
	}
	if err := wait(t, werr); err != nil {
		t.Fatal(err)
	}
}

func TestStallReader(t *testing.T) {
	c, s, l := pair(t, Options{StreamWindow: 16})
	w, r := emitPair(t, c, s)
	l.StallReader(Server, true)
	rerr := async(func() error { _, err := r.Read(make([]byte, 64)); return err })
	w.Write([]byte("0123456789abcdef"))
	blocked(t, rerr, "a stalled reader")
	werr := async(func() error { _, err := w.Write([]byte("x")); return err })
	blocked(t, werr, "a write to a stalled reader with a full window")
	l.StallReader(Server, false)
	if err := wait(t, rerr); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, werr); err != nil {
		t.Fatal(err)
	}
}

func TestMaxIncomingStreamsBlocksOpen(t *testing.T) {
	c, s, _ := pair(t, Options{MaxIncomingStreams: 2})
	a1, b1 := callPair(t, c, s)
	callPair(t, c, s)
	third := async(func() error { _, err := c.OpenCall(ctxShort(t)); return err })
	blocked(t, third, "OpenCall beyond MaxIncomingStreams")
	// The first stream ends in both directions: its slot frees.
	a1.Close()
	io.ReadAll(b1)
	b1.Reset(wire.ResetAborted)
	if err := wait(t, third); err != nil {
		t.Fatal(err)
	}
}

// The engine's own limit of 256 (§10.1) is what tests meet, not the
// transport's.
func TestSpec10_1_DefaultAllowsMoreThan256Streams(t *testing.T) {
	c, s, _ := pair(t, Options{})
	for range 300 {
		if _, err := c.OpenCall(ctxShort(t)); err != nil {
			t.Fatal(err)
		}
	}
	for range 300 {
		if _, err := s.AcceptCall(ctxShort(t)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSpec3_3_WebSocketHasNoStreamsOrDatagrams(t *testing.T) {
	c, s, _ := pair(t, Options{Mapping: transport.WebSocket})
	if c.Mapping() != transport.WebSocket {
		t.Fatalf("Mapping() = %v", c.Mapping())
	}
	ctx := ctxShort(t)
	if _, err := c.OpenCall(ctx); !errors.Is(err, transport.ErrNoStreams) {
		t.Fatalf("OpenCall: %v, want ErrNoStreams", err)
	}
	if _, err := s.AcceptCall(ctx); !errors.Is(err, transport.ErrNoStreams) {
		t.Fatalf("AcceptCall: %v, want ErrNoStreams", err)
	}
	if err := c.SendDatagram([]byte{1}); !errors.Is(err, transport.ErrNoDatagrams) {
		t.Fatalf("SendDatagram: %v, want ErrNoDatagrams", err)
	}
	if _, err := s.ReceiveDatagram(ctx); !errors.Is(err, transport.ErrNoDatagrams) {
		t.Fatalf("ReceiveDatagram: %v, want ErrNoDatagrams", err)
	}
	w, r := emitPair(t, c, s)
	w.Write([]byte("emit works"))
	if n, err := r.Read(make([]byte, 32)); err != nil || n != 10 {
		t.Fatalf("emit over WebSocket: %d, %v", n, err)
	}
	c.Close(wire.CloseProtocolError, strings.Repeat("é", 100))
	if got := s.CloseInfo().Reason; got != strings.Repeat("é", 61) {
		t.Fatalf("WebSocket close reason is %d bytes, want 122: cut to 123 on a character boundary (§3.3)", len(got))
	}
}

func TestSpec10_2_CloseReachesPeerWithCodeAndReason(t *testing.T) {
	c, s, _ := pair(t, Options{})
	c.Close(wire.CloseContractMismatch, "event 'cursor' is 'unreliable' here and 'reliable' at the peer")
	for _, conn := range []*Conn{c, s} {
		select {
		case <-conn.Done():
		default:
			t.Fatalf("%v: Done not closed", conn.Side())
		}
	}
	want := transport.CloseInfo{Code: 1001, Reason: "event 'cursor' is 'unreliable' here and 'reliable' at the peer"}
	if got := c.CloseInfo(); got != want {
		t.Fatalf("local CloseInfo = %+v, want %+v", got, want)
	}
	want.Remote = true
	if got := s.CloseInfo(); got != want {
		t.Fatalf("remote CloseInfo = %+v, want %+v", got, want)
	}
	// The first close wins.
	s.Close(wire.ClosePeerTooSlow, "late")
	if got := s.CloseInfo(); got != want {
		t.Fatalf("a later close changed CloseInfo to %+v", got)
	}
}

func TestSpec10_2_CloseReasonCutTo1024Bytes(t *testing.T) {
	c, s, _ := pair(t, Options{})
	c.Close(wire.CloseProtocolError, strings.Repeat("a", 1023)+"é")
	if got := s.CloseInfo().Reason; got != strings.Repeat("a", 1023) {
		t.Fatalf("reason of %d bytes, want 1023: cut to 1024 without splitting a character", len(got))
	}
}

func TestSpec11_LostConnectionHasNoCode(t *testing.T) {
	c, s, l := pair(t, Options{})
	l.Lose()
	for _, conn := range []*Conn{c, s} {
		<-conn.Done()
		if got := conn.CloseInfo(); got != (transport.CloseInfo{Lost: true}) {
			t.Fatalf("%v: CloseInfo = %+v, want only Lost", conn.Side(), got)
		}
	}
	c.Close(wire.CloseProtocolError, "after the loss")
	if got := s.CloseInfo(); got != (transport.CloseInfo{Lost: true}) {
		t.Fatalf("a close after the loss changed CloseInfo to %+v", got)
	}
}

// Every blocked call returns once the session ends, and no goroutine
// outlives it.
func TestEndReleasesEveryBlockedCall(t *testing.T) {
	for _, end := range []string{"close", "lose"} {
		t.Run(end, func(t *testing.T) {
			c, s, l := pair(t, Options{StreamWindow: 1, MaxIncomingStreams: 1})
			ctx := context.Background()
			w, r := emitPair(t, c, s)
			a, _ := callPair(t, c, s)
			w.Write([]byte("x"))
			calls := []<-chan error{
				async(func() error { _, err := w.Write([]byte("blocked")); return err }),
				async(func() error { _, err := a.Read(make([]byte, 1)); return err }),
				async(func() error { _, err := s.AcceptEmit(ctx); return err }),
				async(func() error { _, err := s.AcceptCall(ctx); return err }),
				async(func() error { _, err := c.OpenCall(ctx); return err }),
				async(func() error { _, err := c.ReceiveDatagram(ctx); return err }),
			}
			l.StallReader(Server, true)
			stalled := async(func() error { _, err := r.Read(make([]byte, 1)); return err })
			for _, ch := range calls {
				blocked(t, ch, "a call before the end")
			}
			if end == "close" {
				s.Close(0, "bye")
			} else {
				l.Lose()
			}
			for _, ch := range append(calls, stalled) {
				if err := wait(t, ch); !errors.Is(err, ErrSessionEnded) {
					t.Fatalf("blocked call returned %v, want ErrSessionEnded", err)
				}
			}
			if _, err := c.OpenCall(ctx); !errors.Is(err, ErrSessionEnded) {
				t.Fatalf("OpenCall after the end: %v", err)
			}
			if err := c.SendDatagram([]byte{1}); !errors.Is(err, ErrSessionEnded) {
				t.Fatalf("SendDatagram after the end: %v", err)
			}
		})
	}
}

func TestDatagramsCopiedAndOwned(t *testing.T) {
	c, s, l := pair(t, Options{})
	b := []byte("position")
	if err := c.SendDatagram(b); err != nil {
		t.Fatal(err)
	}
	b[0] = 'X'
	got, err := s.ReceiveDatagram(ctxShort(t))
	if err != nil || string(got) != "position" {
		t.Fatalf("received %q, %v: the sender's buffer was not copied", got, err)
	}
	st := l.Stats().ClientToServer
	if st.DatagramsSent != 1 || st.DatagramsDelivered != 1 || st.DatagramBytes != 8 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSpec7_4_MaxDatagramSize(t *testing.T) {
	c, _, _ := pair(t, Options{})
	if c.MaxDatagramSize() != DefaultMaxDatagramSize {
		t.Fatalf("default MaxDatagramSize = %d", c.MaxDatagramSize())
	}
	if err := c.SendDatagram(make([]byte, 1201)); !errors.Is(err, ErrDatagramTooLarge) {
		t.Fatalf("oversize datagram: %v", err)
	}
	c2, _, _ := pair(t, Options{MaxDatagramSize: UnknownDatagramSize})
	if c2.MaxDatagramSize() != 0 {
		t.Fatalf("UnknownDatagramSize reports %d, want 0", c2.MaxDatagramSize())
	}
	if err := c2.SendDatagram(make([]byte, 1024)); err != nil {
		t.Fatalf("1024-byte datagram on a link that does not report a size: %v", err)
	}
	c3, _, _ := pair(t, Options{MaxDatagramSize: 1000})
	if c3.MaxDatagramSize() != 1000 || c3.SendDatagram(make([]byte, 1001)) == nil {
		t.Fatal("MaxDatagramSize 1000 not applied")
	}
}

func TestDatagramQueueBounded(t *testing.T) {
	c, s, l := pair(t, Options{})
	for i := range DatagramQueue + 5 {
		c.SendDatagram([]byte{byte(i)})
	}
	st := l.Stats().ClientToServer
	if st.DatagramsDelivered != DatagramQueue || st.DatagramsOverflowed != 5 {
		t.Fatalf("delivered %d, overflowed %d; want %d, 5", st.DatagramsDelivered, st.DatagramsOverflowed, DatagramQueue)
	}
	if b, _ := s.ReceiveDatagram(ctxShort(t)); b[0] != 0 {
		t.Fatalf("first received %d, want 0: the queue keeps the oldest", b[0])
	}
}

func receiveAll(t *testing.T, c *Conn) []string {
	t.Helper()
	var got []string
	for {
		select {
		case b := <-c.dgrams:
			got = append(got, string(b))
		default:
			return got
		}
	}
}

func TestLinkDropsDatagrams(t *testing.T) {
	c, s, l := pair(t, Options{})
	l.DropDatagrams(func(b []byte) bool { return b[0] == 'd' })
	c.SendDatagram([]byte("drop"))
	c.SendDatagram([]byte("keep"))
	s.SendDatagram([]byte("drop"))
	if got := receiveAll(t, s); len(got) != 1 || got[0] != "keep" {
		t.Fatalf("server received %q", got)
	}
	if got := receiveAll(t, c); len(got) != 0 {
		t.Fatalf("client received %q", got)
	}
	st := l.Stats()
	if st.ClientToServer.DatagramsDropped != 1 || st.ServerToClient.DatagramsDropped != 1 || st.ClientToServer.DatagramsSent != 2 {
		t.Fatalf("stats %+v", st)
	}
	l.DropDatagrams(nil)
	c.SendDatagram([]byte("drop"))
	if got := receiveAll(t, s); len(got) != 1 {
		t.Fatalf("after DropDatagrams(nil) received %q", got)
	}
}

func TestLinkDuplicatesDatagrams(t *testing.T) {
	c, s, l := pair(t, Options{})
	l.DuplicateDatagrams(true)
	c.SendDatagram([]byte("twice"))
	got := receiveAll(t, s)
	if len(got) != 2 || got[0] != "twice" || got[1] != "twice" {
		t.Fatalf("received %q", got)
	}
	if l.Stats().ClientToServer.DatagramsDuplicated != 1 {
		t.Fatal("duplicate not counted")
	}
}

func TestLinkReordersDatagrams(t *testing.T) {
	c, s, l := pair(t, Options{})
	l.ReorderDatagrams(true)
	for _, d := range []string{"1", "2", "3"} {
		c.SendDatagram([]byte(d))
	}
	if got := receiveAll(t, s); len(got) != 0 {
		t.Fatalf("held datagrams delivered early: %q", got)
	}
	l.ReorderDatagrams(false)
	if got := strings.Join(receiveAll(t, s), ""); got != "321" {
		t.Fatalf("received %q, want 321", got)
	}
}

func TestLinkDelaysDatagramsOnClock(t *testing.T) {
	clk := clock.NewFake()
	c, s, l := pair(t, Options{Clock: clk})
	l.DelayDatagrams(100 * time.Millisecond)
	c.SendDatagram([]byte("a"))
	clk.Advance(50 * time.Millisecond)
	c.SendDatagram([]byte("b"))
	clk.Advance(49 * time.Millisecond)
	if got := receiveAll(t, s); len(got) != 0 {
		t.Fatalf("delivered before the delay: %q", got)
	}
	clk.Advance(time.Millisecond)
	if b, err := s.ReceiveDatagram(ctxShort(t)); err != nil || string(b) != "a" {
		t.Fatalf("received %q, %v; want a", b, err)
	}
	if got := receiveAll(t, s); len(got) != 0 {
		t.Fatalf("b delivered 50 ms early: %q", got)
	}
	clk.Advance(50 * time.Millisecond)
	if b, err := s.ReceiveDatagram(ctxShort(t)); err != nil || string(b) != "b" {
		t.Fatalf("received %q, %v; want b", b, err)
	}
	l.DelayDatagrams(0)
	c.SendDatagram([]byte("now"))
	if got := receiveAll(t, s); len(got) != 1 {
		t.Fatalf("after DelayDatagrams(0) received %q", got)
	}
	c.SendDatagram(nil)
	if b, err := s.ReceiveDatagram(ctxShort(t)); err != nil || len(b) != 0 {
		t.Fatalf("an empty datagram (§7.2 probe) arrived as %q, %v", b, err)
	}
}

// A delayed datagram pending at the end stops its timer: nothing fires
// after the session.
func TestEndStopsDelayTimer(t *testing.T) {
	clk := clock.NewFake()
	c, _, l := pair(t, Options{Clock: clk})
	l.DelayDatagrams(time.Second)
	c.SendDatagram([]byte("pending"))
	if clk.Pending() != 1 {
		t.Fatalf("%d timers pending, want 1", clk.Pending())
	}
	c.Close(0, "")
	if clk.Pending() != 0 {
		t.Fatalf("%d timers pending after close, want 0", clk.Pending())
	}
}

func BenchmarkEmitStream64B(b *testing.B) {
	c, s, _ := Pair(Options{})
	defer c.Close(0, "")
	ctx := context.Background()
	w, _ := c.OpenEmit(ctx)
	r, _ := s.AcceptEmit(ctx)
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, r)
		close(done)
	}()
	msg := make([]byte, 64)
	b.SetBytes(64)
	b.ReportAllocs()
	for b.Loop() {
		w.Write(msg)
	}
	w.Close()
	<-done
}
