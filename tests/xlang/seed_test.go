package xlang

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// corpusRand is the random source of a seeded corpus and its seed: the
// default seed, or the one the environment variable env names, logged so a
// failing corpus can be built again.
func corpusRand(t *testing.T, env string) (*rand.Rand, uint64) {
	t.Helper()
	seed := uint64(20261207)
	if s := os.Getenv(env); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", env, s, err)
		}
		seed = n
	}
	t.Logf("corpus seed %d (set %s to try another)", seed, env)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), seed
}
