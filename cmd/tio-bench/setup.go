package main

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/runtime/tio"
)

// runWTSetup is peer-setup's WebTransport pair measured in one process,
// one raw cycle and one tiogen cycle after the other, so both share
// whatever the host does meanwhile: the cycle is what peer-setup times
// (raw: CONNECT, then CloseWithError; tiogen: Dial, the §4 handshake, a
// Close confirmed by the server, Wait), and the CPU of a session is the
// process's, both ends, from the dial until the server's side of it ended.
func runWTSetup(ctx context.Context, cfg config) ([]sample, error) {
	var oursEnded, rawEnded atomic.Int64
	o, err := startOurWT(tio.ServerOptions{OnSessionEnd: func(*tio.Peer, error) { oursEnded.Add(1) }})
	if err != nil {
		return nil, err
	}
	defer o.close()
	r, err := startRawWT(func(sess *wt.Session) {
		<-sess.Context().Done()
		rawEnded.Add(1)
	})
	if err != nil {
		return nil, err
	}
	defer r.close()
	ctx, cancel := measureCtx(ctx, cfg)
	defer cancel()

	var oursCycles, rawCycles []time.Duration
	var oursCPU, rawCPU time.Duration
	for deadline := time.Now().Add(cfg.duration); len(oursCycles) < cfg.count && time.Now().Before(deadline); {
		cycle, used, err := setupCycle(&rawEnded, func() error {
			sess, err := r.dial(ctx)
			if err != nil {
				return err
			}
			return sess.CloseWithError(0, "")
		})
		if err != nil {
			return nil, fmt.Errorf("raw: %w", err)
		}
		rawCycles, rawCPU = append(rawCycles, cycle), rawCPU+used
		cycle, used, err = setupCycle(&oursEnded, func() error {
			c, err := o.dial(ctx)
			if err != nil {
				return err
			}
			closeClient(c)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("ours: %w", err)
		}
		oursCycles, oursCPU = append(oursCycles, cycle), oursCPU+used
	}
	n := len(oursCycles)
	if n == 0 {
		return nil, errNoSetup
	}
	note := fmt.Sprintf("%d cycles of each, interleaved in one process; cycle: raw CONNECT + CloseWithError, ours Dial + §4 handshake + Close (confirmed by the server, §11) + Wait; CPU: the process's user+system time from the dial until the server's side ended, both ends", n)
	return []sample{
		{Figure: "interleaved setup (median cycle)", Unit: "sessions/s", Ours: 1 / medianDuration(oursCycles).Seconds(), Raw: 1 / medianDuration(rawCycles).Seconds(), HasRaw: true, Target: 0.95, Note: note},
		{Figure: "setup CPU per session", Unit: "ms", Lower: true, Ours: msPer(oursCPU, n), Raw: msPer(rawCPU, n), HasRaw: true},
	}, nil
}

// setupCycle runs one cycle and reports its wall time and the process CPU
// it took, waiting (outside the wall time, at most a second) until ended
// counts the server's side of it.
func setupCycle(ended *atomic.Int64, cycle func() error) (time.Duration, time.Duration, error) {
	before := ended.Load()
	cpu0 := processCPU()
	start := time.Now()
	if err := cycle(); err != nil {
		return 0, 0, err
	}
	took := time.Since(start)
	for limit := time.Now().Add(time.Second); ended.Load() <= before && time.Now().Before(limit); {
		time.Sleep(50 * time.Microsecond)
	}
	return took, processCPU() - cpu0, nil
}

// processCPU is the user and system time this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func medianDuration(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func msPer(d time.Duration, n int) float64 {
	return float64(d) / float64(time.Millisecond) / float64(n)
}
