package endpoint

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	cws "github.com/coder/websocket"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// meteredServer is a tio.Server of contract counting on its own metrics
// endpoint, listening on both mappings: echo answers, hang holds its call
// until the call's context ends, say's handler fails on "boom", panics on
// "panic", refuses "bad" (WT_VALIDATION_FAILED) and takes anything else.
type meteredServer struct {
	*tio.Server
	reg     *metricsEndpoint
	l       *Listener
	hanging chan struct{}
	hung    chan struct{}
}

func startMetered(t *testing.T, so tio.ServerOptions, lo Options) *meteredServer {
	t.Helper()
	s := &meteredServer{reg: serveMetrics(t), hanging: make(chan struct{}, 8), hung: make(chan struct{}, 8)}
	so.Metrics = s.reg.Metrics
	so.Logger = slog.New(slog.DiscardHandler) // the panic below is logged at Error
	srv, err := tio.NewServer(contract, so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	srv.HandleCall(evEcho, func(_ context.Context, _ *tio.Peer, req []byte) ([]byte, error) { return req, nil })
	srv.HandleCall(evHang, func(ctx context.Context, _ *tio.Peer, _ []byte) ([]byte, error) {
		s.hanging <- struct{}{}
		<-ctx.Done()
		defer func() { s.hung <- struct{}{} }()
		return nil, ctx.Err()
	})
	srv.HandleEmit(evSay, func(_ context.Context, _ *tio.Peer, b []byte) error {
		switch string(b) {
		case "boom":
			return errors.New("boom")
		case "panic":
			panic("say panicked")
		case "bad":
			return tio.Errorf(tio.ValidationFailed, "bad is refused")
		}
		return nil
	})
	s.Server = srv
	lo.Logger = so.Logger
	s.l = listen(t, srv, lo)
	return s
}

func (s *meteredServer) dial(t *testing.T, mapping string) *tio.Client {
	t.Helper()
	c, err := s.dialErr(t, mapping, "")
	if err != nil {
		t.Fatalf("%s: %v", mapping, err)
	}
	t.Cleanup(func() { _ = c.Close(tio.NoError, "done") })
	return c
}

func (s *meteredServer) dialErr(t *testing.T, mapping, query string) (*tio.Client, error) {
	t.Helper()
	pin := DialOptions{CertHashes: [][32]byte{cert(t).SHA256}}
	if mapping == "websocket" {
		return DialWebSocket(testCtx(t), s.l.WebSocketURL()+query, contract, pin)
	}
	return Dial(testCtx(t), s.l.URL()+query, contract, pin)
}

var mappings = []string{"webtransport", "websocket"}

// §10.1, §8: the call limit's hit and a cancelled call's outcome are
// counted, over real QUIC, and scraped from the text exposition. With
// MaxCalls 1 the second call reaches the engine, which resets it: QUIC's
// stream limit leaves room for the session's CONNECT stream.
func TestSpec10_1_Spec8_MetricsCountTheCallLimitAndACancelledCall(t *testing.T) {
	s := startMetered(t, tio.ServerOptions{Options: tio.Options{MaxCalls: 1}}, Options{})
	c := s.dial(t, "webtransport")
	ctx, cancel := context.WithCancel(testCtx(t))
	errc := make(chan error, 1)
	go func() { _, err := c.Call(ctx, evHang, []byte("x")); errc <- err }()
	<-s.hanging
	if _, err := c.Call(testCtx(t), evEcho, []byte("x")); wire.CodeOf(err) != wire.TooManyStreams {
		t.Fatalf("a second call over MaxCalls 1: %v, want WT_TOO_MANY_STREAMS", err)
	}
	if got := value(t, s.reg, "tio_limit_hits_total", "limit", "max_calls"); got != 1 {
		t.Fatalf("max_calls hits %v, want 1", got)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled call: %v", err)
	}
	<-s.hung
	waitFor(t, "the cancelled call counted", func() bool {
		return value(t, s.reg, "tio_calls_total", "event", "hang", "outcome", "cancelled") == 1
	})
	got := s.reg.Scrape(t)
	for _, w := range []series{
		{"tio_call_duration_seconds_count", []string{"event", "hang"}, 1},
		{"tio_calls_total", []string{"event", "hang", "outcome", "ok"}, 0},
		{"tio_calls_total", []string{"event", "hang", "outcome", "error"}, 0},
	} {
		if v := got.Get(w.name, w.labels...); v != w.value {
			t.Errorf("%s%v = %v, want %v", w.name, w.labels, v, w.value)
		}
	}
}

// §5.1: the per-session and per-server bounds on the bytes of call
// requests are counted when a real request meets them: a 16 KiB request
// needs a 16 KiB buffer, past the 8 KiB bound of each server.
func TestSpec5_1_MetricsCountTheRequestByteBoundsOverQUIC(t *testing.T) {
	for _, c := range []struct {
		limit, says string
		opts        tio.ServerOptions
	}{
		{"request_bytes", "of this session", tio.ServerOptions{Options: tio.Options{MaxRequestBytes: 8 << 10}}},
		{"request_bytes_total", "of all sessions", tio.ServerOptions{MaxRequestBytesTotal: 8 << 10}},
	} {
		t.Run(c.limit, func(t *testing.T) {
			s := startMetered(t, c.opts, Options{})
			cl := s.dial(t, "webtransport")
			_, err := cl.Call(testCtx(t), evEcho, make([]byte, 16<<10))
			if wire.CodeOf(err) != wire.PayloadTooLarge || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("a 16 KiB request: %v, want WT_PAYLOAD_TOO_LARGE %q", err, c.says)
			}
			got := s.reg.Scrape(t)
			for limit, want := range map[string]float64{"request_bytes": 0, "request_bytes_total": 0, c.limit: 1} {
				if v := got.Get("tio_limit_hits_total", "limit", limit); v != want {
					t.Errorf("%s hits %v, want %v", limit, v, want)
				}
			}
			if got, err := cl.Call(testCtx(t), evEcho, []byte("small")); err != nil || string(got) != "small" {
				t.Fatalf("a request under the bound after the refusal: %q, %v", got, err)
			}
		})
	}
}

