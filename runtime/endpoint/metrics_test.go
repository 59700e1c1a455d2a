package endpoint

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/transport-io/tiogen/internal/scrape"
	"github.com/transport-io/tiogen/runtime/metrics"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// The contract of the metrics script: calls that answer and fail, an emit
// the server answers, and an unreliable event (a DATAGRAM frame over
// WebSocket, §3.3).
var metricsContract = tio.MustContract("metered",
	tio.Event{Name: "echo", Lane: wire.Reliable, Kind: tio.Returns, Payload: wire.CodecBytes, Result: wire.CodecBytes},
	tio.Event{Name: "fail", Lane: wire.Reliable, Kind: tio.Returns, Payload: wire.CodecBytes, Result: wire.CodecBytes},
	tio.Event{Name: "say", Lane: wire.Reliable, From: tio.FromClient, Kind: tio.Emit, Payload: wire.CodecBytes},
	tio.Event{Name: "said", Lane: wire.Reliable, From: tio.FromServer, Kind: tio.Emit, Payload: wire.CodecBytes},
	tio.Event{Name: "pos", Lane: wire.Unreliable, Kind: tio.Emit, Payload: wire.CodecBytes, Fallback: tio.Newest},
)

var (
	evMetFail = wire.EventID("fail")
	evMetPos  = wire.EventID("pos")
)

