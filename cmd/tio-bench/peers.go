package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// The subjects of the peer comparison, in the order they are printed:
// tiogen over both mappings, the raw transports carrying the same bytes, and
// the libraries a user would otherwise pick.
const (
	subTioWT      = "tiogen WT"
	subTioWS      = "tiogen WS"
	subRawWT      = "raw WT"
	subRawWS      = "raw WS"
	subCentrifuge = "centrifuge"
	subSocketIO   = "socket.io"
)

var subjectOrder = []string{subTioWT, subTioWS, subRawWT, subRawWS, subCentrifuge, subSocketIO}

// The crossed subjects of peer-fanout, each one subject's server with the
// other's members, so that a difference between tiogen WT and raw WT can be
// put on the server or on the members. -peers names them; "all" leaves them
// out, and the other peer scenarios skip them.
const (
	// tiogen WT's server; raw WT's members, with the §4 handshake.
	subTioWTLean = "tiogen WT lean"
	// raw WT's server, each stream opened by a §4 handshake; tiogen WT's
	// members.
	subRawWTTio = "raw WT tio"
)

var crossedSubjects = []string{subTioWTLean, subRawWTTio}

// crossedRatios are the crossed subjects' ratios: a server against the
// other with the same members, and members against the others with the
// same server.
var crossedRatios = [][2]string{
	{subTioWTLean, subRawWT}, {subTioWT, subRawWTTio}, {subTioWT, subTioWTLean}, {subRawWTTio, subRawWT},
}

// ratioPairs are the ratios a peer figure prints: each tiogen mapping
// against its raw transport and against each peer.
var ratioPairs = [][2]string{
	{subTioWT, subRawWT}, {subTioWT, subCentrifuge}, {subTioWT, subSocketIO},
	{subTioWS, subRawWS}, {subTioWS, subCentrifuge}, {subTioWS, subSocketIO},
}

func shortSubject(s string) string {
	switch s {
	case subTioWT:
		return "WT"
	case subTioWS:
		return "WS"
	case subCentrifuge:
		return "cf"
	case subSocketIO:
		return "sio"
	case subTioWTLean:
		return "WTlean"
	case subRawWTTio:
		return "rawWTtio"
	}
	return strings.ReplaceAll(s, " ", "")
}

// peerScenarios compare tiogen with the peers; "-scenario peers" runs them
// all, "all" does not (it stays the tiogen/raw scenarios).
var peerScenarios = []scenario{
	{"peer-fanout", "broadcast to -members: burst deliveries/s and server CPU, paced p99 and server CPU per delivery", runPeerFanout},
	{"peer-fanout-large", "the same fan-out to -members-large", runPeerFanoutLarge},
	{"peer-call", "request/response: calls/s and p99 with 1 and 64 callers", runPeerCall},
	{"peer-emit", "1 KiB client→server messages/s", runPeerEmit},
	{"peer-setup", "sequential session setup (dial, handshake, close) per second", runPeerSetup},
}

// peerConfig bounds the peer scenarios.
type peerConfig struct {
	members      int           // fan-out members
	membersLarge int           // fan-out members of peer-fanout-large
	broadcasts   int           // broadcasts per fan-out round
	size         int           // fan-out payload bytes
	pacedEvery   time.Duration // interval of the paced round
	subjects     []string      // the subjects measured
	node         string        // the node binary, "" when there is none
	// flushDelay is -flush-delay: the tiogen fan-out servers'
	// Options.EmitFlushDelay.
	flushDelay time.Duration
	// serverProfile is -server-cpuprofile, handed to the fan-out server
	// children (Go subjects only).
	serverProfile string
	// membersProfile is -members-cpuprofile: this process's profiles of
	// each round (Go audiences only).
	membersProfile string
	// pacedRounds is -paced-rounds: a fan-out's paced rounds per subject
	// and run; above 1 they interleave (peerFanoutInterleaved).
	pacedRounds int
}