// An emit handler's error other than WT_VALIDATION_FAILED, and its
// recovered panic, are counted by event on both mappings; a validation
// refusal is a drop, not a handler error.
func TestMetricsCountEmitHandlerErrorsOnBothMappings(t *testing.T) {
	s := startMetered(t, tio.ServerOptions{}, Options{})
	for i, mp := range mappings {
		c := s.dial(t, mp)
		for _, say := range []string{"boom", "bad", "panic", "fine"} {
			if err := c.Emit(evSay, []byte(say)); err != nil {
				t.Fatal(err)
			}
		}
		want := float64(2 * (i + 1))
		waitFor(t, mp+": the handler errors counted", func() bool {
			return value(t, s.reg, "tio_handler_errors_total", "event", "say") == want &&
				value(t, s.reg, "tio_dropped_total", "reason", "validation") == float64(i+1)
		})
		if err := c.Close(tio.NoError, "done"); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "both sessions ended WT_NO_ERROR, the panic notwithstanding", func() bool {
		got := s.reg.Scrape(t)
		return got.Get("tio_sessions_ended_total", "mapping", "webtransport", "code", "WT_NO_ERROR") == 1 &&
			got.Get("tio_sessions_ended_total", "mapping", "websocket", "code", "WT_NO_ERROR") == 1
	})
	if got := value(t, s.reg, "tio_handler_errors_total", "event", "say"); got != 4 {
		t.Fatalf("handler errors %v after the sessions ended, want 4", got)
	}
}

