package main

import (
	"context"
	"flag"
	"net/url"
	"time"

	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/adapter/nats"
)

// natsFlags are the command-line options of the NATS adapter: with --nats
// several conformance servers share their rooms (§7.3).
type natsFlags struct {
	url, prefix, node string
	lease, quarantine time.Duration
}

func (f *natsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "nats", "", "NATS server `URL`: share rooms with the other hosts on it (one host without it)")
	fs.StringVar(&f.prefix, "nats-prefix", nats.DefaultPrefix, "subject and bucket prefix of this deployment on NATS")
	fs.StringVar(&f.node, "node-id", "", "this host's node id among the live hosts (default: host name and a random suffix)")
	fs.DurationVar(&f.lease, "nats-lease", nats.DefaultLeaseTTL, "host ordinal lease TTL, whole seconds (§7.3)")
	fs.DurationVar(&f.quarantine, "nats-test-quarantine", 0, "TESTS ONLY: an ordinal quarantine shorter than the spec's 300 s (§7.3)")
}

// adapter connects to NATS when --nats is set; nil otherwise.
func (f *natsFlags) adapter(ctx context.Context) (adapter.Adapter, error) {
	if f.url == "" {
		return nil, nil
	}
	start, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	a, err := nats.New(start, nats.Options{
		URL: f.url, Prefix: f.prefix, NodeID: f.node, LeaseTTL: f.lease,
		Quarantine: f.quarantine, ShortQuarantineForTests: f.quarantine != 0,
	})
	if err != nil {
		return nil, err // not a nil *nats.Adapter in a non-nil interface
	}
	return a, nil
}

// redactURL drops credentials and query from a URL before it is logged.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(the --nats URL)"
	}
	u.User, u.RawQuery = nil, ""
	return u.String()
}