// parseSubjects reads -peers: "all" or a comma-separated subset of
// subjectOrder. socket.io needs Node: without it, it is left out with a
// message rather than failing the other subjects.
func parseSubjects(s string, warn func(string)) ([]string, string, error) {
	node, _ := exec.LookPath("node")
	var out []string
	if s == "all" {
		out = slices.Clone(subjectOrder)
	} else {
		for name := range strings.SplitSeq(s, ",") {
			name = strings.TrimSpace(name)
			if !slices.Contains(subjectOrder, name) && !slices.Contains(crossedSubjects, name) {
				return nil, "", fmt.Errorf("-peers: unknown subject %q: want all or some of %s", name, strings.Join(append(slices.Clone(subjectOrder), crossedSubjects...), ", "))
			}
			out = append(out, name)
		}
	}
	if node == "" && slices.Contains(out, subSocketIO) {
		warn("tio-bench: node is not on PATH: socket.io is not measured")
		out = slices.DeleteFunc(out, func(s string) bool { return s == subSocketIO })
	}
	return out, node, nil
}

// peerFigures collects each figure's value by subject, keeping the order
// in which the figures first appeared.
type peerFigures struct {
	order  []sample
	byName map[string]int
}

func (p *peerFigures) add(subject string, proto sample, v float64) {
	if p.byName == nil {
		p.byName = map[string]int{}
	}
	k := sampleKey(proto)
	i, ok := p.byName[k]
	if !ok {
		proto.Values = map[string]float64{}
		p.order = append(p.order, proto)
		i = len(p.order) - 1
		p.byName[k] = i
	}
	p.order[i].Values[subject] = v
}

func runPeerFanout(ctx context.Context, cfg config) ([]sample, error) {
	return peerFanout(ctx, cfg, cfg.peer.members)
}

func runPeerFanoutLarge(ctx context.Context, cfg config) ([]sample, error) {
	return peerFanout(ctx, cfg, cfg.peer.membersLarge)
}

// peerFanout measures a burst round (broadcasts back to back) and a paced
// round (one every -paced-every) for each subject, the server in a child
// process of its own so that its CPU time is the server's alone. Each
// subject runs within a bound of its own (fanoutSubjectBound); one that
// fails is reported on stderr and left out of the figures, and the others
// are still measured. It fails only when every subject failed. With
// -paced-rounds above 1 the paced rounds interleave over the subjects
// (peerFanoutInterleaved).
func peerFanout(ctx context.Context, cfg config, members int) ([]sample, error) {
	if cfg.peer.pacedRounds > 1 {
		return peerFanoutInterleaved(ctx, cfg, members)
	}
	pc := cfg.peer
	var figs peerFigures
	var failed []string
	note := fanoutNote(cfg, members)
	for _, subject := range pc.subjects {
		sctx, cancel := context.WithTimeout(ctx, fanoutSubjectBound(cfg, members))
		burst, paced, err := fanoutSubject(sctx, cfg, subject, members)
		cancel()
		if err != nil {
			failed = append(failed, fanoutFailed(members, subject, err))
			continue
		}
		figs.addFanout(cfg, members, subject, note, burst.result(), paced.result())
	}
	if len(figs.order) == 0 {
		return nil, fmt.Errorf("every subject failed: %s", strings.Join(failed, "; "))
	}
	return figs.order, nil
}

func fanoutNote(cfg config, members int) string {
	pc := cfg.peer
	note := fmt.Sprintf("%d members, each its own session; the server in a child process, the members in this one (socket.io: in one Node driver process); %d broadcasts of %d B stamped with the send time; server CPU = the server process's user+system time (getrusage) from the round's first broadcast until every member had every broadcast, over the deliveries", members, pc.broadcasts, pc.size)
	if pc.pacedRounds > 1 {
		note += fmt.Sprintf("; every subject's server and members standing at once, %d paced rounds each, in turn over the subjects (the order rotated each time), each subject's paced figures over all its rounds", pc.pacedRounds)
	}
	return note
}

// fanoutFailed reports a subject that failed, whose figures are left out.
func fanoutFailed(members int, subject string, err error) string {
	fmt.Fprintf(os.Stderr, "tio-bench: %d-member fan-out, %s failed (its figures are left out of this run): %v\n", members, subject, err)
	return fmt.Sprintf("%s: %v", subject, err)
}

