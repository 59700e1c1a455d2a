package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	natsgo "github.com/nats-io/nats.go"

	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/adapter/nats"
	"github.com/transport-io/tiogen/runtime/adapter/nats/natstest"
	"github.com/transport-io/tiogen/runtime/wire"
)

// natsHosts is how many hosts the NATS figures run: one publishes, the
// others each have a member in the room.
const natsHosts = 3

// natsWindow bounds the saturated figures: the publisher waits while this
// many broadcasts are published and not yet delivered everywhere, so NATS
// never drops a slow consumer and both sides are measured at the same
// depth.
const natsWindow = 8192

// runNATSBroadcast measures cross-host broadcasts through the NATS adapter
// (three adapters, each its own connection, on an embedded nats-server in
// this process) against raw nats.go publish/subscribe on the same server
// with the same frame bytes: paced latency, saturated deliveries, a host's
// start (connect, ordinal claim, subscribe) and reconnection after NATS
// returns.
func runNATSBroadcast(ctx context.Context, cfg config) ([]sample, error) {
	dir, err := os.MkdirTemp("", "tio-bench-nats")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	srv, err := natstest.New(dir, -1, natstest.MaxPayload)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()

	prio, err := latencyPriority(cfg)
	if err != nil {
		return nil, err
	}
	defer switchPriority(cfg, false) // the next scenario starts at normal priority
	var out []sample
	starts := make([]float64, 0, natsHosts)
	hosts := make([]*nats.Adapter, natsHosts)
	for i := range hosts {
		began := time.Now()
		a, err := nats.New(ctx, nats.Options{URL: srv.URL(), NodeID: fmt.Sprintf("bench-%d", i)})
		if err != nil {
			return nil, err
		}
		starts = append(starts, float64(time.Since(began).Microseconds())/1000)
		defer a.Close()
		hosts[i] = a
	}
	out = append(out, sample{Figure: "nats host start (connect, ordinal claim, subscribe)", Unit: "ms", Lower: true, Ours: median(starts), Max: 20, Note: prio})

	raw, err := newRawNATS(srv.URL())
	if err != nil {
		return nil, err
	}
	defer raw.close()

	ours := adapterSide(hosts)
	for _, size := range cfg.sizes {
		pacedOurs, pacedRaw, err := inOrder(cfg, ours, raw, func(s side) (latency, error) { return natsPaced(ctx, cfg, size, s) })
		if err != nil {
			return nil, fmt.Errorf("paced, %d B: %w", size, err)
		}
		// Saturated, both sides use every core they get: at real-time
		// priority they would starve the rest of the host for seconds.
		if err := switchPriority(cfg, false); err != nil {
			return nil, err
		}
		satOurs, satRaw, err := inOrder(cfg, ours, raw, func(s side) (float64, error) { return natsSaturated(ctx, cfg, size, s) })
		if err != nil {
			return nil, fmt.Errorf("saturated, %d B: %w", size, err)
		}
		if err := switchPriority(cfg, true); err != nil {
			return nil, err
		}
		rate := fmt.Sprintf(" at %d/s", natsRate)
		out = append(out,
			sample{Figure: "nats broadcast p50" + rate, Size: size, Unit: "µs", Lower: true, Ours: pacedOurs.p50, Raw: pacedRaw.p50, HasRaw: true, Max: 200, Note: prio},
			sample{Figure: "nats broadcast p99" + rate, Size: size, Unit: "µs", Lower: true, Ours: pacedOurs.p99, Raw: pacedRaw.p99, HasRaw: true, Max: 2000, Note: prio},
			sample{Figure: "nats remote deliveries saturated", Size: size, Unit: "deliveries/s", Ours: satOurs, Raw: satRaw, HasRaw: true, Target: 0.5,
				Note: fmt.Sprintf("1 publisher, %d receiving hosts, at most %d broadcasts in flight", natsHosts-1, natsWindow)},
		)
	}

	// Reconnection: from the restarted server accepting clients to every
	// host reporting Reconnected.
	var reconnected sync.WaitGroup
	reconnected.Add(natsHosts)
	for _, a := range hosts {
		var once sync.Once
		defer a.Events(func(e adapter.Event) {
			if e.Kind == adapter.Reconnected {
				once.Do(reconnected.Done)
			}
		})()
	}
	srv.Stop()
	for _, a := range hosts {
		for a.Connected() {
			time.Sleep(time.Millisecond)
		}
	}
	if err := srv.Restart(); err != nil {
		return nil, err
	}
	back := time.Now()
	done := make(chan struct{})
	go func() { reconnected.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		return nil, errors.New("the hosts did not reconnect within 10 s of NATS's return")
	}
	out = append(out, sample{Figure: "nats reconnect after NATS returns (all hosts)", Unit: "ms", Lower: true,
		Ours: float64(time.Since(back).Microseconds()) / 1000, Max: 250, Note: fmt.Sprintf("retry every %v; %s", nats.ReconnectWait, prio)})
	return out, nil
}

// latencyPriority starts the latency figures at real-time priority, with
// every core kept awake, when -realtime asks for it (run checked that the host allows it) and names
// the priority they are measured at.
func latencyPriority(cfg config) (string, error) {
	if !cfg.realtime {
		return "normal priority", nil
	}
	return "real-time priority (SCHED_RR 1), cores kept awake, ours and raw alike", setLatencyMode(true)
}

// switchPriority moves the process to real-time priority (on) or back to
// normal, when -realtime is in use.
func switchPriority(cfg config, on bool) error {
	if !cfg.realtime {
		return nil
	}
	return setLatencyMode(on)
}

