package tio

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

// benchPair is a server session and its client over loopback, outside the
// testing.T helpers so benchmarks can build one per run.
func benchPair(b *testing.B, sopts ServerOptions, copts Options) (*Server, *Client, func()) {
	b.Helper()
	srv, err := NewServer(testContract, sopts)
	if err != nil {
		b.Fatal(err)
	}
	cconn, sconn, _ := loopback.Pair(loopback.Options{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sconn, nil) }()
	c, err := NewClient(context.Background(), cconn, testContract, copts)
	if err != nil {
		b.Fatal(err)
	}
	srv.HandleCall(evEcho, func(ctx context.Context, p *Peer, req []byte) ([]byte, error) { return req, nil })
	elem := []byte(`{"i":12345}`)
	srv.HandleStream(evCount, func(ctx context.Context, p *Peer, req []byte, send func([]byte) error) error {
		var n int
		if _, err := fmt.Sscanf(string(req), `{"n":%d}`, &n); err != nil {
			return err
		}
		for range n {
			if err := send(elem); err != nil {
				return err
			}
		}
		return nil
	})
	return srv, c, func() {
		_ = c.Close(NoError, "")
		_ = c.Wait()
		<-served
		_ = srv.Close()
	}
}

// jsonPayload is a JSON string of exactly n bytes.
func jsonPayload(n int) []byte { return []byte(`"` + strings.Repeat("x", n-2) + `"`) }

// BenchmarkEmit measures one emit end to end: encode, queue, the writer's
// coalesced Write, loopback, the reader's decode and dispatch to the
// handler. The sender keeps at most 192 emits in flight, an application's
// own pacing below the 256-frame bound (§9).
func BenchmarkEmit(b *testing.B) {
	for _, size := range []int{64, 1024} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			inflight := make(chan struct{}, 192)
			var got atomic.Int64
			srv, c, done := benchPair(b, ServerOptions{}, Options{})
			defer done()
			srv.HandleEmit(evPing, func(_ context.Context, p *Peer, payload []byte) error {
				got.Add(1)
				<-inflight
				return nil
			})
			payload := jsonPayload(size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				inflight <- struct{}{}
				if err := c.Emit(evPing, payload); err != nil {
					b.Fatal(err)
				}
			}
			for got.Load() < int64(b.N) {
				time.Sleep(50 * time.Microsecond)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
		})
	}
}

// BenchmarkEmitSend is the sending half alone: Emit's checks, the encode
// into a pooled frame and the push onto the queue, with the queue drained
// the way the writer drains it (without the copy into its Write buffer).
func BenchmarkEmitSend(b *testing.B) {
	s := &session{role: roleClient, contract: testContract, q: newEmitQueue(EmitQueueFrames, 0)}
	payload := jsonPayload(64)
	batch := make([]*frame, 0, EmitQueueFrames)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := s.emit(evPing, payload); err != nil {
			b.Fatal(err)
		}
		if i%128 == 127 {
			batch, _ = s.q.take(batch[:0])
			releaseAll(batch)
		}
	}
}

// BenchmarkReceiveFrame is the receiving half alone: decode one EMIT from
// the stream and dispatch it through the per-message checks.
func BenchmarkReceiveFrame(b *testing.B) {
	frame, _ := wire.AppendFrame(nil, wire.FrameEmit, wire.CodecJSON, evPing, jsonPayload(64))
	src := &repeatReader{frame: frame}
	r := wire.NewReader(src)
	var got int
	srv, _ := NewServer(testContract, ServerOptions{})
	defer srv.Close()
	srv.HandleEmit(evPing, func(context.Context, *Peer, []byte) error { got++; return nil })
	p := &Peer{srv: srv}
	s := &session{role: roleServer, contract: testContract, owner: p, ctx: context.Background()}
	p.session = s
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		f, err := r.Next()
		if err != nil {
			b.Fatal(err)
		}
		if !s.dispatch(f) {
			b.Fatal("dispatch closed the session")
		}
	}
	if got != b.N {
		b.Fatalf("dispatched %d of %d", got, b.N)
	}
}

// repeatReader yields the same frame for ever.
type repeatReader struct {
	frame []byte
	off   int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := copy(p, r.frame[r.off:])
	r.off = (r.off + n) % len(r.frame)
	return n, nil
}