// addFanout adds one subject's fan-out figures.
func (p *peerFigures) addFanout(cfg config, members int, subject, note string, burst, paced fanoutResult) {
	pc := cfg.peer
	p.add(subject, sample{Figure: "burst deliveries", Concurrency: members, Size: pc.size, Unit: "deliveries/s", Note: note}, burst.perSec)
	p.add(subject, sample{Figure: "burst server CPU", Concurrency: members, Size: pc.size, Unit: "µs/delivery", Lower: true}, burst.cpuPerDelivery)
	p.add(subject, sample{Figure: "burst p99", Concurrency: members, Size: pc.size, Unit: "ms", Lower: true}, burst.p99)
	pacedName := fmt.Sprintf("paced %v", pc.pacedEvery)
	p.add(subject, sample{Figure: pacedName + " p50", Concurrency: members, Size: pc.size, Unit: "ms", Lower: true,
		Note: fmt.Sprintf("one broadcast every %v", pc.pacedEvery)}, paced.p50)
	p.add(subject, sample{Figure: pacedName + " p99", Concurrency: members, Size: pc.size, Unit: "ms", Lower: true}, paced.p99)
	p.add(subject, sample{Figure: pacedName + " server CPU", Concurrency: members, Size: pc.size, Unit: "µs/delivery", Lower: true}, paced.cpuPerDelivery)
	if paced.membersCPU > 0 {
		p.add(subject, sample{Figure: pacedName + " members CPU", Concurrency: members, Size: pc.size, Unit: "µs/delivery", Lower: true,
			Note: "the members' process (this one; Go subjects only): its user+system time over the round, over the deliveries; the pace is kept only while it keeps up"}, paced.membersCPU)
	}
}

// peerFanoutInterleaved is peerFanout with -paced-rounds above 1: every
// subject's server child and members are set up in turn, each running its
// burst round once it stands, and stay up; then the paced rounds go in turn
// over the subjects, the order rotated each time, so that a host whose load
// drifts over the minutes a run takes weighs on every subject alike (run
// one after the other, a subject's rounds can fall in a busier minute than
// the next's). While one subject's round runs the others' sessions stand
// idle. A subject's paced figures are over all its rounds: the latencies
// pooled, the CPU and the deliveries summed.
func peerFanoutInterleaved(ctx context.Context, cfg config, members int) ([]sample, error) {
	pc := cfg.peer
	var failed []string
	fail := func(subject string, err error) { failed = append(failed, fanoutFailed(members, subject, err)) }
	var stands []*fanoutStand
	defer func() {
		for _, st := range stands {
			if st != nil {
				st.close()
			}
		}
	}()
	var bursts []roundTally
	for _, subject := range pc.subjects {
		st, err := standUp(ctx, cfg, subject, members)
		if err != nil {
			fail(subject, err)
			continue
		}
		burst, err := fanoutRound(ctx, cfg, st, members, 0)
		if err != nil {
			st.close()
			fail(subject, fmt.Errorf("burst: %w", err))
			continue
		}
		stands, bursts = append(stands, st), append(bursts, burst)
	}
	paced := make([]roundTally, len(stands))
	roundP99 := make([][]float64, len(stands))
	for k := range pc.pacedRounds {
		for j := range stands {
			i := (j + k) % len(stands)
			st := stands[i]
			if st == nil {
				continue
			}
			t, err := fanoutRound(ctx, cfg, st, members, pc.pacedEvery)
			if err != nil {
				st.close()
				stands[i] = nil
				fail(st.subject, fmt.Errorf("paced round %d: %w", k+1, err))
				continue
			}
			paced[i].add(t)
			roundP99[i] = append(roundP99[i], t.result().p99)
		}
	}
	var figs peerFigures
	note := fanoutNote(cfg, members)
	for i, st := range stands {
		if st == nil {
			continue
		}
		figs.addFanout(cfg, members, st.subject, note, bursts[i].result(), paced[i].result())
		// The pooled p99 is the worst rounds' (one round is 1/K of the
		// samples): a host episode during one round sets it. The median
		// of the rounds' p99 is what a subject does in most of them.
		figs.add(st.subject, sample{Figure: fmt.Sprintf("paced %v p99, median of rounds", pc.pacedEvery), Concurrency: members, Size: pc.size, Unit: "ms", Lower: true,
			Note: "each paced round's p99, the median over the rounds"}, median(roundP99[i]))
		fmt.Fprintf(os.Stderr, "tio-bench: %d-member fan-out, %s: paced p99 of each round (ms): %s\n", members, st.subject, roundsText(roundP99[i]))
	}
	if len(figs.order) == 0 {
		return nil, fmt.Errorf("every subject failed: %s", strings.Join(failed, "; "))
	}
	return figs.order, nil
}