// inOrder measures ours and raw, raw first on every other run, so that
// neither always runs second on a host whose load drifts (-check compares
// the two).
func inOrder[T any](cfg config, ours, raw side, measure func(side) (T, error)) (o, r T, err error) {
	if cfg.run%2 == 1 {
		if r, err = measure(raw); err == nil {
			o, err = measure(ours)
		}
		return o, r, err
	}
	if o, err = measure(ours); err == nil {
		r, err = measure(raw)
	}
	return o, r, err
}

// natsRate is the pace of the latency figures.
const natsRate = 10_000

// side is one way of carrying broadcasts between hosts: the adapter, or raw
// nats.go. Frames carry their send time in their first 8 bytes.
type side interface {
	// receive registers fn on every receiving host, until the returned
	// function is called.
	receive(fn func(frame []byte)) (stop func(), err error)
	publish(frame []byte) error
	receivers() int
}

type adapterSide []*nats.Adapter

func (h adapterSide) receivers() int { return len(h) - 1 }

func (h adapterSide) receive(fn func([]byte)) (func(), error) {
	var stops []func()
	for i, a := range h[1:] {
		if err := a.Join("bench", fmt.Sprintf("member-%d", i)); err != nil {
			return nil, err
		}
		stops = append(stops, a.Subscribe(func(m adapter.Message) { fn(m.Frame) }))
	}
	return func() {
		for i, a := range h[1:] {
			stops[i]()
			_ = a.Leave("bench", fmt.Sprintf("member-%d", i))
		}
	}, nil
}

func (h adapterSide) publish(frame []byte) error {
	return h[0].Broadcast(context.Background(), adapter.Message{Room: "bench", Lane: wire.Reliable, Frame: frame})
}

// rawNATS is the baseline: one publishing connection and one subscribing
// connection per receiving host, one subject.
type rawNATS struct {
	pub  *natsgo.Conn
	subs []*natsgo.Conn
}

func newRawNATS(url string) (*rawNATS, error) {
	r := &rawNATS{}
	var err error
	if r.pub, err = natsgo.Connect(url); err != nil {
		return nil, err
	}
	for range natsHosts - 1 {
		nc, err := natsgo.Connect(url)
		if err != nil {
			r.close()
			return nil, err
		}
		r.subs = append(r.subs, nc)
	}
	return r, nil
}

func (r *rawNATS) close() {
	if r.pub != nil {
		r.pub.Close()
	}
	for _, nc := range r.subs {
		nc.Close()
	}
}

func (r *rawNATS) receivers() int { return len(r.subs) }

func (r *rawNATS) receive(fn func([]byte)) (func(), error) {
	var subs []*natsgo.Subscription
	for _, nc := range r.subs {
		s, err := nc.Subscribe("raw.bench", func(m *natsgo.Msg) { fn(m.Data) })
		if err != nil {
			return nil, err
		}
		_ = s.SetPendingLimits(-1, -1)
		if err := nc.Flush(); err != nil {
			return nil, err
		}
		subs = append(subs, s)
	}
	return func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}, nil
}

func (r *rawNATS) publish(frame []byte) error { return r.pub.Publish("raw.bench", frame) }

func natsStamped(size int) []byte {
	b := make([]byte, size)
	binary.BigEndian.PutUint64(b, uint64(time.Now().UnixNano()))
	return b
}

type latency struct{ p50, p99 float64 }

// natsPaced publishes natsRate broadcasts a second for -duration and
// returns the percentiles of send-to-delivery time over every receiver.
func natsPaced(ctx context.Context, cfg config, size int, s side) (latency, error) {
	n := min(int(cfg.duration.Seconds()*natsRate), cfg.count)
	want := n * s.receivers()
	var mu sync.Mutex
	lat := make([]float64, 0, want)
	all := make(chan struct{})
	stop, err := s.receive(func(f []byte) {
		d := time.Now().UnixNano() - int64(binary.BigEndian.Uint64(f))
		mu.Lock()
		lat = append(lat, float64(d)/1000)
		if len(lat) == want {
			close(all)
		}
		mu.Unlock()
	})
	if err != nil {
		return latency{}, err
	}
	defer stop()
	began := time.Now()
	for i := range n {
		if d := time.Until(began.Add(time.Duration(i) * time.Second / natsRate)); d > 0 {
			time.Sleep(d)
		}
		if err := s.publish(natsStamped(size)); err != nil {
			return latency{}, err
		}
	}
	select {
	case <-all:
	case <-ctx.Done():
		return latency{}, ctx.Err()
	case <-time.After(10 * time.Second):
		return latency{}, fmt.Errorf("paced: %d of %d deliveries arrived", len(lat), want)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lat)
	return latency{p50: lat[len(lat)/2], p99: lat[len(lat)*99/100]}, nil
}

// natsSaturated publishes as fast as the window allows for -duration and
// returns remote deliveries per second.
func natsSaturated(ctx context.Context, cfg config, size int, s side) (float64, error) {
	var delivered atomic.Int64
	stop, err := s.receive(func([]byte) { delivered.Add(1) })
	if err != nil {
		return 0, err
	}
	defer stop()
	frame := natsStamped(size)
	receivers := int64(s.receivers())
	began := time.Now()
	sent := int64(0)
	for time.Since(began) < cfg.duration && sent < int64(cfg.count) {
		for sent*receivers-delivered.Load() > natsWindow*receivers {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			time.Sleep(20 * time.Microsecond)
		}
		if err := s.publish(frame); err != nil {
			return 0, err
		}
		sent++
	}
	deadline := time.Now().Add(10 * time.Second)
	for delivered.Load() < sent*receivers {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("saturated: %d of %d deliveries arrived", delivered.Load(), sent*receivers)
		}
		time.Sleep(100 * time.Microsecond)
	}
	return float64(sent*receivers) / time.Since(began).Seconds(), nil
}