// BenchmarkCallReturns measures returns calls, one at a time and 64 in
// parallel.
func BenchmarkCallReturns(b *testing.B) {
	_, c, done := benchPair(b, ServerOptions{}, Options{})
	defer done()
	req := []byte(`{"text":"hello"}`)
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := c.Call(context.Background(), evEcho, req); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	})
	b.Run("parallel64", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(32) // 2 cores × 32 = 64 callers
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.Call(context.Background(), evEcho, req); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	})
}

// BenchmarkStream measures elements per second through a yields call with
// the §6.6 window and with credit disabled (test-only), to price the
// window.
func BenchmarkStream(b *testing.B) {
	for _, mode := range []struct {
		name     string
		noCredit bool
	}{{"credit", false}, {"nocredit", true}} {
		b.Run(mode.name, func(b *testing.B) {
			opts := Options{noCredit: mode.noCredit}
			_, c, done := benchPair(b, ServerOptions{Options: opts}, opts)
			defer done()
			b.ReportAllocs()
			b.ResetTimer()
			n := 0
			for _, err := range c.Stream(context.Background(), evCount, fmt.Appendf(nil, `{"n":%d}`, b.N)) {
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != b.N {
				b.Fatalf("%d elements of %d", n, b.N)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "elements/s")
		})
	}
}

// BenchmarkBroadcast1000 emits to a room of 1,000 sessions and waits until
// every member received it; it asserts that each broadcast was encoded
// exactly once. Up to 32 broadcasts are in flight to every member, so
// writers and readers batch as they would under load.
func BenchmarkBroadcast1000(b *testing.B) { benchBroadcast(b, 32) }

// BenchmarkBroadcast1000Paced is BenchmarkBroadcast1000 with one broadcast
// in flight: every member's writer wakes for one frame per broadcast, as in
// a paced fan-out (one broadcast every 10 ms), where that wake-up is most
// of what the runtime adds per delivery.
func BenchmarkBroadcast1000Paced(b *testing.B) { benchBroadcast(b, 1) }

func benchBroadcast(b *testing.B, window int) {
	const members = 1000
	srv, err := NewServer(testContract, ServerOptions{OnSession: func(p *Peer) { _ = p.Join("all") }})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	// Each member counts its own deliveries: the window below must bound
	// every member's queue, not the room's total, or a member that lags is
	// closed WT_PEER_TOO_SLOW (§9) and its deliveries never come.
	got := make([]atomic.Int64, members)
	clients := make([]*Client, members)
	var closers []func()
	for i := range members {
		cconn, sconn, _ := loopback.Pair(loopback.Options{})
		served := make(chan error, 1)
		go func() { served <- srv.Serve(sconn, nil) }()
		c, err := NewClient(context.Background(), cconn, testContract, Options{})
		if err != nil {
			b.Fatal(err)
		}
		c.On(evSaid, func([]byte) error { got[i].Add(1); return nil })
		clients[i] = c
		closers = append(closers, func() { _ = c.Close(NoError, ""); _ = c.Wait(); <-served })
	}
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for srv.Room("all").Members() < members {
		time.Sleep(time.Millisecond)
	}
	// waitAll waits until every member received n broadcasts, failing with
	// the reason if a member's session ended instead.
	waitAll := func(n int64) {
		for i := range got {
			for got[i].Load() < n {
				select {
				case <-clients[i].Done():
					b.Fatalf("member %d ended after %d of %d broadcasts: %v", i, got[i].Load(), n, clients[i].Err())
				default:
				}
				time.Sleep(20 * time.Microsecond)
			}
		}
	}
	room := srv.Room("all")
	payload := jsonPayload(64)
	before := srv.encodes.Load()
	b.ReportAllocs()
	b.ResetTimer()
	// Each member's queue stays far below 256 (§9).
	for i := range b.N {
		waitAll(int64(i + 1 - window))
		if err := room.Emit(context.Background(), evSaid, payload); err != nil {
			b.Fatal(err)
		}
	}
	waitAll(int64(b.N))
	b.StopTimer()
	if n := srv.encodes.Load() - before; n != int64(b.N) {
		b.Fatalf("%d broadcasts encoded %d times", b.N, n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*members), "ns/recipient")
}
