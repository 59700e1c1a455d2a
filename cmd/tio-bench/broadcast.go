package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	cws "github.com/coder/websocket"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/wire"
)

const (
	// broadcastWindow is the broadcasts a sender keeps in flight to its
	// slowest member, far below a member's 256-frame queue (§9): a window
	// over all members would let one member lag past that queue and be
	// closed WT_PEER_TOO_SLOW.
	broadcastWindow = 32
	// maxSamplesPerMember bounds the latencies one member keeps.
	maxSamplesPerMember = 4096
	broadcastRoom       = "all"
)

// stampPrefix starts a broadcast payload; the send time in Unix nanoseconds
// follows, then padding up to the payload size.
var stampPrefix = []byte(`{"t":`)

// stamped is a JSON payload of size bytes carrying the time t.
func stamped(dst []byte, t time.Time, size int) []byte {
	dst = append(dst[:0], stampPrefix...)
	dst = strconv.AppendInt(dst, t.UnixNano(), 10)
	dst = append(dst, `,"p":"`...)
	for len(dst) < size-2 {
		dst = append(dst, 'x')
	}
	return append(dst, `"}`...)
}

// stampOf reads the send time back from a stamped payload.
func stampOf(b []byte) (time.Time, bool) {
	rest, ok := bytes.CutPrefix(b, stampPrefix)
	if !ok {
		return time.Time{}, false
	}
	end := bytes.IndexByte(rest, ',')
	if end < 0 {
		return time.Time{}, false
	}
	ns, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

// recorder keeps one member's delivery latencies; record runs on the
// member's reader, one payload at a time.
type recorder struct {
	p   *pacer
	got atomic.Int64
	mu  sync.Mutex // lat: the next round's reader may run before take's caller sees it start (the server is another process)
	lat latencies
	bad atomic.Int64
}

func (r *recorder) record(payload []byte) {
	t, ok := stampOf(payload)
	if !ok {
		r.bad.Add(1)
	} else {
		r.mu.Lock()
		if len(r.lat) < maxSamplesPerMember {
			r.lat = append(r.lat, time.Since(t))
		}
		r.mu.Unlock()
	}
	r.got.Add(1)
	r.p.received()
}

// take appends the latencies recorded so far to dst and forgets them.
func (r *recorder) take(dst latencies) latencies {
	r.mu.Lock()
	defer r.mu.Unlock()
	dst = append(dst, r.lat...)
	r.lat = r.lat[:0]
	return dst
}

// audience is the receiving side of a broadcast round.
type audience struct {
	p         *pacer
	recorders []*recorder
	// lost reports a member whose session ended.
	lost func() error
}

// slowest is the fewest deliveries any member has had.
func (a audience) slowest() int64 {
	least := a.recorders[0].got.Load()
	for _, r := range a.recorders[1:] {
		least = min(least, r.got.Load())
	}
	return least
}

// admit returns once the slowest member is fewer than broadcastWindow
// broadcasts behind sent; a member's last deliveries may not wake the
// pacer, so it also polls.
func (a audience) admit(ctx context.Context, sent int64) error {
	t := time.NewTicker(50 * time.Microsecond)
	defer t.Stop()
	for sent-a.slowest() >= broadcastWindow {
		select {
		case <-a.p.wake:
		case <-t.C:
		case <-ctx.Done():
			if err := a.lost(); err != nil {
				return err
			}
			return fmt.Errorf("the slowest member stalled at %d of %d broadcasts: %w", a.slowest(), sent, ctx.Err())
		}
	}
	return nil
}

func runWSBroadcast(ctx context.Context, cfg config) ([]sample, error) {
	n := cfg.sessions
	ours, err := broadcastOurs(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("ours: %w", err)
	}
	raw, err := broadcastRaw(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("raw: %w", err)
	}
	note := fmt.Sprintf("%d WebSocket sessions on ws://127.0.0.1, all in this process; a 64 B payload stamped with its send time, as one EMIT frame; saturated: up to %d broadcasts ahead of the slowest member (the latency is mostly that queue); latency = receipt in the client's handler minus the stamp; ours: Room.Emit; raw: coder/websocket hub, a writer goroutine per connection with a 256-message channel, one Write per message", n, broadcastWindow)
	paced := fmt.Sprintf(" paced %d/s", cfg.broadcastRate)
	return []sample{
		{Figure: "broadcast deliveries saturated", Concurrency: n, Size: 64, Unit: "deliveries/s", Ours: ours[0].perSec, Raw: raw[0].perSec, HasRaw: true, Note: note},
		{Figure: "broadcast p50 saturated", Concurrency: n, Size: 64, Unit: "ms", Lower: true, Ours: ours[0].p50, Raw: raw[0].p50, HasRaw: true},
		{Figure: "broadcast p99 saturated", Concurrency: n, Size: 64, Unit: "ms", Lower: true, Ours: ours[0].p99, Raw: raw[0].p99, HasRaw: true},
		{Figure: "broadcast deliveries" + paced, Concurrency: n, Size: 64, Unit: "deliveries/s", Ours: ours[1].perSec, Raw: raw[1].perSec, HasRaw: true,
			Note: fmt.Sprintf("the same, one broadcast every 1/%d s", cfg.broadcastRate)},
		{Figure: "broadcast p50" + paced, Concurrency: n, Size: 64, Unit: "ms", Lower: true, Ours: ours[1].p50, Raw: raw[1].p50, HasRaw: true},
		{Figure: "broadcast p99" + paced, Concurrency: n, Size: 64, Unit: "ms", Lower: true, Ours: ours[1].p99, Raw: raw[1].p99, HasRaw: true},
	}, nil
}

// bothRounds runs the saturated round, then the paced one.
func bothRounds(ctx context.Context, cfg config, emit func([]byte) error, a audience) ([]rateResult, error) {
	sat, err := broadcastRound(ctx, cfg, emit, a, 0)
	if err != nil {
		return nil, fmt.Errorf("saturated: %w", err)
	}
	paced, err := broadcastRound(ctx, cfg, emit, a, cfg.broadcastRate)
	if err != nil {
		return nil, fmt.Errorf("paced: %w", err)
	}
	return []rateResult{sat, paced}, nil
}

func broadcastOurs(ctx context.Context, cfg config) ([]rateResult, error) {
	n := cfg.sessions
	var joined atomic.Int64
	o, err := startOurWS(tio.ServerOptions{OnSession: func(p *tio.Peer) {
		if p.Join(broadcastRoom) == nil {
			joined.Add(1)
		}
	}})
	if err != nil {
		return nil, err
	}
	defer o.close()
	a := audience{p: newPacer(broadcastWindow), recorders: make([]*recorder, n)}
	clients := make([]*tio.Client, n)
	defer func() {
		for _, c := range clients {
			if c != nil {
				_ = c.Close(tio.NoError, "")
			}
		}
		for _, c := range clients {
			if c != nil {
				_ = c.Wait()
			}
		}
	}()
	err = parallel(ctx, n, func(ctx context.Context, i int) error {
		c, err := o.dial(ctx)
		if err != nil {
			return err
		}
		r := &recorder{p: a.p}
		c.On(evSaid, func(b []byte) error { r.record(b); return nil })
		clients[i], a.recorders[i] = c, r
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := waitCount(ctx, &joined, int64(n)); err != nil {
		return nil, err
	}
	a.lost = func() error {
		for _, c := range clients {
			select {
			case <-c.Done():
				return fmt.Errorf("a member's session ended during the broadcast: %v", c.Err())
			default:
			}
		}
		return nil
	}
	room := o.srv.Room(broadcastRoom)
	return bothRounds(ctx, cfg, func(b []byte) error { return room.Emit(context.Background(), evSaid, b) }, a)
}

// rawHub is the raw program's server: every accepted connection gets a
// writer goroutine fed by a bounded channel, the usual Go broadcast hub.
type rawHub struct {
	mu    sync.Mutex
	outs  []chan []byte
	slow  atomic.Int64 // messages dropped on a full channel
	wg    sync.WaitGroup
	done  chan struct{}
	count atomic.Int64
}

func (h *rawHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, err := cws.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	out := make(chan []byte, 256)
	h.mu.Lock()
	h.outs = append(h.outs, out)
	h.mu.Unlock()
	h.count.Add(1)
	for {
		select {
		case b := <-out:
			if err := c.Write(r.Context(), cws.MessageBinary, b); err != nil {
				return
			}
		case <-h.done:
			_ = c.Close(cws.StatusNormalClosure, "")
			return
		}
	}
}

// broadcast hands the same bytes to every connection's writer.
func (h *rawHub) broadcast(b []byte) error {
	msg := append([]byte(nil), b...) // writers still hold earlier messages
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, out := range h.outs {
		select {
		case out <- msg:
		default:
			h.slow.Add(1)
		}
	}
	if n := h.slow.Load(); n > 0 {
		return fmt.Errorf("raw hub dropped %d messages on full channels", n)
	}
	return nil
}

func broadcastRaw(ctx context.Context, cfg config) ([]rateResult, error) {
	n := cfg.sessions
	hub := &rawHub{done: make(chan struct{})}
	addr, hs, err := serveHTTP(hub)
	if err != nil {
		return nil, err
	}
	defer hs.Close()
	defer close(hub.done)
	a := audience{p: newPacer(broadcastWindow), recorders: make([]*recorder, n)}
	conns := make([]*cws.Conn, n)
	var readers sync.WaitGroup
	var lost atomic.Int64
	defer func() {
		for _, c := range conns {
			if c != nil {
				_ = c.CloseNow()
			}
		}
		readers.Wait()
	}()
	err = parallel(ctx, n, func(ctx context.Context, i int) error {
		c, _, err := cws.Dial(ctx, "ws://"+addr+"/", nil)
		if err != nil {
			return err
		}
		r := &recorder{p: a.p}
		conns[i], a.recorders[i] = c, r
		readers.Go(func() {
			buf := make([]byte, 4096)
			for {
				_, rd, err := c.Reader(context.Background())
				if err != nil {
					if cws.CloseStatus(err) != cws.StatusNormalClosure && !errors.Is(err, net.ErrClosed) {
						lost.Add(1)
					}
					return
				}
				m, err := io.ReadFull(rd, buf[:wire.HeaderLen+64])
				if err != nil {
					lost.Add(1)
					return
				}
				r.record(buf[wire.HeaderLen:m])
			}
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := waitCount(ctx, &hub.count, int64(n)); err != nil {
		return nil, err
	}
	a.lost = func() error {
		if l := lost.Load(); l > 0 {
			return fmt.Errorf("%d raw members' connections ended during the broadcast", l)
		}
		return nil
	}
	var frame []byte
	return bothRounds(ctx, cfg, func(payload []byte) error {
		var err error
		if frame, err = wire.AppendFrame(frame[:0], wire.FrameEmit, wire.CodecJSON, evSaid, payload); err != nil {
			return err
		}
		return hub.broadcast(frame)
	}, a)
}

// broadcastRound broadcasts until the count or the duration, saturated
// (rate 0: up to broadcastWindow in flight) or at rate broadcasts per
// second, waits until every member received every broadcast, and returns
// deliveries per second and the delivery latencies.
func broadcastRound(ctx context.Context, cfg config, emit func([]byte) error, a audience, rate int) (rateResult, error) {
	ctx, cancel := measureCtx(ctx, cfg)
	defer cancel()
	n := int64(len(a.recorders))
	base := a.p.got.Load()
	memberBase := a.slowest() // every member had every earlier broadcast
	for _, r := range a.recorders {
		r.take(nil) // every earlier delivery was awaited
	}
	var buf []byte
	start := time.Now()
	deadline := start.Add(cfg.duration)
	var sent int64
	for sent < int64(cfg.count) && time.Now().Before(deadline) {
		if rate > 0 {
			if d := time.Until(start.Add(time.Duration(sent) * time.Second / time.Duration(rate))); d > 0 {
				time.Sleep(d)
			}
		} else if err := a.admit(ctx, memberBase+sent); err != nil {
			return rateResult{}, err
		}
		buf = stamped(buf, time.Now(), 64)
		if err := emit(buf); err != nil {
			return rateResult{}, err
		}
		sent++
	}
	if err := a.p.await(ctx, base+sent*n); err != nil {
		if lerr := a.lost(); lerr != nil {
			return rateResult{}, lerr
		}
		return rateResult{}, err
	}
	elapsed := time.Since(start)
	if err := a.lost(); err != nil {
		return rateResult{}, err
	}
	var all latencies
	for _, r := range a.recorders {
		if b := r.bad.Load(); b > 0 {
			return rateResult{}, fmt.Errorf("a member received %d payloads without a stamp", b)
		}
		all = r.take(all)
	}
	return rateResult{perSec: perSecond(sent*n, elapsed), p50: all.percentile(0.50), p99: all.percentile(0.99)}, nil
}
