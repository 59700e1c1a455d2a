package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/wire"
)

// callRequest is the returns call's request (and, echoed, its response).
var callRequest = []byte(`{"text":"hello, round trip"}`)

// maxLatencySamples bounds the latencies one caller keeps.
const maxLatencySamples = 1 << 16

// rateResult is a throughput with its latency quantiles.
type rateResult struct {
	perSec   float64
	p50, p99 float64
	allocs   float64 // heap allocations per call, both ends (one process)
	cpu      float64 // user+system CPU µs per call, both ends (one process)
}

// mallocs is the process's count of heap allocations so far.
func mallocs() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.Mallocs
}

// callTally is one subject's calls over one or more measurement windows.
type callTally struct {
	calls   int64
	elapsed time.Duration
	cpu     time.Duration // the process's user+system CPU time
	mallocs uint64
	lat     latencies
}

func (t *callTally) result() rateResult {
	n := float64(max(t.calls, 1))
	return rateResult{
		perSec: perSecond(t.calls, t.elapsed),
		p50:    t.lat.percentile(0.50),
		p99:    t.lat.percentile(0.99),
		allocs: float64(t.mallocs) / n,
		cpu:    float64(t.cpu) / float64(time.Microsecond) / n,
	}
}

// callWindow runs callers goroutines, each calling one at a time, for d or
// until t holds count calls, and adds the window's round trips to t.
func callWindow(ctx context.Context, count int, callers int, d time.Duration, t *callTally, call func(ctx context.Context, buf []byte) error) error {
	var (
		issued atomic.Int64
		wg     sync.WaitGroup
		mu     sync.Mutex
		first  error
		calls  int64
	)
	room := int64(count) - t.calls
	before := mallocs()
	cpu0 := cpuTime()
	start := time.Now()
	deadline := start.Add(d)
	for range callers {
		wg.Go(func() {
			lat := make(latencies, 0, 1024)
			buf := make([]byte, 4096)
			var err error
			var n int64
			for issued.Add(1) <= room && time.Now().Before(deadline) {
				t0 := time.Now()
				if err = call(ctx, buf); err != nil {
					break
				}
				n++
				if len(lat) < maxLatencySamples {
					lat = append(lat, time.Since(t0))
				}
			}
			mu.Lock()
			defer mu.Unlock()
			t.lat = append(t.lat, lat...)
			calls += n
			if err != nil && first == nil {
				first = err
			}
		})
	}
	wg.Wait()
	t.elapsed += time.Since(start)
	t.cpu += cpuTime() - cpu0
	t.mallocs += mallocs() - before
	t.calls += calls
	return first
}

// driveCalls runs callers goroutines, each calling one at a time, until the
// count or the duration is reached, and measures round trips.
func driveCalls(ctx context.Context, cfg config, callers int, call func(ctx context.Context, buf []byte) error) (rateResult, error) {
	ctx, cancel := measureCtx(ctx, cfg)
	defer cancel()
	var t callTally
	err := callWindow(ctx, cfg.count, callers, cfg.duration, &t, call)
	return t.result(), err
}

func runWTCall(ctx context.Context, cfg config) ([]sample, error) {
	var (
		o    *ourWT
		c    *tio.Client
		r    *rawWT
		sess *wt.Session
		err  error
	)
	// Each subject's goroutines, both ends, carry its profile label.
	asSubject("ours", func() {
		if o, err = startOurWT(tio.ServerOptions{}); err != nil {
			return
		}
		o.srv.HandleCall(evEcho, func(_ context.Context, _ *tio.Peer, req []byte) ([]byte, error) { return req, nil })
		c, err = o.dial(ctx)
	})
	if o != nil {
		defer o.close()
	}
	if err != nil {
		return nil, err
	}
	defer closeClient(c)
	asSubject("raw", func() {
		if r, err = startRawWT(serveRawEcho); err != nil {
			return
		}
		sess, err = r.dial(ctx)
	})
	if r != nil {
		defer r.close()
	}
	if err != nil {
		return nil, err
	}
	defer sess.CloseWithError(0, "")
	// The raw request is the same frame the engine sends for the call.
	rawReq, _ := frames(wire.FrameCallRequest, evEcho, callRequest, 1)

	var out []sample
	for _, callers := range cfg.callers {
		ours, raw, err := measureCallPair(ctx, cfg, callers,
			func(ctx context.Context, _ []byte) error {
				_, err := c.Call(ctx, evEcho, callRequest)
				return err
			},
			func(ctx context.Context, buf []byte) error {
				return rawCall(ctx, sess, rawReq, buf)
			})
		if err != nil {
			return nil, err
		}
		note := "ours: Client.Call on a returns event, echo handler; raw: new bidi stream per request, write the same CALL_REQUEST frame + FIN, server echoes it + FIN"
		out = append(out,
			sample{Figure: "calls", Concurrency: callers, Unit: "calls/s", Ours: ours.perSec, Raw: raw.perSec, HasRaw: true, Target: 0.95, Note: note},
			sample{Figure: "call p50", Concurrency: callers, Unit: "ms", Lower: true, Ours: ours.p50, Raw: raw.p50, HasRaw: true},
			sample{Figure: "call p99", Concurrency: callers, Unit: "ms", Lower: true, Ours: ours.p99, Raw: raw.p99, HasRaw: true, Target: 1.2},
			sample{Figure: "call allocs", Concurrency: callers, Unit: "allocs/call", Lower: true, Ours: ours.allocs, Raw: raw.allocs, HasRaw: true,
				Note: "heap allocations per call in the whole process (caller, server and both QUIC stacks), runtime.MemStats.Mallocs delta"},
			sample{Figure: "call CPU", Concurrency: callers, Unit: "µs/call", Lower: true, Ours: ours.cpu, Raw: raw.cpu, HasRaw: true,
				Note: "the process's user+system CPU time (getrusage) over the measurement, both ends, per call: steadier than calls/s on a shared host"},
		)
	}
	return out, nil
}

