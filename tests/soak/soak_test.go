// Package soak runs the server under a mixed, churning load with a few
// hostile peers over both mappings on 127.0.0.1, and checks that memory
// stays bounded and every goroutine ends. TIO_SOAK sets the duration (2m
// by default, as make test runs it; make soak runs 30m), TIO_SOAK_SESSIONS
// the sessions held at once (24 by default; make soak SESSIONS=500);
// TIO_SOAK_PROFILE_DIR, when set, receives a heap profile each minute and
// every sample as CSV.
package soak

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/transport-io/tiogen/internal/leakcheck"
	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
	"github.com/transport-io/tiogen/runtime/wire"
)

func TestMain(m *testing.M) { leakcheck.Main(m, 10*time.Second) }

var contract = tio.MustContract("soak",
	tio.Event{Name: "echo", Lane: wire.Reliable, Kind: tio.Returns, Payload: wire.CodecBytes, Result: wire.CodecBytes},
	tio.Event{Name: "count", Lane: wire.Reliable, Kind: tio.Yields, Payload: wire.CodecBytes, Result: wire.CodecBytes},
	tio.Event{Name: "say", Lane: wire.Reliable, From: tio.FromClient, Kind: tio.Emit, Payload: wire.CodecBytes},
	tio.Event{Name: "said", Lane: wire.Reliable, From: tio.FromServer, Kind: tio.Emit, Payload: wire.CodecBytes},
	tio.Event{Name: "pos", Lane: wire.Unreliable, Kind: tio.Emit, Payload: wire.CodecBytes, Fallback: tio.Newest},
)

var (
	evEcho  = wire.EventID("echo")
	evCount = wire.EventID("count")
	evSay   = wire.EventID("say")
	evSaid  = wire.EventID("said")
	evPos   = wire.EventID("pos")
)

// sample is one reading of the process.
type sample struct {
	at   time.Duration
	heap uint64 // live heap after a GC
	// kept is heap less what was allocated while the second collection
	// ran: an allocation made during a collection counts as live until the
	// next, so under load heap holds the buffers in flight then, and kept
	// is what was there before the collection and survived it.
	kept uint64
	// free is heap memory the runtime holds free, not yet returned to the
	// system (part of rss); stacks is the goroutine stacks' memory.
	free, stacks uint64
	rss          uint64
	goroutines   int
	cpu          time.Duration // the process's CPU time so far, user and system
}

func read(began time.Time) sample {
	// Two collections: the first moves sync.Pool contents (the engine's
	// 64 KiB write buffers among them) to the pools' victim caches, where
	// they are still live; the second frees them.
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	allocated := ms.TotalAlloc
	runtime.GC()
	runtime.ReadMemStats(&ms)
	during := ms.TotalAlloc - allocated
	return sample{at: time.Since(began), heap: ms.HeapAlloc, kept: ms.HeapAlloc - min(during, ms.HeapAlloc),
		free: ms.HeapIdle - ms.HeapReleased, stacks: ms.StackInuse, rss: rss(), goroutines: runtime.NumGoroutine(), cpu: cpuTime()}
}

// grownPer reads the process again until the live heap has grown less than
// bound bytes per each of n operations since before and the goroutines are
// back, or 10 s have passed: what the last operations leave in flight (a
// datagram relayed last, a goroutine returning, a closed QUIC connection
// held for its closing period) is a fixed residue that decays, where state
// kept per operation grows with them and stays.
func grownPer(before sample, n int, bound float64) (after sample, per float64) {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		after = read(time.Now())
		per = (float64(after.heap) - float64(before.heap)) / float64(n)
		if (after.goroutines <= before.goroutines && per < bound) || time.Now().After(deadline) {
			return after, per
		}
	}
}

