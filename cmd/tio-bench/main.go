// Command tio-bench is the load harness for whole-system figures: each
// scenario measures the engine (runtime/tio over our transports) and, in the
// same run, the raw transport carrying the same payload bytes, and reports
// the ratio ours/raw. It prints one JSON object per figure on stdout and a
// table on stderr. Every loop is bounded by a count and a duration, and all
// traffic stays on 127.0.0.1. The peer scenarios measure, in the same run,
// tiogen over both mappings, the raw transports, centrifuge and (with Node)
// socket.io; the loss-lane scenario runs between two network namespaces of
// its own (root).
//
//	go run ./cmd/tio-bench -scenario all
//	go run ./cmd/tio-bench -scenario wt-emit -sizes 64,1024 -duration 1s -runs 3
//	go run ./cmd/tio-bench -scenario peers
//	go run ./cmd/tio-bench -scenario loss-lane -duration 10s -loss-svg docs/loss-lane.svg
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/transport-io/tiogen/runtime/tio"
)

// config bounds every scenario.
type config struct {
	sizes         []int         // emit payload sizes in bytes
	callers       []int         // wt-call: concurrent callers of each measurement
	slice         time.Duration // wt-call: ours and raw alternate in slices this long (0: one window each)
	duration      time.Duration // time bound of one measurement
	count         int           // message/call/element bound of one measurement
	runs          int           // repetitions; figures are medians
	run           int           // which repetition this is, from 0
	sessions      int           // sessions for the idle and broadcast scenarios
	batch         int           // frames per Write in the raw programs
	window        int           // -pace window: frames in flight end to end
	dgramRate     int           // datagrams/s of the paced datagram figures
	pace          string        // how an emitting sender paces: paceWait or paceWindow
	broadcastRate int           // broadcasts/s of the paced broadcast figures
	realtime      bool          // nats-broadcast: latency figures at real-time priority
	peer          peerConfig    // the peer scenarios' bounds and subjects
}

// The two ways an emit sender paces itself (-pace).
const (
	paceWait   = "wait"
	paceWindow = "window"
)

func (c config) paceNote() string {
	if c.pace == paceWindow {
		return fmt.Sprintf("at most %d frames in flight end to end", c.window)
	}
	return fmt.Sprintf("Client.WaitEmit every 16 emits (queue at most %d frames)", tio.EmitLowWater)
}

// scenario measures one group of figures once.
type scenario struct {
	name string
	what string
	run  func(ctx context.Context, cfg config) ([]sample, error)
}

var scenarios = []scenario{
	{"wt-emit", "WebTransport emit throughput vs a raw uni stream", runWTEmit},
	{"wt-call", "returns calls: round trips/s, p50/p99 vs raw bidi stream per request", runWTCall},
	{"wt-stream", "yields elements/s through the credit window vs a raw stream", runWTStream},
	{"wt-datagram", "datagrams sent and received per second vs raw SendDatagram", runWTDatagram},
	{"wt-idle", "memory and goroutines per idle session vs raw webtransport-go", runWTIdle},
	{"wt-setup", "sequential session setup interleaved with raw webtransport-go in one process: cycle and CPU per session", runWTSetup},
	{"ws-idle", "memory and goroutines per idle WebSocket session vs raw coder/websocket", runWSIdle},
	{"ws-emit", "WebSocket mapping emit throughput vs plain coder/websocket", runWSEmit},
	{"ws-broadcast", "room broadcast to many WebSocket sessions: deliveries/s, p99", runWSBroadcast},
	{"nats-broadcast", "cross-host broadcasts through the NATS adapter vs raw nats.go: p50/p99 at 10k/s, deliveries/s, host start, reconnect", runNATSBroadcast},
}

