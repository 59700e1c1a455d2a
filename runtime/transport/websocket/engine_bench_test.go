package websocket_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
)

// BenchmarkEngineEmit is tio-bench's ws-emit in one process: a client's
// emits over the mapping on 127.0.0.1, paced with WaitEmit every 16 emits,
// counted in the server's handler. cpu-ns/frame is the process's user and
// system time per frame (both ends): on a shared host it moves far less
// than ns/op, which is the share of the cores the run got.
func BenchmarkEngineEmit(b *testing.B) {
	for _, size := range []int{64, 1024} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			contract := tio.MustContract("ws", engineEvents(tio.Newest)...)
			srv, err := tio.NewServer(contract, tio.ServerOptions{})
			if err != nil {
				b.Fatal(err)
			}
			var got atomic.Int64
			srv.HandleEmit(evShout, func(context.Context, *tio.Peer, []byte) error { got.Add(1); return nil })
			h := &websocket.Handler{OnSession: func(c transport.Conn, _ *transport.Request, data any) { _ = srv.Serve(c, data) }}
			hs := httptest.NewServer(h)
			defer func() {
				_ = srv.Close()
				_ = h.Shutdown(context.Background())
				hs.Close()
			}()
			ctx := context.Background()
			conn, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http"), websocket.DialOptions{})
			if err != nil {
				b.Fatal(err)
			}
			c, err := tio.NewClient(ctx, conn, contract, tio.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = c.Close(tio.NoError, ""); _ = c.Wait() }()
			payload := []byte(`"` + strings.Repeat("x", size-2) + `"`)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := range b.N {
				if i%16 == 0 {
					if err := c.WaitEmit(ctx); err != nil {
						b.Fatal(err)
					}
				}
				if err := c.Emit(evShout, payload); err != nil {
					b.Fatal(err)
				}
			}
			for got.Load() < int64(b.N) {
				time.Sleep(20 * time.Microsecond)
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/frame")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
