package endpoint

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// §10.1, §4.1: the limits configured once, on the server, reach the
// listener and the engine: the
// call over the cap is reset WT_TOO_MANY_STREAMS, and a WebSocket peer that
// never sends its handshake is closed WT_HANDSHAKE_TIMEOUT after the
// listener's (shortened) deadline. The scrape counts both hits, the two
// cancelled calls and the WT_HANDSHAKE_TIMEOUT end.
func TestSpec10_1_Spec4_1_ListenerLimitsReachTheEngine(t *testing.T) {
	// The limits are the server's alone: the listener has no field for them.
	opts := Options{}
	hanging := make(chan struct{}, 4)
	reg := serveMetrics(t)
	srv, err := tio.NewServer(contract, tio.ServerOptions{Metrics: reg.Metrics, Options: tio.Options{MaxCalls: 2, HandshakeTimeout: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.HandleCall(evHang, func(ctx context.Context, _ *tio.Peer, _ []byte) ([]byte, error) {
		hanging <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	l := listen(t, srv, opts)
	if lim := l.Limits(); lim.MaxCalls != 2 || lim.HandshakeTimeout != 300*time.Millisecond {
		t.Fatalf("listener limits %+v", lim)
	}
	ctx := testCtx(t)

	c, err := Dial(ctx, l.URL(), contract, DialOptions{CertHashes: [][32]byte{cert(t).SHA256}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Wait()
	defer c.Close(tio.NoError, "done")
	callCtx, cancel := context.WithCancel(ctx)
	results := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := c.Call(callCtx, evHang, []byte("wait"))
			results <- err
		}()
		<-hanging
	}
	if _, err := c.Call(ctx, evHang, []byte("one too many")); wire.CodeOf(err) != wire.TooManyStreams {
		t.Fatalf("third concurrent call: %v, want WT_TOO_MANY_STREAMS", err)
	}
	cancel()
	for range 2 {
		if err := <-results; wire.CodeOf(err) != wire.Aborted {
			t.Fatalf("cancelled call: %v, want WT_ABORTED", err)
		}
	}

	conn, err := websocket.Dial(ctx, l.WebSocketURL(), websocket.DialOptions{TLSConfig: webtransport.PinnedTLSConfig([][32]byte{cert(t).SHA256}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	// The peer sends nothing but reads, as an engine does: the mapping
	// hears the server's close only through Reads.
	rs, err := conn.AcceptEmit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, rs) }()
	start := time.Now()
	select {
	case <-conn.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the silent WebSocket peer was never closed")
	}
	if info := conn.CloseInfo(); info.Code != wire.CloseHandshakeTimeout {
		t.Fatalf("silent peer closed %+v, want WT_HANDSHAKE_TIMEOUT", info)
	}
	if waited := time.Since(start); waited > 4*time.Second {
		t.Fatalf("closed after %v: the engine kept the default deadline", waited)
	}
	waitFor(t, "the handshake deadline's end counted", func() bool {
		return value(t, reg, "tio_sessions_ended_total", "mapping", "websocket", "code", "WT_HANDSHAKE_TIMEOUT") == 1
	})
	waitFor(t, "the cancelled calls counted", func() bool {
		return value(t, reg, "tio_calls_total", "event", "hang", "outcome", "cancelled") == 2
	})
	got := reg.Scrape(t)
	for limit, want := range map[string]float64{"max_calls": 1, "handshake_timeout": 1} {
		if v := got.Get("tio_limit_hits_total", "limit", limit); v != want {
			t.Errorf("%s hits %v, want %v", limit, v, want)
		}
	}
}