func main() {
	spinIfWakeful()
	if child, err := runPeerServerChild(os.Stdin, os.Stdout); child {
		if err != nil {
			fmt.Fprintln(os.Stderr, "tio-bench peer server child:", err)
			os.Exit(1)
		}
		return
	}
	if child, err := runLossChild(os.Stdout); child {
		if err != nil {
			fmt.Fprintln(os.Stderr, "tio-bench loss child:", err)
			os.Exit(1)
		}
		return
	}
	if child, err := runIdleChild(os.Stdout); child {
		if err != nil {
			fmt.Fprintln(os.Stderr, "tio-bench idle child:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "tio-bench:", err)
		os.Exit(1)
	}
}

// writeHeapProfile writes the allocations so far (go tool pprof
// -sample_index=alloc_objects) to file.
func writeHeapProfile(file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	err = pprof.Lookup("allocs").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func run(args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("tio-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var names []string
	for _, s := range scenarios {
		names = append(names, s.name)
	}
	var peerNames []string
	for _, s := range peerScenarios {
		peerNames = append(peerNames, s.name)
	}
	which := fs.String("scenario", "all", "scenario to run: all (the tiogen/raw ones), peers (the comparison with the peers), or one or more (comma-separated) of "+strings.Join(append(append(names, peerNames...), lossScenario.name), ", "))
	sizes := fs.String("sizes", "64,1024", "emit payload sizes in bytes, comma-separated")
	callers := fs.String("callers", "1,64", "wt-call: concurrent callers of each measurement, comma-separated")
	cfg := config{}
	fs.DurationVar(&cfg.duration, "duration", time.Second, "time bound of one measurement")
	fs.DurationVar(&cfg.slice, "slice", 0, "wt-call: cut each -duration into slices this long that alternate between ours and raw, so that a host whose load drifts weighs on both alike (0: one window each, raw first on every other run)")
	fs.IntVar(&cfg.count, "count", 2_000_000, "count bound of one measurement (messages, calls, elements, datagrams)")
	fs.IntVar(&cfg.runs, "runs", 3, "repetitions of each scenario; figures are the medians")
	fs.IntVar(&cfg.sessions, "sessions", 1000, "sessions for wt-idle and ws-broadcast")
	fs.IntVar(&cfg.batch, "batch", 64, "frames per Write in the raw programs")
	fs.IntVar(&cfg.window, "window", 192, "-pace window: emit frames in flight end to end")
	fs.StringVar(&cfg.pace, "pace", paceWait, "emit sender pacing: wait (Client.WaitEmit, the engine's back-pressure) or window (at most -window frames in flight end to end)")
	fs.IntVar(&cfg.broadcastRate, "broadcast-rate", 50, "broadcasts per second of the paced broadcast figures")
	fs.IntVar(&cfg.dgramRate, "dgram-rate", 20000, "datagrams per second of the paced datagram figures")
	fs.StringVar(&idleProfile, "idle-profile", "", "wt-idle: file prefix for the children's goroutine and heap profiles with every session open (<prefix>-ours.txt, <prefix>-ours-heap.pprof, and -raw)")
	fs.IntVar(&cfg.peer.members, "members", 500, "peer-fanout: members of the broadcast")
	fs.IntVar(&cfg.peer.membersLarge, "members-large", 2000, "peer-fanout-large: members of the broadcast")
	fs.IntVar(&cfg.peer.broadcasts, "broadcasts", 200, "peer-fanout*: broadcasts per round (burst and paced)")
	fs.IntVar(&cfg.peer.size, "broadcast-size", 100, "peer-fanout*: payload bytes of a broadcast")
	fs.DurationVar(&cfg.peer.pacedEvery, "paced-every", 10*time.Millisecond, "peer-fanout*: interval between broadcasts of the paced round")
	fs.DurationVar(&cfg.peer.flushDelay, "flush-delay", 0, "peer-fanout*: the tiogen servers' Options.EmitFlushDelay (0: write at once, the default)")
	fs.StringVar(&cfg.peer.serverProfile, "server-cpuprofile", "", "peer-fanout*: file prefix for CPU profiles of each server child's rounds (<prefix>-<subject>-burst-<pid>.pprof and -paced-<pid>.pprof, one pair per run; with -paced-rounds, -paced-<pid>-<k>.pprof for round k from 2)")
	fs.StringVar(&cfg.peer.membersProfile, "members-cpuprofile", "", "peer-fanout*: file prefix for CPU profiles of the members' process (this one, Go subjects only) over each round (<prefix>-<subject>-burst-<n>.pprof and -paced-<n>.pprof, n counting the subjects measured; with -paced-rounds, -paced-<n>-<k>.pprof for its round k from 2); not with -cpuprofile")
	fs.IntVar(&cfg.peer.pacedRounds, "paced-rounds", 1, "peer-fanout*: paced rounds per subject and run; above 1, every subject's server and members are set up (each running its burst round) and stay up, and the paced rounds go in turn over the subjects, the order rotated each time, so that a drifting host load weighs on all alike; a subject's paced figures are over all its rounds (latencies pooled), and a figure more gives the median of its rounds' p99, which one round's host episode does not set (each round's p99 is printed on stderr)")
	peers := fs.String("peers", "all", "peer scenarios: all, or the subjects to measure (comma-separated) of "+strings.Join(subjectOrder, ", ")+"; peer-fanout also takes the crossed subjects, which \"all\" leaves out: \""+subTioWTLean+"\" (tiogen WT's server, raw WT's members speaking the §4 handshake) and \""+subRawWTTio+"\" (raw WT's server opening each stream with a §4 handshake, tiogen WT's members)")
	lossSVG := fs.String("loss-svg", "", "loss-lane: write a chart of its figures to this SVG file")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	traceFile := fs.String("trace", "", "write an execution trace of the whole run to this file (go tool trace); wt-call marks each measurement with a region named after its subject and callers")
	memprofile := fs.String("memprofile", "", "write a heap profile of the whole run, every allocation sampled, to this file (the allocation figures then include the profiler's own cost)")
	fs.BoolVar(&cfg.realtime, "realtime", false, "nats-broadcast: measure the latency figures (host start, paced broadcasts, reconnect) with the whole process at real-time priority (SCHED_RR 1; root or CAP_SYS_NICE) and every core kept awake by a SCHED_IDLE spinner, ours and raw alike, the saturated ones at normal priority; without the privilege it says so and measures at normal priority")
	check := fs.Bool("check", false, "exit non-zero when a figure misses its target (the median ratio over -runs) or its bound (the median)")
	attempts := fs.Int("attempts", 1, "with -check: measure again, up to this many times in all, while every miss is one the raw baseline shared in the same attempt (host noise); a miss of ours alone fails at once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.sizes, err = parseSizes(*sizes); err != nil {
		return err
	}
	if cfg.callers, err = parseCallers(*callers); err != nil {
		return err
	}
	if cfg.duration <= 0 || cfg.slice < 0 || cfg.count <= 0 || cfg.runs <= 0 || cfg.sessions <= 0 || cfg.batch <= 0 || cfg.window <= 32 || cfg.window > tio.EmitQueueFrames || cfg.dgramRate <= 0 || cfg.broadcastRate <= 0 {
		return errors.New("-duration, -count, -runs, -sessions, -batch, -dgram-rate and -broadcast-rate must be positive, -slice at least 0, -window from 33 to 256 (the emit queue, §9)")
	}
	if *attempts <= 0 {
		return errors.New("-attempts must be positive")
	}
	if cfg.pace != paceWait && cfg.pace != paceWindow {
		return fmt.Errorf("-pace %q: want %s or %s", cfg.pace, paceWait, paceWindow)
	}
	if cfg.peer.members <= 0 || cfg.peer.membersLarge <= 0 || cfg.peer.broadcasts <= 0 || cfg.peer.broadcasts > 256 || cfg.peer.size < 40 || cfg.peer.size > 4096 || cfg.peer.pacedEvery <= 0 || cfg.peer.pacedRounds <= 0 {
		return errors.New("-members and -members-large must be positive, -broadcasts from 1 to 256 (a member's queue, §9), -broadcast-size from 40 to 4096, -paced-every and -paced-rounds positive")
	}
	if cfg.peer.subjects, cfg.peer.node, err = parseSubjects(*peers, func(m string) { fmt.Fprintln(stderr, m) }); err != nil {
		return err
	}
	picked, err := pick(*which)
	if err != nil {
		return err
	}
	if cfg.realtime {
		if err := setRealtime(true); err != nil {
			fmt.Fprintf(stderr, "tio-bench: -realtime: %v; measuring at normal priority, where other processes can push the tails past their bounds\n", err)
			cfg.realtime = false
		}
		if err := setRealtime(false); err != nil {
			return err
		}
	}
	if *cpuprofile != "" && cfg.peer.membersProfile != "" {
		return errors.New("-cpuprofile and -members-cpuprofile: one CPU profile at a time")
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *traceFile != "" {
		f, err := os.Create(*traceFile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
		defer trace.Stop()
	}
	if *memprofile != "" {
		runtime.MemProfileRate = 1
		defer func() {
			if werr := writeHeapProfile(*memprofile); err == nil {
				err = werr
			}
		}()
	}

	for attempt := 1; ; attempt++ {
		all, err := measure(picked, cfg, stdout, stderr)
		if err != nil {
			return err
		}
		if *lossSVG != "" {
			if err := writeLossSVG(*lossSVG, all); err != nil {
				return err
			}
		}
		if !*check {
			return nil
		}
		again, err := checkTargets(all, attempt, *attempts)
		if !again {
			return err
		}
		fmt.Fprintf(stderr, "tio-bench: %v; measuring again\n", err)
	}
}

// measure runs each picked scenario -runs times and prints the medians: one
// JSON object per figure on stdout, the table on stderr.
func measure(picked []scenario, cfg config, stdout, stderr io.Writer) ([]figure, error) {
	enc := json.NewEncoder(stdout)
	var all []figure
	for _, s := range picked {
		load := loadAverage()
		var samples [][]sample
		for run := range cfg.runs {
			cfg.run = run
			ctx, cancel := context.WithTimeout(context.Background(), runBound(s.name, cfg))
			got, err := s.run(ctx, cfg)
			cancel()
			if skip := (errSkipped{}); errors.As(err, &skip) {
				fmt.Fprintf(stderr, "tio-bench: %s %v\n", s.name, err)
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.name, err)
			}
			samples = append(samples, got)
		}
		for _, f := range summarize(s.name, samples) {
			f.Load = load
			if err := enc.Encode(f); err != nil {
				return nil, err
			}
			all = append(all, f)
		}
	}
	printTable(stderr, all)
	return all, nil
}

// scenarioBound is a hard ceiling on one run of a scenario: a hang becomes an
// error instead of a stuck harness.
func scenarioBound(cfg config) time.Duration {
	return 20*cfg.duration + 2*time.Minute
}

// runBound is scenarioBound, or a fan-out's ceiling where that is longer:
// each of its subjects has a bound of its own (fanoutSubjectBound).
func runBound(name string, cfg config) time.Duration {
	switch name {
	case "peer-fanout":
		return max(scenarioBound(cfg), fanoutScenarioBound(cfg, cfg.peer.members))
	case "peer-fanout-large":
		return max(scenarioBound(cfg), fanoutScenarioBound(cfg, cfg.peer.membersLarge))
	}
	return scenarioBound(cfg)
}

func pick(which string) ([]scenario, error) {
	switch which {
	case "all":
		return scenarios, nil
	case "peers":
		return peerScenarios, nil
	}
	known := append(append(slices.Clone(scenarios), peerScenarios...), lossScenario)
	var out []scenario
	for name := range strings.SplitSeq(which, ",") {
		i := slices.IndexFunc(known, func(s scenario) bool { return s.name == name })
		if i < 0 {
			return nil, fmt.Errorf("unknown scenario %q", name)
		}
		out = append(out, known[i])
	}
	return out, nil
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 20 || n > 64<<10 {
			return nil, fmt.Errorf("size %q: want a number of bytes from 20 to 65536", part)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseCallers(s string) ([]int, error) {
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 || n > 256 {
			return nil, fmt.Errorf("callers %q: want a number from 1 to 256 (the §10.1 call limit)", part)
		}
		out = append(out, n)
	}
	return out, nil
}

// loadAverage is the host's 1-minute load average, to read the figures
// against: the measurement machine is shared.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}
