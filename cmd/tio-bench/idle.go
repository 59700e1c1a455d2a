package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	cws "github.com/coder/websocket"
	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/runtime/tio"
)

// dialers open sessions in parallel when setting up many.
const dialers = 8

// footprint is the process's memory and goroutines at one moment, after a
// full collection.
type footprint struct {
	heapInuse, heapLive, sys uint64
	goroutines               int
}

func measureFootprint() footprint {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	// After a collection that finished sweeping, HeapAlloc is the live
	// heap: the objects alone, without the partly used spans HeapInuse
	// also counts.
	return footprint{heapInuse: m.HeapInuse, heapLive: m.HeapAlloc, sys: m.Sys, goroutines: runtime.NumGoroutine()}
}

// perSession is the growth from before to after, per session.
type perSession struct {
	HeapKB, LiveKB, SysKB, Goroutines float64
}

func growth(before, after footprint, n int) perSession {
	return perSession{
		HeapKB:     (float64(after.heapInuse) - float64(before.heapInuse)) / 1024 / float64(n),
		LiveKB:     (float64(after.heapLive) - float64(before.heapLive)) / 1024 / float64(n),
		SysKB:      (float64(after.sys) - float64(before.sys)) / 1024 / float64(n),
		Goroutines: float64(after.goroutines-before.goroutines) / float64(n),
	}
}