// A scripted session on each mapping, then a scrape: every series the
// script touched holds exactly what the script did, counted on the server.
func TestMetricsCountAScriptedSessionOnBothMappings(t *testing.T) {
	reg := serveMetrics(t)
	m := reg.Metrics
	var datagrams [2]atomic.Int64 // by metrics.Mapping
	srv, err := tio.NewServer(metricsContract, tio.ServerOptions{Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.HandleCall(evEcho, func(_ context.Context, _ *tio.Peer, req []byte) ([]byte, error) { return req, nil })
	srv.HandleCall(evMetFail, func(context.Context, *tio.Peer, []byte) ([]byte, error) { return nil, errors.New("nope") })
	srv.HandleEmit(evSay, func(_ context.Context, p *tio.Peer, b []byte) error {
		if string(b) == "bad" {
			return tio.Errorf(tio.ValidationFailed, "bad is refused")
		}
		return p.Emit(evSaid, b)
	})
	srv.HandleEmit(evMetPos, func(_ context.Context, p *tio.Peer, _ []byte) error {
		datagrams[p.Data().(metrics.Mapping)].Add(1)
		return nil
	})
	l := listen(t, srv, Options{Authorize: func(_ context.Context, r *transport.Request) (any, error) {
		if r.Query.Get("token") == "bad" {
			return nil, Refuse("bad token")
		}
		// The peer's mapping, for the datagram handler.
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			return metrics.WebSocket, nil
		}
		return metrics.WebTransport, nil
	}})
	ctx := testCtx(t)
	pin := DialOptions{CertHashes: [][32]byte{cert(t).SHA256}}

	// One refused peer per mapping.
	for _, dial := range []func() error{
		func() error { _, err := Dial(ctx, l.URL()+"?token=bad", metricsContract, pin); return err },
		func() error {
			_, err := DialWebSocket(ctx, l.WebSocketURL()+"?token=bad", metricsContract, pin)
			return err
		},
	} {
		if err := dial(); wire.CodeOf(err) != wire.Unauthorized {
			t.Fatalf("a refused dial: %v, want WT_UNAUTHORIZED", err)
		}
	}

	wt, err := Dial(ctx, l.URL(), metricsContract, pin)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := DialWebSocket(ctx, l.WebSocketURL(), metricsContract, pin)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []*tio.Client{wt, ws} {
		said := make(chan struct{}, 8)
		c.On(evSaid, func([]byte) error { said <- struct{}{}; return nil })
		for _, p := range []string{"one", "two", "bad", "six"} {
			if err := c.Emit(evSay, []byte(p)); err != nil {
				t.Fatal(err)
			}
		}
		for range 3 {
			select {
			case <-said:
			case <-ctx.Done():
				t.Fatal("the server's answers never came")
			}
		}
		// Datagrams can be lost: send until the server saw one.
		for datagrams[i].Load() == 0 {
			if err := c.SendDatagram(evMetPos, []byte("xy")); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if got, err := wt.Call(ctx, evEcho, []byte("abc")); err != nil || string(got) != "abc" {
		t.Fatalf("echo: %q, %v", got, err)
	}
	if _, err := wt.Call(ctx, evMetFail, []byte("x")); wire.CodeOf(err) != wire.HandlerError {
		t.Fatalf("fail: %v, want WT_HANDLER_ERROR", err)
	}
	// The scrape while both sessions are open.
	waitFor(t, "both sessions open", func() bool {
		return value(t, reg, "tio_sessions_open", "mapping", "webtransport") == 1 && value(t, reg, "tio_sessions_open", "mapping", "websocket") == 1
	})
	liveEmitIn := value(t, reg, "tio_frames_received_total", "mapping", "webtransport", "lane", "emit")
	for _, c := range []*tio.Client{wt, ws} {
		if err := c.Close(tio.NoError, "done"); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "both sessions ended", func() bool {
		return value(t, reg, "tio_sessions_ended_total", "mapping", "webtransport", "code", "WT_NO_ERROR") == 1 &&
			value(t, reg, "tio_sessions_ended_total", "mapping", "websocket", "code", "WT_NO_ERROR") == 1
	})

	hs := float64(wire.HeaderLen + len(wire.AppendHandshake(nil, wire.Handshake{V: wire.ProtocolVersion, Events: metricsContract.Table()})))
	frame := float64(wire.HeaderLen + 3) // every say and said payload is 3 bytes
	callErr := float64(wire.HeaderLen + len(wire.AppendCallError(nil, wire.CallError{Code: wire.HandlerError, Message: "nope"})))
	want := []series{
		{"tio_frames_received_total", []string{"mapping", "webtransport", "lane", "emit"}, liveEmitIn},
		{"tio_sessions_open", []string{"mapping", "webtransport"}, 0},
		{"tio_sessions_open", []string{"mapping", "websocket"}, 0},
		{"tio_sessions_started_total", []string{"mapping", "webtransport"}, 1},
		{"tio_sessions_started_total", []string{"mapping", "websocket"}, 1},
		{"tio_refusals_total", []string{"mapping", "webtransport", "reason", "unauthorized"}, 1},
		{"tio_refusals_total", []string{"mapping", "websocket", "reason", "unauthorized"}, 1},
		{"tio_dropped_total", []string{"reason", "validation"}, 2},
		{"tio_calls_total", []string{"event", "echo", "outcome", "ok"}, 1},
		{"tio_calls_total", []string{"event", "fail", "outcome", "error"}, 1},
		{"tio_call_duration_seconds_count", []string{"event", "echo"}, 1},
		{"tio_call_duration_seconds_count", []string{"event", "fail"}, 1},
		{"tio_emit_queue_frames", nil, 0},
	}
	for _, mp := range []string{"webtransport", "websocket"} {
		want = append(want,
			series{"tio_frames_received_total", []string{"mapping", mp, "lane", "emit"}, 5},
			series{"tio_bytes_received_total", []string{"mapping", mp, "lane", "emit"}, hs + 4*frame},
			series{"tio_frames_sent_total", []string{"mapping", mp, "lane", "emit"}, 4},
			series{"tio_bytes_sent_total", []string{"mapping", mp, "lane", "emit"}, hs + 3*frame},
		)
	}
	want = append(want,
		series{"tio_frames_received_total", []string{"mapping", "webtransport", "lane", "call"}, 2},
		series{"tio_bytes_received_total", []string{"mapping", "webtransport", "lane", "call"}, float64(2*wire.HeaderLen + 3 + 1)},
		series{"tio_frames_sent_total", []string{"mapping", "webtransport", "lane", "call"}, 2},
		series{"tio_bytes_sent_total", []string{"mapping", "webtransport", "lane", "call"}, float64(wire.HeaderLen+3) + callErr},
	)
	for _, w := range want {
		if got := value(t, reg, w.name, w.labels...); got != w.value {
			t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.value)
		}
	}
	if liveEmitIn != 5 {
		t.Errorf("the scrape of the live session saw %v emit frames received, want 5", liveEmitIn)
	}
	// A datagram is received once and delivered, or discarded early (§7.5).
	early := value(t, reg, "tio_dropped_total", "reason", "early")
	wtIn := value(t, reg, "tio_frames_received_total", "mapping", "webtransport", "lane", "datagram")
	if wtIn != float64(datagrams[metrics.WebTransport].Load())+early {
		t.Errorf("WebTransport datagrams received %v, delivered %d, early %v", wtIn, datagrams[metrics.WebTransport].Load(), early)
	}
	if got := value(t, reg, "tio_frames_received_total", "mapping", "websocket", "lane", "datagram"); got != float64(datagrams[metrics.WebSocket].Load()) {
		t.Errorf("WebSocket DATAGRAM frames received %v, delivered %d", got, datagrams[metrics.WebSocket].Load())
	}

}

// series is a scraped value the script must have produced.
type series struct {
	name   string
	labels []string
	value  float64
}

// metricsEndpoint is where a test scrapes the series, as an operator does.
type metricsEndpoint = scrape.Endpoint

func serveMetrics(t *testing.T) *metricsEndpoint { return scrape.Serve(t) }

// value is the scraped value of the series name with the given label
// pairs; 0 when absent.
func value(t *testing.T, e *metricsEndpoint, name string, labels ...string) float64 {
	t.Helper()
	return e.Value(t, name, labels...)
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
