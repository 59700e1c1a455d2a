package nats

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/adapter/nats/natstest"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Short timings for the tests that watch a lease lapse and a quarantine
// end (ShortQuarantineForTests); every other test runs on the defaults.
const (
	testLease      = time.Second
	testQuarantine = 2 * time.Second
)

func shortOptions(srv interface{ URL() string }, prefix string) Options {
	return Options{URL: srv.URL(), Prefix: prefix, LeaseTTL: testLease, Quarantine: testQuarantine, ShortQuarantineForTests: true}
}

func mustNew(t *testing.T, o Options) *Adapter {
	t.Helper()
	a, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// ordinalFreeWithin polls, with adapters that come and go, until one is
// issued ordinal want, and returns when (local time) that happened.
func ordinalFreeWithin(t *testing.T, o Options, want uint16, within time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for i := 0; time.Now().Before(deadline); i++ {
		o.NodeID = fmt.Sprintf("probe-%d", i)
		a, err := New(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		got, at := a.HostOrdinal(), time.Now()
		a.Close()
		if got == want {
			return at
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("ordinal %d was not issued again within %v", want, within)
	return time.Time{}
}

// §7.3: a released ordinal waits out the quarantine, on the NATS server's
// clock, before any host is issued it again.
func TestSpec7_3_ReleasedOrdinalQuarantined(t *testing.T) {
	srv := natstest.Start(t)
	o := shortOptions(srv, "release")
	o.NodeID = "a"
	a := mustNew(t, o)
	o.NodeID = "b"
	b := mustNew(t, o)
	if a.HostOrdinal() != 0 || b.HostOrdinal() != 1 {
		t.Fatalf("first two hosts have ordinals %d and %d, want 0 and 1", a.HostOrdinal(), b.HostOrdinal())
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close (release): %v", err)
	}
	released := time.Now()
	o.NodeID = "c"
	if c := mustNew(t, o); c.HostOrdinal() != 2 {
		t.Fatalf("a host started right after ordinal 0 was released got %d, want 2", c.HostOrdinal())
	}
	at := ordinalFreeWithin(t, o, 0, testQuarantine+5*time.Second)
	if waited := at.Sub(released); waited < testQuarantine {
		t.Fatalf("ordinal 0 was issued again %v after its release, before the %v quarantine ended", waited, testQuarantine)
	}
}

// §7.3: a host that vanishes without releasing (a SIGKILL) keeps its
// ordinal blocked until its lease lapsed and the quarantine passed.
func TestSpec7_3_VanishedHostOrdinalQuarantined(t *testing.T) {
	srv := natstest.Start(t)
	o := shortOptions(srv, "vanish")
	nc, err := natsgo.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	kv, err := openBucket(ctx, js, o.Prefix+"_ordinals", o.Quarantine)
	if err != nil {
		t.Fatal(err)
	}
	// The vanished host: a claim and no renewal, no release.
	l, err := claimOrdinal(ctx, js, kv, "vanished", o.LeaseTTL, o.Quarantine)
	if err != nil {
		t.Fatal(err)
	}
	lastSeen := l.sentAt
	nc.Close()
	if l.ordinal != 0 {
		t.Fatalf("first claim got ordinal %d, want 0", l.ordinal)
	}
	at := ordinalFreeWithin(t, o, 0, testLease+testQuarantine+5*time.Second)
	if waited := at.Sub(lastSeen); waited < testLease+testQuarantine {
		t.Fatalf("a vanished host's ordinal was issued again %v after it was last seen, before its %v lease and %v quarantine", waited, testLease, testQuarantine)
	}
}

// §7.3: hosts starting at once never share an ordinal.
func TestSpec7_3_ConcurrentClaimsDistinct(t *testing.T) {
	srv := natstest.Start(t)
	const hosts = 12
	var wg sync.WaitGroup
	got := make([]*Adapter, hosts)
	errs := make([]error, hosts)
	// What is tested is which ordinals the claims get, not how fast twelve
	// JetStream calls at once are answered: on a loaded CI host (race
	// detector, other packages' tests) one took longer than the 5 s that
	// nats.go allows a call whose context has no deadline.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range hosts {
		wg.Go(func() {
			got[i], errs[i] = New(ctx, Options{URL: srv.URL(), Prefix: "race", NodeID: fmt.Sprint(i)})
		})
	}
	wg.Wait()
	seen := map[uint16]string{}
	for i, a := range got {
		if errs[i] != nil {
			t.Fatalf("host %d: %v", i, errs[i])
		}
		defer a.Close()
		if other, ok := seen[a.HostOrdinal()]; ok {
			t.Fatalf("hosts %s and %d both hold ordinal %d", other, i, a.HostOrdinal())
		}
		seen[a.HostOrdinal()] = fmt.Sprint(i)
	}
}

// §7.3: with every ordinal live or quarantined a host refuses to start,
// saying why.
func TestSpec7_3_NoFreeOrdinalRefusesToStart(t *testing.T) {
	srv := natstest.Start(t)
	nc, err := natsgo.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	kv, err := openBucket(ctx, js, "full_ordinals", adapter.OrdinalQuarantine)
	if err != nil {
		t.Fatal(err)
	}
	// Leases of 1,023 other hosts, written as a claim writes them, then
	// the last free ordinal claimed the ordinary way.
	for i := range adapter.MaxHostOrdinals - 1 {
		if _, err := js.Publish(ctx, "$KV.full_ordinals."+ordinalKey(i), []byte(fmt.Sprint(i)),
			jetstream.WithExpectLastSequencePerSubject(0), jetstream.WithMsgTTL(time.Minute)); err != nil {
			t.Fatalf("lease %d: %v", i, err)
		}
	}
	if l, err := claimOrdinal(ctx, js, kv, "last", time.Minute, adapter.OrdinalQuarantine); err != nil || l.ordinal != adapter.MaxHostOrdinals-1 {
		t.Fatalf("claim of the last free ordinal: %+v, %v", l, err)
	}
	_, err = New(ctx, Options{URL: srv.URL(), Prefix: "full"})
	if !errors.Is(err, &wire.Error{Code: wire.TooManyStreams}) || !strings.Contains(err.Error(), "1,024 host ordinals") {
		t.Fatalf("1,025th host: err = %v, want WT_TOO_MANY_STREAMS naming the 1,024 ordinals", err)
	}
}

// A bucket made with a shorter quarantine cannot be trusted by a host that
// needs the longer one.
func TestSpec7_3_BucketWithShortMarkersRefused(t *testing.T) {
	srv := natstest.Start(t)
	a := mustNew(t, shortOptions(srv, "mixed"))
	a.Close()
	_, err := New(context.Background(), Options{URL: srv.URL(), Prefix: "mixed"})
	if err == nil || !strings.Contains(err.Error(), "shorter than the ordinal quarantine") {
		t.Fatalf("host needing 300 s over a bucket keeping markers 2 s: err = %v", err)
	}
}

func TestQuarantineBelowSpecNeedsTestOption(t *testing.T) {
	_, err := New(context.Background(), Options{URL: "nats://127.0.0.1:1", Quarantine: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "§7.3") {
		t.Fatalf("a 60 s quarantine without ShortQuarantineForTests: err = %v", err)
	}
}

// §7.3: a host that cannot renew its lease in time is fenced (the engine
// then stops issuing origins and closes its sessions) before the server
// could let the lease lapse, and stays fenced when NATS returns.
func TestSpec7_3_HostThatCannotRenewIsFenced(t *testing.T) {
	srv := natstest.Start(t)
	a := mustNew(t, shortOptions(srv, "fence"))
	fenced := make(chan adapter.Event, 1)
	defer a.Events(func(e adapter.Event) {
		if e.Kind == adapter.Fenced {
			fenced <- e
		}
	})()
	time.Sleep(2 * testLease) // renewals keep the lease alive meanwhile
	if a.Fenced() {
		t.Fatal("a host renewing normally was fenced")
	}
	srv.Stop()
	stopped := time.Now()
	select {
	case e := <-fenced:
		if took := time.Since(stopped); took > testLease {
			t.Fatalf("fenced %v after NATS went away, later than its %v lease could lapse", took, testLease)
		}
		if e.Err == nil || !strings.Contains(e.Err.Error(), "could not be renewed") {
			t.Fatalf("Fenced event error %v", e.Err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no Fenced event within 5 s of NATS going away")
	}
	srv.Start(t)
	if !a.Fenced() {
		t.Fatal("Fenced() is false after the Fenced event")
	}
}

// A hung server (accepting, answering nothing, as under SIGSTOP) is noticed
// by unanswered pings within about PingInterval × (MaxPingsOutstanding+1).
func TestHungServerDetected(t *testing.T) {
	srv := natstest.Start(t)
	proxy := natstest.NewProxy(t, strings.TrimPrefix(srv.URL(), "nats://"))
	a := mustNew(t, Options{URL: proxy.URL(), Prefix: "hung"})
	events := make(chan adapter.Event, 4)
	defer a.Events(func(e adapter.Event) { events <- e })()
	proxy.Freeze()
	frozen := time.Now()
	bound := PingInterval*(MaxPingsOutstanding+1) + time.Second
	select {
	case e := <-events:
		if e.Kind != adapter.Disconnected {
			t.Fatalf("first event after the freeze is %v, want disconnected", e.Kind)
		}
		if took := time.Since(frozen); took > bound {
			t.Fatalf("hung server noticed after %v, want within %v", took, bound)
		}
	case <-time.After(bound):
		t.Fatalf("hung server not noticed within %v", bound)
	}
	if err := a.Broadcast(context.Background(), adapter.Message{Room: "r", Lane: wire.Reliable, Frame: []byte{1}}); !errors.Is(err, adapter.ErrUnreachable) {
		t.Fatalf("Broadcast to a hung server: %v, want adapter.ErrUnreachable", err)
	}
	proxy.Thaw()
	select {
	case e := <-events:
		if e.Kind != adapter.Reconnected {
			t.Fatalf("event after the thaw is %v, want reconnected", e.Kind)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no reconnection within 5 s of the thaw")
	}
}

// §5.1: a server whose max_payload cannot carry a maximal frame with its
// envelope is refused at start, saying what to change.
func TestSmallMaxPayloadRefused(t *testing.T) {
	srv, err := natstest.New(t.TempDir(), -1, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	_, err = New(context.Background(), Options{URL: srv.URL()})
	if err == nil || !strings.Contains(err.Error(), "max_payload is 1048576") || !strings.Contains(err.Error(), "2MB") {
		t.Fatalf("server with max_payload 1 MiB: err = %v", err)
	}
}

// A renewal the server applied but whose answer was lost (the server froze
// with it in its socket) leaves the key a revision ahead: the next renewal
// adopts it instead of fencing a host that holds its lease.
func TestSpec7_3_RenewalWithLostAnswerIsAdopted(t *testing.T) {
	srv := natstest.Start(t)
	nc, err := natsgo.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	kv, err := openBucket(ctx, js, "lost_ordinals", adapter.OrdinalQuarantine)
	if err != nil {
		t.Fatal(err)
	}
	l, err := claimOrdinal(ctx, js, kv, "host", time.Minute, adapter.OrdinalQuarantine)
	if err != nil {
		t.Fatal(err)
	}
	// The applied renewal the lease never heard about.
	if _, err := js.Publish(ctx, l.subject, l.value, jetstream.WithExpectLastSequencePerSubject(l.rev), jetstream.WithMsgTTL(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := l.renew(ctx); err != nil {
		t.Fatalf("renewal after an applied renewal with a lost answer: %v", err)
	}
	// Another writer's value is not adopted: that is a lost lease.
	if _, err := js.Publish(ctx, l.subject, []byte("someone else"), jetstream.WithExpectLastSequencePerSubject(l.rev)); err != nil {
		t.Fatal(err)
	}
	if err := l.renew(ctx); !isConflict(err) {
		t.Fatalf("renewal over another writer's value: %v, want a conflict", err)
	}
}
