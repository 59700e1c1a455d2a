package tio

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

// writeCountingConn wraps the server's end of a loopback pair and records,
// for each Write on a call stream it accepted, how many CALL_RESPONSE frames
// that Write carried. hold, when set, is waited on by the first such Write.
type writeCountingConn struct {
	transport.Conn
	hold <-chan struct{}

	mu     sync.Mutex
	writes []int // CALL_RESPONSE frames per Write
	sizes  []int // bytes per Write, of the same Writes
}

func (c *writeCountingConn) AcceptCall(ctx context.Context) (transport.Stream, error) {
	st, err := c.Conn.AcceptCall(ctx)
	if err != nil {
		return nil, err
	}
	return &writeCountingStream{Stream: st, c: c}, nil
}

func (c *writeCountingConn) responseWrites() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.writes...)
}

func (c *writeCountingConn) responseSizes() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.sizes...)
}

type writeCountingStream struct {
	transport.Stream
	c *writeCountingConn
}

func (s *writeCountingStream) Write(p []byte) (int, error) {
	n := 0
	r := wire.NewReader(bytes.NewReader(p))
	for {
		f, err := r.Next()
		if err != nil {
			break
		}
		if f.Type == wire.FrameCallResponse {
			n++
		}
	}
	if n > 0 {
		s.c.mu.Lock()
		first := len(s.c.writes) == 0
		s.c.writes = append(s.c.writes, n)
		s.c.sizes = append(s.c.sizes, len(p))
		s.c.mu.Unlock()
		if first && s.c.hold != nil {
			<-s.c.hold
		}
	}
	return s.Stream.Write(p)
}

// servePairVia runs the test server over conn wrapped by wrap and connects
// an engine client to the other end.
func servePairVia(t *testing.T, wrap func(transport.Conn) transport.Conn) (*testServer, *Client) {
	t.Helper()
	ts := newTestServer(t, ServerOptions{})
	cconn, sconn, _ := loopback.Pair(loopback.Options{})
	served := make(chan error, 1)
	go func() { served <- ts.Serve(wrap(sconn), nil) }()
	c, err := NewClient(context.Background(), cconn, testContract, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Close(NoError, "test over")
		_ = c.Wait()
		<-served
	})
	return ts, c
}

func TestSpec6_6_ReadyElementsShareOneWrite(t *testing.T) {
	// A handler that offers a whole window of elements while the stream's
	// first Write is still in progress gets them written together: one
	// Write per element would cost a QUIC packet each. Each element is
	// still its own frame (§6.3) and none is held beyond the credit (§6.6).
	allSent := make(chan struct{})
	// hold releases the first Write once the handler has handed over every
	// element, or after 2 s, so that an engine that writes inside send
	// (and so cannot hand over the rest while the first Write waits)
	// fails the count below instead of hanging.
	hold := make(chan struct{})
	go func() {
		select {
		case <-allSent:
		case <-time.After(2 * time.Second):
		}
		close(hold)
	}()
	cc := &writeCountingConn{hold: hold}
	ts, c := servePairVia(t, func(conn transport.Conn) transport.Conn { cc.Conn = conn; return cc })
	ts.HandleStream(evCountThenFail, func(ctx context.Context, p *Peer, req []byte, send func([]byte) error) error {
		for i := range InitialCredit {
			if err := send(fmt.Appendf(nil, `{"i":%d}`, i)); err != nil {
				return err
			}
		}
		close(allSent)
		return nil
	})
	got := 0
	for elem, err := range c.Stream(context.Background(), evCountThenFail, []byte(`{}`)) {
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`{"i":%d}`, got); string(elem) != want {
			t.Fatalf("element %d is %q, want %q", got, elem, want)
		}
		got++
	}
	if got != InitialCredit {
		t.Fatalf("got %d elements, want %d", got, InitialCredit)
	}
	// The first Write carries what was offered before the writer woke; all
	// the rest was offered while it waited, and goes in one more Write.
	writes := cc.responseWrites()
	if len(writes) > 2 {
		t.Fatalf("%d elements took %d Writes (frames per Write %v), want at most 2", InitialCredit, len(writes), writes)
	}
}