// parallel runs open(i) for i in [0, n) on a few goroutines, stopping at the
// first error.
func parallel(ctx context.Context, n int, open func(ctx context.Context, i int) error) error {
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range dialers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				if err := open(ctx, i); err != nil {
					once.Do(func() { first = fmt.Errorf("session %d: %w", i, err); cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// The idle figures are measured in a child process of their own, one per
// side, so that neither inherits the other's heap and Sys: memory the Go
// runtime obtained is not returned, and Sys would show no growth for the
// side measured second.
const (
	idleChildEnv    = "TIO_BENCH_IDLE_CHILD" // "ours" or "raw"
	idleSessionsEnv = "TIO_BENCH_IDLE_SESSIONS"
	// idleProfileEnv names a file prefix; the child writes its goroutine
	// profile, with the sessions open, to <prefix>-<side>.txt and its heap
	// profile to <prefix>-<side>-heap.pprof.
	idleProfileEnv = "TIO_BENCH_IDLE_PROFILE"
)

func runWTIdle(ctx context.Context, cfg config) ([]sample, error) {
	return runIdle(ctx, cfg, "ours", "raw", "raw after CONNECT", 1.1)
}

// runWSIdle is wt-idle over the WebSocket mapping: raw is plain
// coder/websocket, each end reading (as coder/websocket needs, to see
// control frames) and nothing sent.
func runWSIdle(ctx context.Context, cfg config) ([]sample, error) {
	return runIdle(ctx, cfg, "ours-ws", "raw-ws", "raw after the upgrade, each end reading", 1.5)
}

// target is the most ours' HeapInuse per session may be of raw's (issue 14:
// WebTransport 1.1, WebSocket 1.5).
func runIdle(ctx context.Context, cfg config, oursSide, rawSide, rawIs string, target float64) ([]sample, error) {
	ours, err := idleChild(ctx, oursSide, cfg.sessions)
	if err != nil {
		return nil, fmt.Errorf("ours: %w", err)
	}
	raw, err := idleChild(ctx, rawSide, cfg.sessions)
	if err != nil {
		return nil, fmt.Errorf("raw: %w", err)
	}
	note := fmt.Sprintf("%d idle sessions, client and server in one process (a child per side): each figure covers both ends of a session (ours after the handshake, %s); deltas of GC'd runtime.MemStats", cfg.sessions, rawIs)
	n := cfg.sessions
	return []sample{
		{Figure: "idle HeapInuse", Concurrency: n, Unit: "KiB/session", Lower: true, Ours: ours.HeapKB, Raw: raw.HeapKB, HasRaw: true, Target: target, Note: note},
		{Figure: "idle live heap", Concurrency: n, Unit: "KiB/session", Lower: true, Ours: ours.LiveKB, Raw: raw.LiveKB, HasRaw: true},
		{Figure: "idle Sys", Concurrency: n, Unit: "KiB/session", Lower: true, Ours: ours.SysKB, Raw: raw.SysKB, HasRaw: true},
		{Figure: "idle goroutines", Concurrency: n, Unit: "goroutines/session", Lower: true, Ours: ours.Goroutines, Raw: raw.Goroutines, HasRaw: true},
	}, nil
}

// idleChild runs this executable again as an idle child and reads its
// figures.
func idleChild(ctx context.Context, side string, n int) (perSession, error) {
	exe, err := os.Executable()
	if err != nil {
		return perSession{}, err
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), idleChildEnv+"="+side, idleSessionsEnv+"="+strconv.Itoa(n))
	if idleProfile != "" {
		cmd.Env = append(cmd.Env, idleProfileEnv+"="+idleProfile)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return perSession{}, fmt.Errorf("idle child: %w: %s", err, stderr.String())
	}
	var ps perSession
	if err := json.Unmarshal(out, &ps); err != nil {
		return perSession{}, fmt.Errorf("idle child printed %q: %w", out, err)
	}
	return ps, nil
}

// runIdleChild is the child's whole life when idleChildEnv is set: it opens
// the sessions, prints its figures as JSON and reports whether it is a child.
func runIdleChild(stdout io.Writer) (bool, error) {
	side := os.Getenv(idleChildEnv)
	if side == "" {
		return false, nil
	}
	n, err := strconv.Atoi(os.Getenv(idleSessionsEnv))
	if err != nil || n <= 0 {
		return true, fmt.Errorf("%s: want a positive session count", idleSessionsEnv)
	}
	if os.Getenv(idleProfileEnv) != "" {
		// Every allocation recorded, so the heap profile accounts for a
		// session's few KiB exactly rather than in 512 KiB samples.
		runtime.MemProfileRate = 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var ps perSession
	switch side {
	case "ours":
		ps, err = idleOurs(ctx, n, "ours", func(opts tio.ServerOptions) (ourServer, error) { return startOurWT(opts) })
	case "ours-ws":
		ps, err = idleOurs(ctx, n, "ours-ws", func(opts tio.ServerOptions) (ourServer, error) { return startOurWS(opts) })
	case "raw":
		ps, err = idleRaw(ctx, n)
	case "raw-ws":
		ps, err = idleRawWS(ctx, n)
	default:
		err = fmt.Errorf("%s=%q: want ours, ours-ws, raw or raw-ws", idleChildEnv, side)
	}
	if err != nil {
		return true, err
	}
	return true, json.NewEncoder(stdout).Encode(ps)
}

func idleOurs(ctx context.Context, n int, side string, start func(tio.ServerOptions) (ourServer, error)) (perSession, error) {
	var joined atomic.Int64
	before := measureFootprint()
	o, err := start(tio.ServerOptions{OnSession: func(*tio.Peer) { joined.Add(1) }})
	if err != nil {
		return perSession{}, err
	}
	defer o.close()
	clients := make([]*tio.Client, n)
	// The figures are taken with every session open; the sessions then
	// close all at once, so the run does not depend on how long one close
	// takes (§11: a close waits for its handshake with the peer).
	defer func() {
		var wg sync.WaitGroup
		for _, c := range clients {
			if c != nil {
				wg.Go(func() { closeClient(c) })
			}
		}
		wg.Wait()
	}()
	err = parallel(ctx, n, func(ctx context.Context, i int) error {
		c, err := o.dialCounting(ctx, nil)
		clients[i] = c
		return err
	})
	if err != nil {
		return perSession{}, err
	}
	if err := waitCount(ctx, &joined, int64(n)); err != nil {
		return perSession{}, err
	}
	g := growth(before, measureFootprint(), n)
	return g, writeGoroutines(side)
}

// idleProfile is -idle-profile, handed to the idle children.
var idleProfile string

// writeGoroutines writes the goroutine profile (text) and the heap profile
// an idle child was asked for.
func writeGoroutines(side string) error {
	prefix := os.Getenv(idleProfileEnv)
	if prefix == "" {
		return nil
	}
	for _, p := range []struct {
		name, file string
		debug      int
	}{{"goroutine", "-" + side + ".txt", 1}, {"heap", "-" + side + "-heap.pprof", 0}} {
		f, err := os.Create(prefix + p.file)
		if err != nil {
			return err
		}
		err = pprof.Lookup(p.name).WriteTo(f, p.debug)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func idleRaw(ctx context.Context, n int) (perSession, error) {
	var accepted atomic.Int64
	before := measureFootprint()
	r, err := startRawWT(func(*wt.Session) { accepted.Add(1) })
	if err != nil {
		return perSession{}, err
	}
	defer r.close()
	clients := make([]*wt.Session, n)
	defer func() {
		for _, s := range clients {
			if s != nil {
				_ = s.CloseWithError(0, "")
			}
		}
	}()
	err = parallel(ctx, n, func(ctx context.Context, i int) error {
		s, err := r.dial(ctx)
		clients[i] = s
		return err
	})
	if err != nil {
		return perSession{}, err
	}
	if err := waitCount(ctx, &accepted, int64(n)); err != nil {
		return perSession{}, err
	}
	g := growth(before, measureFootprint(), n)
	return g, writeGoroutines("raw")
}

// waitCount waits, bounded, until c reaches n.
func waitCount(ctx context.Context, c *atomic.Int64, n int64) error {
	for c.Load() < n {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d sessions reached the server: %w", c.Load(), n, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

func idleRawWS(ctx context.Context, n int) (perSession, error) {
	var accepted atomic.Int64
	before := measureFootprint()
	addr, hs, err := serveHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := cws.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		accepted.Add(1)
		for {
			if _, _, err := c.Reader(context.Background()); err != nil {
				return
			}
		}
	}))
	if err != nil {
		return perSession{}, err
	}
	defer hs.Close()
	clients := make([]*cws.Conn, n)
	defer func() {
		for _, c := range clients {
			if c != nil {
				_ = c.CloseNow()
			}
		}
	}()
	err = parallel(ctx, n, func(ctx context.Context, i int) error {
		c, _, err := cws.Dial(ctx, "ws://"+addr+"/", nil)
		if err != nil {
			return err
		}
		clients[i] = c
		c.CloseRead(context.Background()) // reads control frames, as the client must
		return nil
	})
	if err != nil {
		return perSession{}, err
	}
	if err := waitCount(ctx, &accepted, int64(n)); err != nil {
		return perSession{}, err
	}
	g := growth(before, measureFootprint(), n)
	return g, writeGoroutines("raw-ws")
}
