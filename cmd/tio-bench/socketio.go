package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// socket.io runs in Node: socketio/server.mjs is the server (started as the
// fan-out server child, peer_server.go) and socketio/driver.mjs the clients,
// with socket.io and socket.io-client pinned in socketio/package-lock.json.
// Both use the WebSocket transport only (no HTTP long-polling first), the
// library's leanest setup.

// socketIOEmitSync is how many emits the driver sends between acknowledged
// ones: socket.io buffers emits without bound, so the acknowledgement is
// the sender's back-pressure.
const socketIOEmitSync = 256

// socketIODir finds the socketio folder from the repository root (go run
// ./cmd/tio-bench) or from this package's folder (go test).
func socketIODir() (string, error) {
	for _, dir := range []string{filepath.Join("cmd", "tio-bench", "socketio"), "socketio"} {
		if _, err := os.Stat(filepath.Join(dir, "server.mjs")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "node_modules", "socket.io")); err != nil {
				return "", fmt.Errorf("socket.io is not installed in %s: run npm ci --prefix %s (make bench-peers does)", dir, dir)
			}
			return dir, nil
		}
	}
	return "", errors.New("socket.io: no socketio/server.mjs here: run tio-bench from the repository root")
}

// socketIODriver is one driver.mjs process.
type socketIODriver struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *json.Decoder
}

// socketIOJob is a driver's job; see driver.mjs.
type socketIOJob struct {
	Mode       string  `json:"mode"`
	URL        string  `json:"url"`
	Members    int     `json:"members,omitempty"`
	Size       int     `json:"size,omitempty"`
	Callers    int     `json:"callers,omitempty"`
	Count      int     `json:"count,omitempty"`
	DurationMS float64 `json:"duration_ms,omitempty"`
	Sync       int     `json:"sync,omitempty"`
	BoundMS    float64 `json:"bound_ms"`
}

// socketIOResult is any of a driver's lines.
type socketIOResult struct {
	Joined    int     `json:"joined"`
	Got       int64   `json:"got"`
	Done      int64   `json:"done"`
	ElapsedMS float64 `json:"elapsed_ms"`
	Counted   int64   `json:"counted"`
	LatUS     []int64 `json:"lat_us"`
	Error     string  `json:"error"`
}

func startSocketIODriver(ctx context.Context, cfg config, job socketIOJob) (*socketIODriver, error) {
	dir, err := socketIODir()
	if err != nil {
		return nil, err
	}
	job.BoundMS = float64(scenarioBound(cfg) / time.Millisecond)
	arg, err := json.Marshal(job)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, cfg.peer.node, filepath.Join(dir, "driver.mjs"), string(arg))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &socketIODriver{cmd: cmd, in: in, out: json.NewDecoder(bufio.NewReader(out))}, nil
}

// next reads the driver's next line.
func (d *socketIODriver) next() (socketIOResult, error) {
	var r socketIOResult
	if err := d.out.Decode(&r); err != nil {
		return r, fmt.Errorf("socket.io driver: %w", err)
	}
	if r.Error != "" {
		return r, fmt.Errorf("socket.io driver: %s", r.Error)
	}
	return r, nil
}

func (d *socketIODriver) close() {
	_ = d.in.Close()
	_ = d.cmd.Wait()
}

// runSocketIOJob starts the socket.io server and one driver job against it,
// and returns the job's result.
func runSocketIOJob(ctx context.Context, cfg config, job socketIOJob) (socketIOResult, error) {
	srv, err := startFanoutServer(ctx, cfg, subSocketIO)
	if err != nil {
		return socketIOResult{}, err
	}
	defer srv.close()
	job.URL = srv.hello.URL
	job.Count, job.DurationMS = cfg.count, float64(cfg.duration/time.Millisecond)
	d, err := startSocketIODriver(ctx, cfg, job)
	if err != nil {
		return socketIOResult{}, err
	}
	defer d.close()
	return d.next()
}

func microseconds(us []int64) latencies {
	out := make(latencies, len(us))
	for i, v := range us {
		out[i] = time.Duration(v) * time.Microsecond
	}
	return out
}

func socketIOCalls(ctx context.Context, cfg config, callers int) (rateResult, error) {
	r, err := runSocketIOJob(ctx, cfg, socketIOJob{Mode: "call", Callers: callers})
	if err != nil {
		return rateResult{}, err
	}
	lat := microseconds(r.LatUS)
	return rateResult{perSec: perSecond(r.Done, time.Duration(r.ElapsedMS*float64(time.Millisecond))), p50: lat.percentile(0.50), p99: lat.percentile(0.99)}, nil
}

func socketIOEmit(ctx context.Context, cfg config, payload []byte) (float64, error) {
	r, err := runSocketIOJob(ctx, cfg, socketIOJob{Mode: "emit", Size: len(payload), Sync: socketIOEmitSync})
	if err != nil {
		return 0, err
	}
	if r.Counted != r.Done {
		return 0, fmt.Errorf("socket.io server counted %d emits of %d", r.Counted, r.Done)
	}
	return perSecond(r.Done, time.Duration(r.ElapsedMS*float64(time.Millisecond))), nil
}

func socketIOSetups(ctx context.Context, cfg config) (float64, error) {
	r, err := runSocketIOJob(ctx, cfg, socketIOJob{Mode: "setup"})
	if err != nil {
		return 0, err
	}
	if r.Done == 0 {
		return 0, errNoSetup
	}
	return perSecond(r.Done, time.Duration(r.ElapsedMS*float64(time.Millisecond))), nil
}

// socketIOAudience is the fan-out's members in one driver process.
type socketIOAudience struct{ d *socketIODriver }

func joinSocketIOAudience(ctx context.Context, cfg config, hello childHello, members int) (fanoutAudience, error) {
	d, err := startSocketIODriver(ctx, cfg, socketIOJob{Mode: "fanout", URL: hello.URL, Members: members, Size: cfg.peer.size})
	if err != nil {
		return nil, err
	}
	r, err := d.next()
	if err != nil {
		d.close()
		return nil, err
	}
	if r.Joined != members {
		d.close()
		return nil, fmt.Errorf("socket.io driver joined %d of %d members", r.Joined, members)
	}
	return socketIOAudience{d: d}, nil
}

func (a socketIOAudience) await(_ context.Context, more int64) (latencies, error) {
	if err := json.NewEncoder(a.d.in).Encode(map[string]int64{"more": more}); err != nil {
		return nil, err
	}
	r, err := a.d.next()
	if err != nil {
		return nil, err
	}
	return microseconds(r.LatUS), nil
}

func (a socketIOAudience) close() { a.d.close() }