func TestSpec6_6_PausedProducerElementIsWrittenAtOnce(t *testing.T) {
	// Coalescing never waits for more: an element offered while the writer
	// is idle is written at once, so a producer that pauses (here, until
	// the consumer has seen its element) is never stalled by a batch that
	// will not fill.
	cc := &writeCountingConn{}
	ts, c := servePairVia(t, func(conn transport.Conn) transport.Conn { cc.Conn = conn; return cc })
	seen := make(chan struct{})
	const n = 5
	ts.HandleStream(evCountThenFail, func(ctx context.Context, p *Peer, req []byte, send func([]byte) error) error {
		for i := range n {
			if err := send(fmt.Appendf(nil, `{"i":%d}`, i)); err != nil {
				return err
			}
			select {
			case <-seen:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	// A writer that waited for a fuller batch would stall this for ever.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got := 0
	for _, err := range c.Stream(ctx, evCountThenFail, []byte(`{}`)) {
		if err != nil {
			t.Fatal(err)
		}
		got++
		seen <- struct{}{}
	}
	if got != n {
		t.Fatalf("got %d elements, want %d", got, n)
	}
	if writes := cc.responseWrites(); len(writes) != n {
		t.Fatalf("frames per Write %v, want one Write per paused element", writes)
	}
}

func TestSpec6_3_SendAfterHandlerReturnedFails(t *testing.T) {
	// A send reference kept past the handler's return writes nothing after
	// the outcome: the sequence already ended.
	ts, c := servePairVia(t, func(conn transport.Conn) transport.Conn { return conn })
	kept := make(chan func([]byte) error, 1)
	ts.HandleStream(evCountThenFail, func(ctx context.Context, p *Peer, req []byte, send func([]byte) error) error {
		if err := send([]byte(`1`)); err != nil {
			return err
		}
		kept <- send
		return nil
	})
	got := 0
	for _, err := range c.Stream(context.Background(), evCountThenFail, []byte(`{}`)) {
		if err != nil {
			t.Fatal(err)
		}
		got++
	}
	if got != 1 {
		t.Fatalf("got %d elements, want 1", got)
	}
	wantCode(t, (<-kept)([]byte(`2`)), wire.Aborted)
}

func TestSpec6_6_CoalescedWritesStayWithinTheByteBound(t *testing.T) {
	// Large elements are coalesced only up to responseBatchBytes; one over
	// it is written alone. Every element still arrives whole and in order.
	cc := &writeCountingConn{}
	ts, c := servePairVia(t, func(conn transport.Conn) transport.Conn { cc.Conn = conn; return cc })
	sizes := []int{20 << 10, 20 << 10, 20 << 10, 20 << 10, 70 << 10, 10, 20 << 10}
	ts.HandleStream(evCountThenFail, func(ctx context.Context, p *Peer, req []byte, send func([]byte) error) error {
		for i, n := range sizes {
			elem := bytes.Repeat([]byte{'7'}, n)
			elem[0] = byte('0' + i)
			if err := send(elem); err != nil {
				return err
			}
		}
		return nil
	})
	got := 0
	for elem, err := range c.Stream(context.Background(), evCountThenFail, []byte(`{}`)) {
		if err != nil {
			t.Fatal(err)
		}
		if len(elem) != sizes[got] || elem[0] != byte('0'+got) {
			t.Fatalf("element %d: %d bytes starting %q, want %d starting %q", got, len(elem), elem[0], sizes[got], rune('0'+got))
		}
		got++
	}
	if got != len(sizes) {
		t.Fatalf("got %d elements, want %d", got, len(sizes))
	}
	writes, bytesOf := cc.responseWrites(), cc.responseSizes()
	for i := range writes {
		if writes[i] > 1 && bytesOf[i] > responseBatchBytes {
			t.Fatalf("Write %d carried %d frames in %d bytes, over the %d-byte bound", i, writes[i], bytesOf[i], responseBatchBytes)
		}
	}
}