// cpuTime is the process's user and system time from /proc/self/stat (in
// clock ticks, 100 a second on Linux); 0 where there is none.
func cpuTime() time.Duration {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	// The fields after the command, which is in parentheses and may hold
	// spaces: utime and stime are the 12th and 13th.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// rss is the resident set from /proc/self/statm; 0 where there is none.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

// slope is the least-squares slope of y over x, per hour, and its
// standard error (from the residuals' spread about the line): how far the
// samples' spread alone moves the slope.
func slope(ss []sample, y func(sample) float64) (perHour, stderr float64) {
	var n, sx, sy, sxx, sxy float64
	for _, s := range ss {
		x := s.at.Hours()
		n++
		sx += x
		sy += y(s)
		sxx += x * x
		sxy += x * y(s)
	}
	perHour = (n*sxy - sx*sy) / (n*sxx - sx*sx)
	at := (sy - perHour*sx) / n
	var squares float64
	for _, s := range ss {
		r := y(s) - at - perHour*s.at.Hours()
		squares += r * r
	}
	return perHour, math.Sqrt(squares / (n - 2) / (sxx - sx*sx/n))
}

// The soak: sessions on both mappings emit into their room (every member
// receives every broadcast), make returns and yields calls, send
// datagrams, and reconnect every few seconds; hostile peers send garbage
// or stop reading. The traffic is the same whatever the number of
// sessions (load): rooms of 24 members, and each session's iterations and
// life slowed by sessions/24, so 500 sessions make the traffic and the
// session setups of 24, spread over 500 live sessions. After a warm-up,
// the live heap after GC must not grow
// by more than 2 MB per hour of slope plus a fixed noise allowance, and
// the goroutines must stay bounded during and return to the baseline
// after. Every session but the hostile ones must end WT_NO_ERROR.
func TestSoakMixedLoadWithChurnAndHostilePeers(t *testing.T) {
	duration := 2 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("TIO_SOAK")); err == nil && d > 0 {
		duration = d
	}
	ld := newLoad(os.Getenv("TIO_SOAK_SESSIONS"))
	t.Logf("%d sessions at once, in rooms of %d; an iteration every %v, sessions living %v to %v", ld.sessions, roomSize, ld.pace, ld.life, 3*ld.life)
	leakcheck.Check(t, 10*time.Second)
	idle := runtime.NumGoroutine()
	cert, err := devcert.Mint(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler) // the hostile peers' ends are logged at Info
	srv, err := newRoomServer(quiet)
	if err != nil {
		t.Fatal(err)
	}
	l, err := endpoint.Listen(srv, endpoint.Options{Addr: "127.0.0.1:0", Path: "/soak", Dev: cert, Logger: quiet, Authorize: roomOfQuery})
	if err != nil {
		t.Fatal(err)
	}
	pin := endpoint.DialOptions{CertHashes: [][32]byte{cert.SHA256}}
	began := time.Now()
	// The runtime keeps every goroutine descriptor it ever made, on the
	// heap: make as many as the load runs at its peak (about 21 a session)
	// before the baseline, so the heap after every session ended shows what
	// the sessions left rather than the runtime's high-water mark.
	parkGoroutines(25*ld.sessions + 100)
	baseline := read(began)
	last := baseline
	ctx, stop := context.WithTimeout(context.Background(), duration)
	defer stop()

	var ops, failures, hostile atomic.Int64
	var firstFailure atomic.Value
	fail := func(err error) {
		if failures.Add(1) == 1 {
			firstFailure.Store(err)
		}
	}
	var wg sync.WaitGroup
	workers := ld.sessions
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			room := "?room=r" + strconv.Itoa(w/roomSize)
			time.Sleep(time.Duration(w) * ld.ramp)
			for ctx.Err() == nil {
				if err := session(ctx, r, w%2 == 0, l, room, pin, ld, &ops); err != nil && ctx.Err() == nil {
					fail(err)
					return
				}
			}
		})
	}
	// Hostile peers, one every second: garbage on the emit stream, or a
	// peer in the room that never reads.
	wg.Go(func() {
		tlsConf := webtransport.PinnedTLSConfig([][32]byte{cert.SHA256}, nil)
		for i := 0; ctx.Err() == nil; i++ {
			if err := hostilePeer(ctx, l.WebSocketURL()+"?room=r0", tlsConf, i%2 == 0); err != nil && ctx.Err() == nil {
				fail(fmt.Errorf("hostile peer: %w", err))
				return
			}
			hostile.Add(1)
		}
	})

	// Sampled every 10 s (more often in a short run), so the least-squares
	// slope rests on many samples rather than on the spread of a few;
	// logged each minute. TIO_SOAK_PROFILE_DIR, when set, gets a heap
	// profile at each logged sample (after the sample's two collections),
	// for go tool pprof -base early late.
	every := min(duration/24, 10*time.Second)
	logEvery := max(1, int(time.Minute/every))
	profiles := os.Getenv("TIO_SOAK_PROFILE_DIR")
	if profiles != "" {
		if err := os.MkdirAll(profiles, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var samples []sample
	tick := time.NewTicker(every)
	for done := false; !done; {
		select {
		case <-tick.C:
			s := read(began)
			samples = append(samples, s)
			if len(samples)%logEvery != 0 {
				continue
			}
			if profiles != "" {
				writeHeapProfile(t, filepath.Join(profiles, fmt.Sprintf("heap-%05.0fs.pprof", s.at.Seconds())))
			}
			t.Logf("%6.0fs heap %6.1f MB (kept %6.1f) rss %6.1f MB (free heap %6.1f) goroutines %5d cpu %3.0f%% ops %d hostile %d", s.at.Seconds(), float64(s.heap)/1e6, float64(s.kept)/1e6, float64(s.rss)/1e6, float64(s.free)/1e6, s.goroutines,
				100*(s.cpu-last.cpu).Seconds()/(s.at-last.at).Seconds(), ops.Load(), hostile.Load())
			last = s
		case <-ctx.Done():
			done = true
		}
	}
	tick.Stop()
	// The first quarter is warm-up (pools, buffers, the scheduler's own).
	steady := samples[len(samples)/4:]
	asFloat := func(y func(sample) uint64) func(sample) float64 {
		return func(s sample) float64 { return float64(y(s)) }
	}
	heapSlope, heapErr := slope(steady, asFloat(func(s sample) uint64 { return s.heap }))
	rssSlope, rssErr := slope(steady, asFloat(func(s sample) uint64 { return s.rss }))
	perHour := func(y func(sample) uint64) string {
		b, e := slope(steady, asFloat(y))
		return fmt.Sprintf("%.1f ± %.1f", b/1e6, e/1e6)
	}
	t.Logf("under load after warm-up, %d samples %v apart: least-squares slopes ± their standard error, MB/hour: RSS %.1f ± %.1f, RSS less free heap %s, heap %.1f ± %.1f, kept heap %s, stacks %s",
		len(steady), every, rssSlope/1e6, rssErr/1e6, perHour(func(s sample) uint64 { return s.rss - s.free }), heapSlope/1e6, heapErr/1e6,
		perHour(func(s sample) uint64 { return s.kept }), perHour(func(s sample) uint64 { return s.stacks }))
	if profiles != "" {
		writeSamples(t, filepath.Join(profiles, "samples.csv"), samples)
	}
	wg.Wait()
	// Shut down before judging, so a failed run's goroutines end too and
	// the leak check reports only real leaks.
	shut, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.Shutdown(shut); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d failures, the first: %v", n, firstFailure.Load())
	}
	if ops.Load() == 0 || hostile.Load() == 0 {
		t.Fatalf("no load ran: %d operations, %d hostile peers", ops.Load(), hostile.Load())
	}

	// What is allowed to stay: 2 MB per hour, plus 4 MB of noise.
	allowed := 2e6*duration.Hours() + 4e6
	// A closing QUIC connection's goroutines end shortly after its
	// session, and quic-go keeps a closed connection's IDs and last packet
	// for three PTOs (seconds on a starved host): the heap is given 30 s
	// to come back to within the allowance of its start. A leak never does.
	ended := time.Now()
	var after sample
	for {
		after = read(began)
		back := runtime.NumGoroutine() <= idle && float64(after.heap)-float64(baseline.heap) <= allowed
		if back || time.Since(ended) > 30*time.Second {
			break
		}
		time.Sleep(time.Second)
	}
	settled := time.Since(ended)

	maxG := 0
	for _, s := range samples {
		maxG = max(maxG, s.goroutines)
	}
	t.Logf("after warm-up: heap slope %.1f MB/hour, RSS slope %.1f MB/hour, goroutines at most %d (baseline %d, after %d); heap before %.1f MB, after %.1f MB (%v after the end); %d operations, %d hostile peers",
		heapSlope/1e6, rssSlope/1e6, maxG, baseline.goroutines, after.goroutines, float64(baseline.heap)/1e6, float64(after.heap)/1e6, settled.Round(time.Second), ops.Load(), hostile.Load())
	// Under load 4 MB more for every 24 sessions past the first: a GC'd
	// heap under load still holds the buffers in flight, which grow with
	// the sessions.
	allowedUnderLoad := allowed + 4e6*(max(1, float64(ld.sessions)/roomSize)-1)
	// The live heap under load, as the median of a window (robust to the
	// buffers in flight at one sample): the last quarter against the
	// second.
	early, late := median(steady[:len(steady)/3]), median(steady[len(steady)*2/3:])
	if grew := float64(late) - float64(early); grew > allowedUnderLoad {
		t.Errorf("the live heap under load grew %.1f MB (median %.1f to %.1f MB), more than %.1f MB", grew/1e6, float64(early)/1e6, float64(late)/1e6, allowedUnderLoad/1e6)
	}
	// Once every session ended, what the churned sessions left behind.
	if grew := float64(after.heap) - float64(baseline.heap); grew > allowed {
		t.Errorf("%v after every session ended the heap is %.1f MB above its start, more than %.1f MB", settled.Round(time.Second), grew/1e6, allowed/1e6)
	}
	// A slope means something over a long run only (make soak).
	if duration >= 20*time.Minute && rssSlope > 2e6 {
		t.Errorf("RSS slope %.1f MB/hour after warm-up, want under 2 MB/hour", rssSlope/1e6)
	}
	if limit := baseline.goroutines + workers*40; maxG > limit {
		t.Errorf("%d goroutines at a sample, more than %d for %d sessions", maxG, limit, workers)
	}
}