// The door's refusals are counted by mapping and reason: a session over
// MaxSessions (HTTP 503) and an authorize that reached no decision. (A
// listener shutting down takes no new connection: its shutting_down
// refusal is TestHandlerShutdownClosesSessions', transport/websocket.)
func TestMetricsCountTheDoorsRefusalsOnBothMappings(t *testing.T) {
	s := startMetered(t, tio.ServerOptions{}, Options{MaxSessions: 1, Authorize: func(_ context.Context, r *transport.Request) (any, error) {
		if r.Query.Get("token") == "fail" {
			return nil, errors.New("the verification backend is down")
		}
		return nil, nil
	}})
	var held []*tio.Client
	for _, mp := range mappings {
		held = append(held, s.dial(t, mp))
		if _, err := s.dialErr(t, mp, ""); !errors.Is(err, transport.ErrRefused) || !strings.Contains(err.Error(), "503") {
			t.Fatalf("%s: a session over MaxSessions: %v, want HTTP 503", mp, err)
		}
	}
	// The held sessions keep the slots: an authorize failure needs one.
	for _, c := range held {
		_ = c.Close(tio.NoError, "make room")
	}
	for _, mp := range mappings {
		waitFor(t, mp+": the slot given back", func() bool { return value(t, s.reg, "tio_sessions_open", "mapping", mp) == 0 })
		if c, err := s.dialErr(t, mp, "?token=fail"); err == nil {
			<-c.Done()
			if end := c.Err(); !strings.Contains(end.Error(), transport.AuthorizeFailedReason) {
				t.Fatalf("%s: an authorize failure ended the session with %v", mp, end)
			}
		}
		waitFor(t, mp+": the authorize failure counted", func() bool {
			return value(t, s.reg, "tio_refusals_total", "mapping", mp, "reason", "authorize_failed") == 1
		})
	}
	got := s.reg.Scrape(t)
	for _, mp := range mappings {
		for reason, want := range map[string]float64{"max_sessions": 1, "authorize_failed": 1, "unauthorized": 0, "max_sessions_per_address": 0} {
			if v := got.Get("tio_refusals_total", "mapping", mp, "reason", reason); v != want {
				t.Errorf("%s: %s refusals %v, want %v", mp, reason, v, want)
			}
		}
	}
}

// A raw WebSocket peer's emits the server drops are counted by cause (an
// unknown event id, §5.4; an event only the server sends), and how its
// sessions end: a close code outside §10.2 as "other", a connection
// dropped without a close as "lost" (§11).
func TestSpec5_4_Spec11_MetricsCountDropsAndEndsOfARawPeer(t *testing.T) {
	reg := serveMetrics(t)
	s := startBurstServer(t, tio.ServerOptions{Metrics: reg.Metrics})
	dial := func() *cws.Conn {
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: pinnedTLS(t)}}
		c, _, err := cws.Dial(testCtx(t), s.l.WebSocketURL(), &cws.DialOptions{HTTPClient: client})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.CloseNow() })
		go func() { // read, as a peer does, so the server's frames flow
			for {
				if _, _, err := c.Read(context.Background()); err != nil {
					return
				}
			}
		}()
		return c
	}
	frames := burstHandshake
	for _, ev := range []uint32{wire.EventID("nobody-declared-this"), evSaid} {
		var err error
		if frames, err = wire.AppendFrame(frames, wire.FrameEmit, wire.CodecBytes, ev, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	c := dial()
	if err := c.Write(testCtx(t), cws.MessageBinary, frames); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the drops counted", func() bool {
		got := reg.Scrape(t)
		return got.Get("tio_dropped_total", "reason", "unknown") == 1 && got.Get("tio_dropped_total", "reason", "direction") == 1
	})
	if err := c.Close(cws.StatusCode(wire.WebSocketCodeBase+999), "a code of its own"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the end with a code outside §10.2 counted", func() bool {
		return value(t, reg, "tio_sessions_ended_total", "mapping", "websocket", "code", "other") == 1
	})
	lost := dial()
	if err := lost.Write(testCtx(t), cws.MessageBinary, burstHandshake); err != nil {
		t.Fatal(err)
	}
	s.waitMembers(t, 1)
	_ = lost.CloseNow() // the TCP connection dropped, no close frame
	waitFor(t, "the lost session counted", func() bool {
		return value(t, reg, "tio_sessions_ended_total", "mapping", "websocket", "code", "lost") == 1
	})
	if got := value(t, reg, "tio_sessions_started_total", "mapping", "websocket"); got != 2 {
		t.Fatalf("%v sessions started, want 2", got)
	}
}
