//go:build race

package websocket

// raceEnabled: the race detector makes sync.Pool drop Puts at random, so
// allocation counts are asserted only without it.
const raceEnabled = true
