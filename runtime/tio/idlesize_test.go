package tio

import (
	"testing"
	"unsafe"

	"github.com/transport-io/tiogen/runtime/wire"
)

// An idle session's structures stay in the size classes docs/performance.md
// accounts for (its section on idle WebTransport sessions): a field added
// past them costs every idle session the next class, not its own bytes.
func TestIdleSessionStructuresKeepTheirSizeClasses(t *testing.T) {
	for _, c := range []struct {
		name       string
		size, most uintptr
	}{
		{"session", unsafe.Sizeof(session{}), 416},
		{"emitQueue", unsafe.Sizeof(emitQueue{}), 128},
		// the emit reader's, held for the session's life
		{"wire.Reader", unsafe.Sizeof(wire.Reader{}), 192},
	} {
		if c.size > c.most {
			t.Errorf("%s is %d B, over its %d B size class", c.name, c.size, c.most)
		}
	}
}
