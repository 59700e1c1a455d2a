package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// sample is one figure from one run: ours and, when there is a baseline, the
// raw transport's in the same run.
type sample struct {
	Figure      string
	Size        int // payload bytes, 0 when it does not apply
	Concurrency int // callers or sessions, 0 when it does not apply
	Unit        string
	Lower       bool // lower is better (latency, memory)
	Ours        float64
	Raw         float64
	HasRaw      bool
	Target      float64 // the ratio ours/raw must reach: at least Target, or at most for a Lower figure; 0 for none
	Max         float64 // the most ours may be, in Unit (a lower-is-better bound); 0 for none
	Note        string
	// Values, when set, makes this a peer figure: one value per subject
	// (subjectOrder) in place of Ours and Raw.
	Values map[string]float64
}

// figure is the median of a sample over the runs, as printed.
type figure struct {
	Scenario    string    `json:"scenario"`
	Figure      string    `json:"figure"`
	Size        int       `json:"size,omitempty"`
	Concurrency int       `json:"concurrency,omitempty"`
	Unit        string    `json:"unit"`
	Better      string    `json:"better"`
	Ours        float64   `json:"ours"`
	Raw         *float64  `json:"raw,omitempty"`
	Ratio       *float64  `json:"ratio,omitempty"` // median of the per-run ours/raw
	Target      float64   `json:"target,omitempty"`
	Max         float64   `json:"max,omitempty"`
	Met         *bool     `json:"met,omitempty"`
	RunsOurs    []float64 `json:"runs_ours,omitempty"`
	RunsRaw     []float64 `json:"runs_raw,omitempty"`
	Load        float64   `json:"load_average"`
	Note        string    `json:"note,omitempty"`
	// A peer figure's medians, runs and ratios, by subject.
	Values map[string]float64   `json:"values,omitempty"`
	RunsBy map[string][]float64 `json:"runs_by_subject,omitempty"`
	Ratios map[string]float64   `json:"ratios,omitempty"` // "tiogen WT/centrifuge": median of the per-run ratios
}

func sampleKey(s sample) string { return fmt.Sprintf("%s/%d/%d", s.Figure, s.Size, s.Concurrency) }

// summarize groups each run's samples by figure, keeping the first run's
// order, and takes the medians of ours, of raw and of the per-run ratios.
func summarize(scenario string, runs [][]sample) []figure {
	var order []string
	byKey := map[string][]sample{}
	for _, run := range runs {
		for _, s := range run {
			k := sampleKey(s)
			if _, ok := byKey[k]; !ok {
				order = append(order, k)
			}
			byKey[k] = append(byKey[k], s)
		}
	}
	var out []figure
	for _, k := range order {
		ss := byKey[k]
		first := ss[0]
		f := figure{
			Scenario: scenario, Figure: first.Figure, Size: first.Size, Concurrency: first.Concurrency,
			Unit: first.Unit, Better: "higher", Target: first.Target, Max: first.Max, Note: first.Note,
		}
		if first.Lower {
			f.Better = "lower"
		}
		if first.Values != nil {
			summarizePeers(&f, ss)
			out = append(out, f)
			continue
		}
		for _, s := range ss {
			f.RunsOurs = append(f.RunsOurs, round(s.Ours))
			if s.HasRaw {
				f.RunsRaw = append(f.RunsRaw, round(s.Raw))
			}
		}
		f.Ours = median(f.RunsOurs)
		if f.Max > 0 {
			met := f.Ours <= f.Max
			f.Met = &met
		}
		if len(f.RunsRaw) > 0 {
			raw := median(f.RunsRaw)
			f.Raw = &raw
			// The ratio pairs each run's ours with its raw, measured
			// moments apart, and takes the median: on a shared host the
			// load drifts between runs more than within one.
			var ratios []float64
			for _, s := range ss {
				if s.HasRaw && s.Raw > 0 {
					ratios = append(ratios, s.Ours/s.Raw)
				}
			}
			if len(ratios) > 0 {
				ratio := math.Round(median(ratios)*1000) / 1000
				f.Ratio = &ratio
				if f.Target > 0 {
					met := ratio >= f.Target
					if first.Lower {
						met = ratio <= f.Target
					}
					f.Met = &met
				}
			}
		}
		out = append(out, f)
	}
	return out
}

