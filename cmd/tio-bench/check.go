package main

import (
	"fmt"
	"slices"
	"strings"
)

// checkTargets judges one attempt's figures (-check). Each figure's raw
// baseline, measured moments apart in the same attempt, tells a miss of ours
// from the host's noise:
//
//   - a bound (Max) that ours missed is the host's when raw missed it too in
//     any run of the attempt (the host alone can push a run past it: under
//     load single runs of either side move by two orders of magnitude), and
//     ours when raw met it in every run;
//   - a ratio target that ours missed is the host's when raw's own runs in
//     the attempt spread by more than the target allows (slowest/fastest
//     below it: the host alone moved raw that far), and ours otherwise;
//   - a figure with no baseline (a host's start, reconnection) that missed
//     is the host's when the attempt showed noise in some figure's baseline,
//     and ours otherwise.
//
// A miss of ours fails at once: repeating until a lucky attempt would hide a
// regression. An attempt whose every miss is the host's is inconclusive:
// again is true while attempts remain, and the last one fails, saying the
// host was too noisy. An attempt with no miss passes.
func checkTargets(figs []figure, attempt, attempts int) (again bool, err error) {
	var ours, hosts, unexplained []string
	noisy := false
	for _, f := range figs {
		rawMissed := baselineMissed(f)
		noisy = noisy || rawMissed
		if f.Met == nil || *f.Met {
			continue
		}
		miss := describeMiss(f)
		switch {
		case f.Raw == nil:
			unexplained = append(unexplained, miss)
		case rawMissed:
			hosts = append(hosts, miss)
		default:
			ours = append(ours, miss)
		}
	}
	if noisy {
		hosts = append(hosts, unexplained...)
	} else {
		ours = append(ours, unexplained...)
	}
	load := 0.0
	for _, f := range figs {
		load = max(load, f.Load)
	}
	switch {
	case len(ours) > 0:
		return false, fmt.Errorf("targets missed where the raw baseline of the same attempt met them (attempt %d of %d, load average %.1f): %s",
			attempt, attempts, load, strings.Join(ours, "; "))
	case len(hosts) == 0:
		return false, nil
	case attempt < attempts:
		return true, fmt.Errorf("attempt %d of %d inconclusive (load average %.1f), the raw baseline missed the same bounds (host noise): %s",
			attempt, attempts, load, strings.Join(hosts, "; "))
	default:
		return false, fmt.Errorf("the host was too noisy to check the targets: in each of %d attempts the raw baseline missed the same bounds; run again on a quieter host (last attempt, load average %.1f: %s)",
			attempts, load, strings.Join(hosts, "; "))
	}
}

// baselineMissed reports whether a figure's raw baseline missed the bound
// ours is held to in any run, or spread over the attempt's runs by more than
// its ratio target allows.
func baselineMissed(f figure) bool {
	switch {
	case f.Raw == nil:
		return false
	case f.Max > 0:
		return slices.Max(f.RunsRaw) > f.Max
	case f.Target > 0 && len(f.RunsRaw) > 1 && f.Better == "lower":
		return slices.Max(f.RunsRaw) > f.Target*slices.Min(f.RunsRaw)
	case f.Target > 0 && len(f.RunsRaw) > 1:
		return slices.Min(f.RunsRaw) < f.Target*slices.Max(f.RunsRaw)
	}
	return false
}

func describeMiss(f figure) string {
	name := fmt.Sprintf("%s %s", f.Scenario, f.Figure)
	if f.Size > 0 {
		name += fmt.Sprintf(" %d B", f.Size)
	}
	if f.Max > 0 {
		miss := fmt.Sprintf("%s: %s %s, at most %s", name, human(f.Ours), f.Unit, human(f.Max))
		if f.Raw != nil {
			miss += fmt.Sprintf(" (raw %s, runs %s)", human(*f.Raw), humans(f.RunsRaw))
		}
		return miss
	}
	miss := fmt.Sprintf("%s: ratio %.2f, target %s", name, *f.Ratio, ratioTarget(f))
	if len(f.RunsRaw) > 1 {
		miss += fmt.Sprintf(" (raw's runs %s %s)", humans(f.RunsRaw), f.Unit)
	}
	return miss
}

func humans(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = human(x)
	}
	return strings.Join(s, " ")
}