// writeHeapProfile writes the heap profile as of the last collection to
// path; a failure is reported and the soak goes on.
func writeHeapProfile(t *testing.T, path string) {
	f, err := os.Create(path)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Error(err)
	}
}

// writeSamples writes every sample to path as CSV, sizes in bytes.
func writeSamples(t *testing.T, path string, ss []sample) {
	var b strings.Builder
	b.WriteString("seconds,heap,kept,free,stacks,rss,goroutines,cpu_seconds\n")
	for _, s := range ss {
		fmt.Fprintf(&b, "%.1f,%d,%d,%d,%d,%d,%d,%.2f\n", s.at.Seconds(), s.heap, s.kept, s.free, s.stacks, s.rss, s.goroutines, s.cpu.Seconds())
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Error(err)
	}
}

// newRoomServer is the soak's server: each session joins the room its URL's
// query names (roomOfQuery), a say is broadcast to the sender's room as
// said, a pos datagram is relayed to it, echo returns its request and
// count yields it 20 times.
func newRoomServer(logger *slog.Logger) (*tio.Server, error) {
	srv, err := tio.NewServer(contract, tio.ServerOptions{Logger: logger, OnSession: func(p *tio.Peer) {
		if room, _ := p.Data().(string); room != "" {
			_ = p.Join(room)
		}
	}})
	if err != nil {
		return nil, err
	}
	srv.HandleCall(evEcho, func(_ context.Context, _ *tio.Peer, req []byte) ([]byte, error) { return req, nil })
	srv.HandleStream(evCount, func(_ context.Context, _ *tio.Peer, req []byte, send func([]byte) error) error {
		for range 20 {
			if err := send(req); err != nil {
				return err
			}
		}
		return nil
	})
	srv.HandleEmit(evSay, func(ctx context.Context, p *tio.Peer, b []byte) error {
		return p.Broadcast(ctx, p.Data().(string), evSaid, b)
	})
	srv.HandleEmit(evPos, func(ctx context.Context, p *tio.Peer, b []byte) error {
		return p.BroadcastDatagram(ctx, p.Data().(string), evPos, b)
	})
	return srv, nil
}

