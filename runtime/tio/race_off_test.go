//go:build !race

package tio

// raceEnabled reports whether the race detector is on: its sync.Pool drops
// one Put in four, so allocation counts are exact only without it.
const raceEnabled = false