func roundsText(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = human(x)
	}
	return strings.Join(parts, " ")
}

// Bounds of one subject's fan-out. Setup (the server child's start, the
// members' dials) is not measured, and 2,000 dials on a loaded 2-core host
// take a while; a round gets its pacing, a minute, and 50 µs per delivery.
func fanoutSetupBound(members int) time.Duration {
	return time.Minute + time.Duration(members)*30*time.Millisecond
}

func fanoutRoundBound(cfg config, members int, interval time.Duration) time.Duration {
	deliveries := cfg.peer.broadcasts * members
	return time.Duration(cfg.peer.broadcasts)*interval + time.Minute + time.Duration(deliveries)*50*time.Microsecond
}

// fanoutSubjectBound is one subject's ceiling: setup, its burst round and
// paced rounds, and half a minute to close.
func fanoutSubjectBound(cfg config, members int) time.Duration {
	paced := time.Duration(max(cfg.peer.pacedRounds, 1)) * fanoutRoundBound(cfg, members, cfg.peer.pacedEvery)
	return fanoutSetupBound(members) + fanoutRoundBound(cfg, members, 0) + paced + 30*time.Second
}

// fanoutScenarioBound replaces scenarioBound for a fan-out scenario: every
// subject's ceiling, one after the other.
func fanoutScenarioBound(cfg config, members int) time.Duration {
	return time.Duration(len(cfg.peer.subjects)) * fanoutSubjectBound(cfg, members)
}

// fanoutResult is one subject's figures of a kind of round; membersCPU is
// 0 for an audience in another process.
type fanoutResult struct {
	perSec, p50, p99, cpuPerDelivery, membersCPU float64
}

// roundTally is what one or more rounds of a subject measured.
type roundTally struct {
	lat        latencies
	elapsed    time.Duration
	deliveries int64
	serverCPU  float64       // µs
	membersCPU time.Duration // 0 for an audience in another process
}

func (t *roundTally) add(o roundTally) {
	t.lat = append(t.lat, o.lat...)
	t.elapsed += o.elapsed
	t.deliveries += o.deliveries
	t.serverCPU += o.serverCPU
	t.membersCPU += o.membersCPU
}

func (t roundTally) result() fanoutResult {
	r := fanoutResult{
		perSec:         perSecond(t.deliveries, t.elapsed),
		p50:            t.lat.percentile(0.50),
		p99:            t.lat.percentile(0.99),
		cpuPerDelivery: t.serverCPU / float64(t.deliveries),
	}
	if t.membersCPU > 0 {
		r.membersCPU = float64(t.membersCPU) / float64(time.Microsecond) / float64(t.deliveries)
	}
	return r
}

// fanoutAudience is the members' side of a fan-out: Go clients in this
// process, or a Node driver process.
type fanoutAudience interface {
	// await returns once every member received `more` broadcasts beyond
	// the previous round, with their delivery latencies.
	await(ctx context.Context, more int64) (latencies, error)
	close()
}

// fanoutStand is one subject's server child and members, joined.
type fanoutStand struct {
	subject string
	srv     *fanoutServer
	aud     fanoutAudience
	prof    roundProfile // this process's, over each round
}

// standUp starts a subject's server child and joins its members; the
// child lives as long as ctx.
func standUp(ctx context.Context, cfg config, subject string, members int) (*fanoutStand, error) {
	srv, err := startFanoutServer(ctx, cfg, subject)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	aud, err := joinAudience(ctx, cfg, subject, srv.hello, members)
	if err != nil {
		srv.close()
		return nil, fmt.Errorf("members: %w", err)
	}
	st := &fanoutStand{subject: subject, srv: srv, aud: aud}
	if _, err := srv.call(childCommand{Op: opMembers, Members: members}); err != nil {
		st.close()
		return nil, err
	}
	membersMeasured++
	st.prof = roundProfile{prefix: cfg.peer.membersProfile, subject: shortSubject(subject), id: membersMeasured}
	if _, ok := aud.(*goAudience); !ok {
		st.prof.prefix = "" // the members are another process
	}
	return st, nil
}