// roomOfQuery authorizes a session into the room of its URL's query.
func roomOfQuery(_ context.Context, r *transport.Request) (any, error) {
	return r.Query.Get("room"), nil
}

// iterate is one iteration of a session's load, the i-th: an emit its room
// receives, a datagram relayed to its room, and over WebTransport a returns
// call and, every fifth iteration, a 20-element yields call.
func iterate(ctx context.Context, c *tio.Client, overWT bool, i int, payload []byte) error {
	if err := c.Emit(evSay, payload); err != nil {
		return fmt.Errorf("emit: %w", err)
	}
	if err := c.SendDatagram(evPos, payload[:32]); err != nil {
		return fmt.Errorf("datagram: %w", err)
	}
	if overWT {
		if _, err := c.Call(ctx, evEcho, payload); err != nil && ctx.Err() == nil {
			return fmt.Errorf("call: %w", err)
		}
		if i%5 == 0 {
			for _, err := range c.Stream(ctx, evCount, payload[:8]) {
				if err != nil && ctx.Err() == nil {
					return fmt.Errorf("stream: %w", err)
				}
			}
		}
	}
	return nil
}

// parkGoroutines starts n goroutines that wait together, then ends them.
func parkGoroutines(n int) {
	var started, done sync.WaitGroup
	release := make(chan struct{})
	for range n {
		started.Add(1)
		done.Go(func() { started.Done(); <-release })
	}
	started.Wait()
	close(release)
	done.Wait()
}

// median is the median live heap of ss.
func median(ss []sample) uint64 {
	hs := make([]uint64, len(ss))
	for i, s := range ss {
		hs[i] = s.heap
	}
	slices.Sort(hs)
	return hs[len(hs)/2]
}

