package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// writeLossSVG draws the loss-lane figures: for each loss rate, the p50 and
// p99 age of the newest cursor state per lane, and under each bar the share
// of time it was older than 100 ms, so the chart in docs/performance.md is
// generated from a run, not drawn by hand.
func writeLossSVG(path string, figs []figure) error {
	value := func(name string) (float64, bool) {
		for _, f := range figs {
			if f.Scenario == lossScenario.name && f.Figure == name {
				return f.Ours, true
			}
		}
		return 0, false
	}
	top := 0.0
	for _, f := range figs {
		if f.Scenario == lossScenario.name && f.Unit == "ms" {
			top = max(top, f.Ours)
		}
	}
	if top == 0 {
		return nil // the scenario did not run: nothing to draw
	}
	top = float64(int(top/50)+1) * 50
	const (
		w, h         = 620, 390
		left, bottom = 60, 300
		plotW, plotH = 540, 250
		barW         = 30
		groupGap     = 50
		fontSize     = 12
	)
	p50c := []string{"#9ecae1", "#fdae6b", "#a1d99b"} // one per lossLanes entry
	p99c := []string{"#3182bd", "#e6550d", "#31a354"}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="%d">`+"\n", w, h, fontSize)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="13">Age of the newest cursor state at the receiver (light: p50, dark: p99)</text>`+"\n", left)
	fmt.Fprintf(&b, `<text x="%d" y="34" font-size="11">%d updates/s, %v RTT; under each bar: share of time older than 100 ms</text>`+"\n", left, lossUpdateRate, lossRTT)
	y := func(v float64) float64 { return bottom - v/top*plotH }
	for v := 0.0; v <= top; v += top / 5 {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%.0f ms</text>`+"\n", left, left+plotW, y(v), y(v), left-6, y(v)+4, v)
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#c00" stroke-dasharray="4,3"/>`+"\n", left, left+plotW, y(100), y(100))
	x := float64(left + 20)
	for _, loss := range lossRates {
		groupX := x
		for i, lane := range lossLanes {
			name := fmt.Sprintf("%s, %.0f %% loss: newest age ", lane.name, loss)
			p50, _ := value(name + "p50")
			p99, _ := value(name + "p99")
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%d" height="%.1f" fill="%s"/>`+"\n", x, y(p99), barW, bottom-y(p99), p99c[i])
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%d" height="%.1f" fill="%s"/>`+"\n", x+4, y(p50), barW-8, bottom-y(p50), p50c[i])
			older, _ := value(fmt.Sprintf("%s, %.0f %% loss: time older than 100 ms", lane.name, loss))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%.0f</text>`+"\n", x+barW/2, y(p99)-3, p99)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" font-size="10">%.1f%%</text>`+"\n", x+barW/2, bottom+13, older*100)
			x += barW + 6
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%.0f %% loss</text>`+"\n", (groupX+x-6)/2, bottom+32, loss)
		x += groupGap
	}
	for i, lane := range lossLanes {
		lx := float64(left+20) + float64(i)*170
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="12" height="12" fill="%s"/><text x="%.1f" y="%d">%s</text>`+"\n", lx, bottom+50, p99c[i], lx+16, bottom+61, lane.name)
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#000"/>`+"\n", left, left+plotW, bottom, bottom)
	b.WriteString("</svg>\n")
	return writeFileAtomic(path, b.String())
}

func writeFileAtomic(path, s string) error {
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, s); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}
