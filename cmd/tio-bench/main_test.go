package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets this test binary serve as the wt-idle scenario's child
// process, as the tio-bench binary does.
func TestMain(m *testing.M) {
	if child, err := runLossChild(os.Stdout); child {
		if err != nil {
			fmt.Fprintln(os.Stderr, "loss child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if child, err := runPeerServerChild(os.Stdin, os.Stdout); child {
		if err != nil {
			fmt.Fprintln(os.Stderr, "peer server child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if child, err := runIdleChild(os.Stdout); child {
		if err != nil {
			fmt.Fprintln(os.Stderr, "idle child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestEveryScenarioRuns runs each scenario once with tiny bounds, so none
// can rot: a scenario that errors, prints no figure, or measures no
// throughput fails.
func TestEveryScenarioRuns(t *testing.T) {
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := []string{"-scenario", s.name, "-runs", "1", "-count", "2000", "-duration", "200ms", "-sessions", "20", "-dgram-rate", "5000"}
			start := time.Now()
			if err := run(args, &stdout, &stderr); err != nil {
				t.Fatalf("%s: %v\n%s", s.name, err, stderr.String())
			}
			if d := time.Since(start); d > time.Minute {
				t.Errorf("%s took %v with tiny bounds", s.name, d)
			}
			figs := decodeFigures(t, stdout.Bytes())
			if len(figs) == 0 {
				t.Fatalf("%s printed no figure", s.name)
			}
			for _, f := range figs {
				if f.Scenario != s.name {
					t.Errorf("figure %q of scenario %q under %q", f.Figure, f.Scenario, s.name)
				}
				if strings.HasSuffix(f.Unit, "/s") && f.Ours <= 0 {
					t.Errorf("%s %s: ours is %v %s", s.name, f.Figure, f.Ours, f.Unit)
				}
				if strings.HasSuffix(f.Unit, "/s") && f.Raw != nil && *f.Raw <= 0 {
					t.Errorf("%s %s: raw is %v %s", s.name, f.Figure, *f.Raw, f.Unit)
				}
			}
			if !strings.Contains(stderr.String(), s.name) {
				t.Errorf("the table does not name %s:\n%s", s.name, stderr.String())
			}
		})
	}
}

// TestEveryPeerScenarioRuns runs each peer scenario once with tiny bounds
// against every subject, so none can rot: a scenario that errors, misses a
// subject, or measures no throughput fails.
func TestEveryPeerScenarioRuns(t *testing.T) {
	installSocketIO(t)
	for _, s := range peerScenarios {
		t.Run(s.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := []string{"-scenario", s.name, "-runs", "1", "-count", "500", "-duration", "100ms",
				"-members", "8", "-members-large", "16", "-broadcasts", "10", "-paced-every", "2ms"}
			start := time.Now()
			if err := run(args, &stdout, &stderr); err != nil {
				t.Fatalf("%s: %v\n%s", s.name, err, stderr.String())
			}
			if d := time.Since(start); d > time.Minute {
				t.Errorf("%s took %v with tiny bounds", s.name, d)
			}
			figs := decodeFigures(t, stdout.Bytes())
			if len(figs) == 0 {
				t.Fatalf("%s printed no figure", s.name)
			}
			for _, f := range figs {
				if f.Scenario != s.name {
					t.Errorf("figure %q of scenario %q under %q", f.Figure, f.Scenario, s.name)
				}
				for _, subject := range []string{subTioWT, subRawWT, subCentrifuge, subSocketIO} {
					v, ok := f.Values[subject]
					if !ok && !(subject == subCentrifuge && s.name == "peer-emit") {
						t.Errorf("%s %s: no %s figure in %v", s.name, f.Figure, subject, f.Values)
					}
					if ok && v <= 0 && f.Unit != "ms" {
						t.Errorf("%s %s: %s is %v %s", s.name, f.Figure, subject, v, f.Unit)
					}
				}
				if f.Ratios[subTioWT+"/"+subRawWT] <= 0 {
					t.Errorf("%s %s: no tiogen WT/raw WT ratio in %v", s.name, f.Figure, f.Ratios)
				}
			}
			if !strings.Contains(stderr.String(), s.name) || !strings.Contains(stderr.String(), subCentrifuge) || !strings.Contains(stderr.String(), subSocketIO) {
				t.Errorf("the peer table does not name %s, centrifuge and socket.io:\n%s", s.name, stderr.String())
			}
		})
	}
}

// installSocketIO installs the socket.io side's pinned packages (npm ci with
// its lock file) unless they are there. Node is required: the peer
// comparison measures socket.io wherever Node is present, so a missing Node
// fails here rather than skipping socket.io unseen.
func installSocketIO(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not on PATH: the socket.io side of the peer scenarios needs Node 20")
	}
	if _, err := os.Stat(filepath.Join("socketio", "node_modules", "socket.io", "package.json")); err == nil {
		return
	}
	cmd := exec.Command("npm", "ci", "--prefix", "socketio", "--no-audit", "--no-fund")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci --prefix socketio: %v\n%s", err, out)
	}
}

func decodeFigures(t *testing.T, out []byte) []figure {
	t.Helper()
	var figs []figure
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var f figure
		if err := dec.Decode(&f); err != nil {
			t.Fatalf("stdout is not one JSON object per figure: %v\n%s", err, out)
		}
		figs = append(figs, f)
	}
	return figs
}

func TestSummarizeTakesMediansAndPairedRatio(t *testing.T) {
	var runs [][]sample
	for _, r := range [][2]float64{{90, 100}, {70, 200}, {80, 120}} {
		runs = append(runs, []sample{{Figure: "emit", Size: 64, Unit: "frames/s", Ours: r[0], Raw: r[1], HasRaw: true, Target: 0.8}})
	}
	figs := summarize("wt-emit", runs)
	if len(figs) != 1 {
		t.Fatalf("%d figures, want 1", len(figs))
	}
	f := figs[0]
	if f.Ours != 80 || f.Raw == nil || *f.Raw != 120 {
		t.Fatalf("medians ours %v raw %v, want 80 and 120", f.Ours, f.Raw)
	}
	// Per-run ratios 0.9, 0.35 and 0.667: the median is 0.667.
	if f.Ratio == nil || *f.Ratio != 0.667 || f.Met == nil || *f.Met {
		t.Fatalf("ratio %v met %v, want 0.667 and missed", f.Ratio, f.Met)
	}
}

func TestStampRoundTrip(t *testing.T) {
	now := time.Unix(0, 1_764_468_000_123_456_789)
	b := stamped(nil, now, 64)
	if len(b) != 64 || !json.Valid(b) {
		t.Fatalf("stamped payload %q: %d bytes, valid JSON %v", b, len(b), json.Valid(b))
	}
	got, ok := stampOf(b)
	if !ok || !got.Equal(now) {
		t.Fatalf("stampOf = %v %v, want %v", got, ok, now)
	}
	if _, ok := stampOf([]byte(`{"seq":1}`)); ok {
		t.Fatal("stampOf accepted a payload without a stamp")
	}
}

func TestJSONPayloadIsExactSizeAndValid(t *testing.T) {
	for _, n := range []int{20, 64, 1024} {
		b := jsonPayload(n)
		if len(b) != n || !json.Valid(b) {
			t.Errorf("jsonPayload(%d) = %d bytes, valid %v", n, len(b), json.Valid(b))
		}
	}
}

// TestPaceWindowEmitRuns covers the emit scenarios' second pacing, which
// TestEveryScenarioRuns (the default, -pace wait) does not reach.
func TestPaceWindowEmitRuns(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"-scenario", "wt-emit,ws-emit", "-pace", "window", "-runs", "1", "-count", "2000", "-duration", "200ms", "-sizes", "64"}
	if err := run(args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	for _, f := range decodeFigures(t, stdout.Bytes()) {
		if f.Figure == "emit" && (f.Ours <= 0 || !strings.Contains(f.Note, "in flight end to end")) {
			t.Errorf("%s %s: ours %v, note %q", f.Scenario, f.Figure, f.Ours, f.Note)
		}
	}
}

func TestUnknownPaceIsRefused(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run([]string{"-pace", "queue"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "want wait or window") {
		t.Fatalf("-pace queue: %v, want a refusal naming wait and window", err)
	}
}

func TestCheckFailsOnAMissedTarget(t *testing.T) {
	missed, met := false, true
	half, most := 0.5, 0.9
	figs := []figure{
		{Scenario: "ws-emit", Figure: "emit", Size: 64, Target: 0.8, Ratio: &most, Met: &met},
		{Scenario: "ws-emit", Figure: "emit", Size: 1024, Target: 0.8, Ratio: &half, Met: &missed},
	}
	err := missedTargets(figs)
	if err == nil || !strings.Contains(err.Error(), "ws-emit emit 1024 B: ratio 0.50, target 0.8") || strings.Contains(err.Error(), "64 B") {
		t.Fatalf("missedTargets = %v, want only the 1024 B figure named", err)
	}
	if err := missedTargets(figs[:1]); err != nil {
		t.Fatalf("missedTargets with every target met = %v", err)
	}
}

// A lower-is-better figure with an absolute bound (the NATS latency
// targets) is met by its median over the runs and fails -check above it.
func TestCheckFailsAboveABound(t *testing.T) {
	runs := [][]sample{
		{{Figure: "p99", Size: 100, Unit: "µs", Lower: true, Ours: 1900, Max: 2000}, {Figure: "p99", Size: 1024, Unit: "µs", Lower: true, Ours: 2100, Max: 2000}},
		{{Figure: "p99", Size: 100, Unit: "µs", Lower: true, Ours: 2500, Max: 2000}, {Figure: "p99", Size: 1024, Unit: "µs", Lower: true, Ours: 1500, Max: 2000}},
		{{Figure: "p99", Size: 100, Unit: "µs", Lower: true, Ours: 1800, Max: 2000}, {Figure: "p99", Size: 1024, Unit: "µs", Lower: true, Ours: 2300, Max: 2000}},
	}
	figs := summarize("nats-broadcast", runs)
	if len(figs) != 2 || figs[0].Met == nil || !*figs[0].Met || figs[1].Met == nil || *figs[1].Met {
		t.Fatalf("figures %+v: want the 100 B median (1900) met and the 1024 B one (2100) missed", figs)
	}
	err := missedTargets(figs)
	if err == nil || !strings.Contains(err.Error(), "nats-broadcast p99 1024 B: 2100 µs, at most 2000") || strings.Contains(err.Error(), " 100 B") {
		t.Fatalf("missedTargets = %v, want only the 1024 B figure named with its bound", err)
	}
}

// TestLossLaneRunsOrSaysWhy runs the loss-lane scenario with tiny bounds:
// where the host allows namespaces and netem it must print every lane's
// figures at every loss rate, and where it does not it must say why.
func TestLossLaneRunsOrSaysWhy(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-scenario", "loss-lane", "-runs", "1", "-duration", "300ms"}, &stdout, &stderr); err != nil {
		t.Fatalf("loss-lane: %v\n%s", err, stderr.String())
	}
	figs := decodeFigures(t, stdout.Bytes())
	if len(figs) == 0 {
		if !strings.Contains(stderr.String(), "loss-lane skipped: ") {
			t.Fatalf("loss-lane printed no figure and no reason:\n%s", stderr.String())
		}
		t.Log(strings.TrimSpace(stderr.String()))
		return
	}
	if want := len(lossRates) * (len(lossLanes)*3 + 1); len(figs) != want {
		t.Fatalf("loss-lane printed %d figures, want %d", len(figs), want)
	}
	for _, f := range figs {
		if strings.Contains(f.Figure, "p50") && f.Ours <= 0 {
			t.Errorf("%s: %v %s", f.Figure, f.Ours, f.Unit)
		}
	}
}