// roomSize is the members of a room: a broadcast's fan-out, whatever the
// number of sessions.
const roomSize = 24

// load is how hard the soak drives the server: sessions held at once, each
// iterating every pace and living life to 3×life. 24 sessions iterate
// every 100 ms and live 2–6 s; more sessions are slowed in proportion, so
// the iterations and session setups a second stay those of 24 sessions
// (about 240 and 6) while the live sessions, rooms and their memory grow.
// More than 24 sessions also ramp up over one life, rather than all dial
// at once.
type load struct {
	sessions         int
	pace, life, ramp time.Duration
}

func newLoad(sessions string) load {
	n, err := strconv.Atoi(sessions)
	if err != nil || n < 1 {
		n = roomSize
	}
	slow := max(1, float64(n)/roomSize)
	ld := load{sessions: n, pace: time.Duration(slow * float64(100*time.Millisecond)), life: time.Duration(slow * float64(2*time.Second))}
	if n > roomSize {
		ld.ramp = ld.life / time.Duration(n)
	}
	return ld
}

// session runs one client session in the room of the query for a while of
// mixed load, then closes it WT_NO_ERROR and checks that it ended so. Its
// first iteration waits a random part of pace, so sessions do not iterate
// in step.
func session(ctx context.Context, r *rand.Rand, overWT bool, l *endpoint.Listener, room string, pin endpoint.DialOptions, ld load, ops *atomic.Int64) error {
	var c *tio.Client
	var err error
	if overWT {
		c, err = endpoint.Dial(ctx, l.URL()+room, contract, pin)
	} else {
		c, err = endpoint.DialWebSocket(ctx, l.WebSocketURL()+room, contract, pin)
	}
	if err != nil {
		return err
	}
	c.On(evSaid, func([]byte) error { return nil })
	c.On(evPos, func([]byte) error { return nil })
	until := time.Now().Add(ld.life + time.Duration(r.Int64N(int64(2*ld.life))))
	time.Sleep(time.Duration(r.Int64N(int64(ld.pace))))
	payload := make([]byte, 64+r.IntN(512))
	for i := 0; time.Now().Before(until) && ctx.Err() == nil; i++ {
		if err := iterate(ctx, c, overWT, i, payload); err != nil {
			return err
		}
		ops.Add(1)
		time.Sleep(ld.pace)
	}
	if err := c.Close(tio.NoError, "churn"); err != nil {
		return err
	}
	var end *tio.SessionEnd
	if err := c.Wait(); !errors.As(err, &end) || !end.Normal() {
		if end != nil && end.ByPeer && end.Reason == transport.ShutdownReason {
			return nil
		}
		return fmt.Errorf("a well-behaved session ended %v", err)
	}
	return nil
}

// hostilePeer opens a WebSocket session and either sends a garbage frame
// after its handshake, which the server must close WT_PROTOCOL_ERROR, or
// sends nothing at all, which the server must close WT_HANDSHAKE_TIMEOUT
// (§4.1); it waits for the close.
func hostilePeer(ctx context.Context, url string, tlsConf *tls.Config, garbage bool) error {
	conn, err := websocket.Dial(ctx, url, websocket.DialOptions{TLSConfig: tlsConf})
	if err != nil {
		return err
	}
	want := wire.CloseHandshakeTimeout
	if garbage {
		want = wire.CloseProtocolError
		st, err := conn.OpenEmit(ctx)
		if err != nil {
			return err
		}
		hs, _ := wire.AppendFrame(nil, wire.FrameHandshake, wire.CodecJSON, 0,
			wire.AppendHandshake(nil, wire.Handshake{V: wire.ProtocolVersion, Events: contract.Table()}))
		junk := make([]byte, 64)
		for i := range junk {
			junk[i] = byte(rand.IntN(256))
		}
		junk[4] = 0x7f // a frame type no version defines
		_, _ = st.Write(append(hs, junk...))
	}
	// The peer reads, as an engine does: the mapping hears the server's
	// close only through reads.
	if rs, err := conn.AcceptEmit(ctx); err == nil {
		go func() { _, _ = io.Copy(io.Discard, rs) }()
	}
	select {
	case <-conn.Done():
	case <-ctx.Done():
		_ = conn.Close(wire.CloseNoError, "")
		<-conn.Released()
		return nil
	}
	<-conn.Released()
	if info := conn.CloseInfo(); info.Code != want || !info.Remote {
		if info.Remote && info.Reason == transport.ShutdownReason {
			return nil
		}
		return fmt.Errorf("closed %+v, want code %d from the server", info, want)
	}
	return nil
}