// measureCallPair measures ours and raw with callers callers each, for
// -duration each. With -slice, the duration is cut into slices that
// alternate between the two (which goes first alternating too), so that a
// host whose load drifts weighs on both alike; otherwise raw goes first on
// every other run.
func measureCallPair(ctx context.Context, cfg config, callers int, ours, raw func(ctx context.Context, buf []byte) error) (rateResult, rateResult, error) {
	ctx, cancel := measureCtx(ctx, cfg)
	defer cancel()
	slices, d := 1, cfg.duration
	if cfg.slice > 0 && cfg.slice < cfg.duration {
		slices = int((cfg.duration + cfg.slice - 1) / cfg.slice)
		d = cfg.duration / time.Duration(slices)
	}
	var tally [2]callTally
	names := [2]string{"ours", "raw"}
	calls := [2]func(context.Context, []byte) error{ours, raw}
	for i := range slices {
		first := (cfg.run + i) % 2 // 1: raw first
		for _, k := range []int{first, 1 - first} {
			var err error
			trace.WithRegion(ctx, fmt.Sprintf("%s %d callers", names[k], callers), func() {
				asSubject(names[k], func() { err = callWindow(ctx, cfg.count, callers, d, &tally[k], calls[k]) })
			})
			if err != nil {
				return rateResult{}, rateResult{}, fmt.Errorf("%s, %d callers: %w", names[k], callers, err)
			}
		}
	}
	return tally[0].result(), tally[1].result(), nil
}

// asSubject runs f with the profile label subject=name, which every
// goroutine it starts inherits (quic-go's, the servers', the callers', the
// emitters'): a -cpuprofile or -memprofile of a wt-call, wt-emit or ws-emit
// run then splits by subject with go tool pprof -tagfocus subject=ours (or raw).
func asSubject(name string, f func()) {
	pprof.Do(context.Background(), pprof.Labels("subject", name), func(context.Context) { f() })
}

// serveRawEcho answers each bidi stream of a raw session with the bytes it
// read, one goroutine per stream as a plain webtransport-go server would.
func serveRawEcho(sess *wt.Session) {
	for {
		str, err := sess.AcceptStream(context.Background())
		if err != nil {
			return
		}
		go func() {
			req, err := io.ReadAll(io.LimitReader(str, 1<<20))
			if err != nil {
				str.CancelWrite(0)
				return
			}
			_, _ = str.Write(req)
			_ = str.Close()
		}()
	}
}

