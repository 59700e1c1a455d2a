package nats

import (
	"testing"
	"time"

	"github.com/transport-io/tiogen/internal/leakcheck"
)

// Every goroutine of the adapters and of the embedded servers ends once
// the tests closed them.
func TestMain(m *testing.M) { leakcheck.Main(m, 10*time.Second) }