// summarizePeers takes each subject's median over the runs and, for each
// tiogen mapping against each other subject, the median of the per-run
// ratios.
func summarizePeers(f *figure, ss []sample) {
	f.Values, f.RunsBy, f.Ratios = map[string]float64{}, map[string][]float64{}, map[string]float64{}
	for _, s := range ss {
		for k, v := range s.Values {
			f.RunsBy[k] = append(f.RunsBy[k], round(v))
		}
	}
	for k, v := range f.RunsBy {
		f.Values[k] = median(v)
	}
	for _, pair := range slices.Concat(ratioPairs, crossedRatios) {
		var ratios []float64
		for _, s := range ss {
			a, okA := s.Values[pair[0]]
			b, okB := s.Values[pair[1]]
			if okA && okB && b > 0 {
				ratios = append(ratios, a/b)
			}
		}
		if len(ratios) > 0 {
			f.Ratios[pair[0]+"/"+pair[1]] = math.Round(median(ratios)*1000) / 1000
		}
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return round((s[n/2-1] + s[n/2]) / 2)
}

// round keeps four significant digits, enough for figures that move by more
// than that between runs.
func round(v float64) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	p := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

func printTable(w io.Writer, all []figure) {
	var figs, peers []figure
	for _, f := range all {
		if f.Values != nil {
			peers = append(peers, f)
		} else {
			figs = append(figs, f)
		}
	}
	if len(peers) > 0 {
		defer printPeerTable(w, peers)
	}
	if len(figs) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tfigure\tsize\tconc\tours\traw\tratio\ttarget\tunit\t")
	for _, f := range figs {
		raw, ratio, target := "-", "-", "-"
		if f.Raw != nil {
			raw = human(*f.Raw)
		}
		if f.Ratio != nil {
			ratio = fmt.Sprintf("%.2f", *f.Ratio)
		}
		if f.Met != nil {
			verdict := map[bool]string{true: "ok", false: "MISSED"}[*f.Met]
			if f.Max > 0 {
				target = fmt.Sprintf("≤%s %s", human(f.Max), verdict)
			} else {
				target = fmt.Sprintf("%s %s", ratioTarget(f), verdict)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", f.Scenario, f.Figure, dash(f.Size), dash(f.Concurrency),
			human(f.Ours), raw, ratio, target, f.Unit)
	}
	tw.Flush()
}

// ratioTarget is how a figure's ratio target reads: "≥0.95" for a figure
// where higher is better, "≤1.2" for one where lower is.
func ratioTarget(f figure) string {
	if f.Better == "lower" {
		return fmt.Sprintf("≤%g", f.Target)
	}
	return fmt.Sprintf("≥%g", f.Target)
}

// printPeerTable prints the peer figures: one column per subject, then the
// ratios of each tiogen mapping to the others ("-" where a subject was not
// measured); a crossed subject and its ratios only where measured.
func printPeerTable(w io.Writer, figs []figure) {
	subjects, pairs := slices.Clone(subjectOrder), slices.Clone(ratioPairs)
	for _, s := range crossedSubjects {
		if slices.ContainsFunc(figs, func(f figure) bool { _, ok := f.Values[s]; return ok }) {
			subjects = append(subjects, s)
		}
	}
	for _, pair := range crossedRatios {
		if slices.ContainsFunc(figs, func(f figure) bool { _, ok := f.Ratios[pair[0]+"/"+pair[1]]; return ok }) {
			pairs = append(pairs, pair)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "scenario\tfigure\tsize\tconc\t" + strings.Join(subjects, "\t")
	for _, pair := range pairs {
		head += "\t" + shortSubject(pair[0]) + "/" + shortSubject(pair[1])
	}
	fmt.Fprintln(tw, head+"\tunit\t")
	for _, f := range figs {
		row := fmt.Sprintf("%s\t%s\t%s\t%s", f.Scenario, f.Figure, dash(f.Size), dash(f.Concurrency))
		for _, s := range subjects {
			v, ok := f.Values[s]
			row += "\t" + map[bool]string{true: human(v), false: "-"}[ok]
		}
		for _, pair := range pairs {
			r, ok := f.Ratios[pair[0]+"/"+pair[1]]
			row += "\t" + map[bool]string{true: fmt.Sprintf("%.2f", r), false: "-"}[ok]
		}
		fmt.Fprintln(tw, row+"\t"+f.Unit+"\t")
	}
	tw.Flush()
}

func dash(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func human(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	default:
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
	}
}

// latencies collects round-trip or delivery times, bounded by its capacity.
type latencies []time.Duration

// percentile is the q-quantile (0 < q ≤ 1) in milliseconds, nearest rank.
func (l latencies) percentile(q float64) float64 {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return float64(s[max(i, 0)]) / float64(time.Millisecond)
}

// perSecond is n events over d.
func perSecond(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