// rawCall is one raw request/response on a new bidi stream.
func rawCall(ctx context.Context, sess *wt.Session, req, buf []byte) error {
	str, err := sess.OpenStreamSync(ctx)
	if err != nil {
		return err
	}
	if _, err := str.Write(req); err != nil {
		return err
	}
	if err := str.Close(); err != nil {
		return err
	}
	n := 0
	for {
		m, err := str.Read(buf[n:])
		n += m
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	if n != len(req) {
		return fmt.Errorf("raw response of %d bytes, want %d", n, len(req))
	}
	return nil
}

func runWTStream(ctx context.Context, cfg config) ([]sample, error) {
	elem := jsonPayload(64)
	o, err := startOurWT(tio.ServerOptions{})
	if err != nil {
		return nil, err
	}
	defer o.close()
	o.srv.HandleStream(evCount, func(_ context.Context, _ *tio.Peer, req []byte, send func([]byte) error) error {
		n, err := strconv.Atoi(string(req))
		if err != nil {
			return tio.Errorf(tio.ValidationFailed, "count: want a number: %v", err)
		}
		for range n {
			if err := send(elem); err != nil {
				return err
			}
		}
		return nil
	})
	c, err := o.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer closeClient(c)
	ours, err := streamOurs(ctx, cfg, c)
	if err != nil {
		return nil, fmt.Errorf("ours: %w", err)
	}
	raw, err := streamRaw(ctx, cfg, cfg.batch, elem)
	if err != nil {
		return nil, fmt.Errorf("raw: %w", err)
	}
	rawSingle, err := streamRaw(ctx, cfg, 1, elem)
	if err != nil {
		return nil, fmt.Errorf("raw, one frame per Write: %w", err)
	}
	rawCredit, err := streamRawCredit(ctx, cfg, elem)
	if err != nil {
		return nil, fmt.Errorf("raw with credit: %w", err)
	}
	return []sample{{
		Figure: "stream", Size: len(elem), Unit: "elements/s", Ours: ours, Raw: raw, HasRaw: true, Target: 0.8,
		Note: fmt.Sprintf("ours: Client.Stream over the §6.6 credit window (32, refilled by 16); raw: one bidi stream, the server writes the same CALL_RESPONSE frames %d per Write, the client counts bytes read", cfg.batch),
	}, {
		Figure: "stream vs raw 1/Write", Size: len(elem), Unit: "elements/s", Ours: ours, Raw: rawSingle, HasRaw: true,
		Note: "the same ours against a raw server writing one frame per Write, as the engine's send does per element",
	}, {
		Figure: "stream vs raw with credit", Size: len(elem), Unit: "elements/s", Ours: ours, Raw: rawCredit, HasRaw: true,
		Note: "the same ours against a raw program obeying the §6.6 window (32, CALL_CREDIT of 16 per 16 consumed) that writes all the credit it holds in one Write",
	}}, nil
}

// streamOurs consumes one yields call of cfg.count elements, stopping early
// at the duration (breaking the loop resets the stream, §8).
func streamOurs(ctx context.Context, cfg config, c *tio.Client) (float64, error) {
	ctx, cancel := measureCtx(ctx, cfg)
	defer cancel()
	start := time.Now()
	deadline := start.Add(cfg.duration)
	var n int64
	for _, err := range c.Stream(ctx, evCount, []byte(strconv.Itoa(cfg.count))) {
		if err != nil {
			return 0, err
		}
		n++
		if n%1024 == 0 && time.Now().After(deadline) {
			break
		}
	}
	return perSecond(n, time.Since(start)), nil
}

// streamRaw is the same elements framed the same way on a raw bidi stream:
// the server writes perWrite frames per Write until the count or the
// duration, then FIN.
func streamRaw(ctx context.Context, cfg config, perWrite int, elem []byte) (float64, error) {
	ctx, cancel := measureCtx(ctx, cfg)
	defer cancel()
	batch, frameLen := frames(wire.FrameCallResponse, 0, elem, perWrite) // responses carry event id 0 (§5.4)
	cfg.batch = perWrite
	r, err := startRawWT(func(sess *wt.Session) {
		str, err := sess.AcceptStream(ctx)
		if err != nil {
			return
		}
		if _, err := io.ReadAll(io.LimitReader(str, 1<<10)); err != nil {
			return
		}
		if _, err := writeBatches(cfg, time.Now(), func() error { _, err := str.Write(batch); return err }); err != nil {
			return
		}
		_ = str.Close()
	})
	if err != nil {
		return 0, err
	}
	defer r.close()
	sess, err := r.dial(ctx)
	if err != nil {
		return 0, err
	}
	defer sess.CloseWithError(0, "")
	start := time.Now()
	str, err := sess.OpenStreamSync(ctx)
	if err != nil {
		return 0, err
	}
	if _, err := str.Write([]byte(strconv.Itoa(cfg.count))); err != nil {
		return 0, err
	}
	if err := str.Close(); err != nil {
		return 0, err
	}
	n, err := countBytes(str)
	if err != nil {
		return 0, err
	}
	if n%int64(frameLen) != 0 || n == 0 {
		return 0, fmt.Errorf("raw stream ended after %d bytes, not whole frames", n)
	}
	return perSecond(n/int64(frameLen), time.Since(start)), nil
}