func (st *fanoutStand) close() {
	st.prof.stop()
	st.aud.close()
	st.srv.close()
}

func fanoutSubject(ctx context.Context, cfg config, subject string, members int) (burst, paced roundTally, err error) {
	st, err := standUp(ctx, cfg, subject, members)
	if err != nil {
		return burst, paced, err
	}
	defer st.close()
	if burst, err = fanoutRound(ctx, cfg, st, members, 0); err != nil {
		return burst, paced, fmt.Errorf("burst: %w", err)
	}
	if paced, err = fanoutRound(ctx, cfg, st, members, cfg.peer.pacedEvery); err != nil {
		return burst, paced, fmt.Errorf("paced: %w", err)
	}
	return burst, paced, nil
}

// membersMeasured counts the subjects whose members this process ran, to
// name their profiles (-members-cpuprofile).
var membersMeasured int

// fanoutRound has the server broadcast cfg.peer.broadcasts payloads, every
// interval (0: back to back), and waits until every member had them all;
// st.prof profiles this process over the round.
func fanoutRound(ctx context.Context, cfg config, st *fanoutStand, members int, interval time.Duration) (roundTally, error) {
	ctx, cancel := context.WithTimeout(ctx, fanoutRoundBound(cfg, members, interval))
	defer cancel()
	if err := st.prof.start(interval > 0); err != nil {
		return roundTally{}, err
	}
	start, cpu0 := time.Now(), cpuTime()
	got, err := st.srv.call(childCommand{Op: opRound, Count: cfg.peer.broadcasts, Size: cfg.peer.size, Interval: interval})
	if err != nil {
		return roundTally{}, err
	}
	lat, err := st.aud.await(ctx, got.Sent)
	if err != nil {
		return roundTally{}, err
	}
	elapsed, membersCPU := time.Since(start), cpuTime()-cpu0
	st.prof.stop()
	cpu, err := st.srv.call(childCommand{Op: opCPU})
	if err != nil {
		return roundTally{}, err
	}
	t := roundTally{lat: lat, elapsed: elapsed, deliveries: got.Sent * int64(members), serverCPU: cpu.CPUMicros}
	if _, ok := st.aud.(*goAudience); ok {
		t.membersCPU = membersCPU
	}
	return t, nil
}

// goAudience is members that are Go clients in this process.
type goAudience struct {
	a       audience
	base    int64 // deliveries before the round
	members int64
	payload int // bytes of each broadcast payload
	closers []func()
}

func newGoAudience(members, payload int) *goAudience {
	a := audience{p: newPacer(broadcastWindow), recorders: make([]*recorder, members)}
	for i := range a.recorders {
		a.recorders[i] = &recorder{p: a.p}
	}
	return &goAudience{a: a, members: int64(members), payload: payload}
}

func (g *goAudience) await(ctx context.Context, more int64) (latencies, error) {
	want := g.base + more*g.members
	if err := g.a.p.await(ctx, want); err != nil {
		if lerr := g.a.lost(); lerr != nil {
			return nil, lerr
		}
		return nil, err
	}
	if err := g.a.lost(); err != nil {
		return nil, err
	}
	g.base = want
	var all latencies
	for _, r := range g.a.recorders {
		if b := r.bad.Load(); b > 0 {
			return nil, fmt.Errorf("a member received %d payloads without a stamp", b)
		}
		all = r.take(all)
	}
	return all, nil
}

func (g *goAudience) close() {
	for _, c := range g.closers {
		c()
	}
}

// joinAudience connects the members of a subject's fan-out.
func joinAudience(ctx context.Context, cfg config, subject string, hello childHello, members int) (fanoutAudience, error) {
	if subject == subSocketIO {
		return joinSocketIOAudience(ctx, cfg, hello, members)
	}
	g := newGoAudience(members, cfg.peer.size)
	join, ok := goMembers[subject]
	if !ok {
		return nil, fmt.Errorf("no fan-out members for %q", subject)
	}
	setup, cancel := context.WithTimeout(ctx, fanoutSetupBound(members))
	defer cancel()
	if err := join(setup, g, hello); err != nil {
		g.close()
		return nil, err
	}
	return g, nil
}
