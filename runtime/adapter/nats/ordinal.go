package nats

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/wire"
)

// A host's ordinal (§7.3) is a key "ordinal.<n>" in a JetStream KV bucket,
// held while its value is live. Every timing rule is the NATS server's, on
// its clock:
//
//   - A claim publishes the key expecting no message at all on its subject,
//     so it fails over a live lease and over a marker alike (kv.Create
//     would succeed over a marker).
//   - The lease carries a message TTL and is renewed by publishing again,
//     expecting the last revision (kv.Update would drop the TTL).
//   - When a lease lapses the server replaces it by a marker that lives for
//     the bucket's LimitMarkerTTL, the quarantine; a release on shutdown
//     purges the key leaving a marker with the same TTL. While a marker
//     lives the key has a message, so no claim succeeds: the ordinal comes
//     back only a quarantine after its holder was last seen.
type lease struct {
	js      jetstream.JetStream
	subject string
	key     string
	kv      jetstream.KeyValue
	value   []byte
	ordinal uint16
	ttl     time.Duration
	quar    time.Duration
	rev     uint64    // the lease goroutine's, after the claim
	sentAt  time.Time // local time the live revision was sent: the server's TTL runs from later
	fenced  atomic.Bool
}

func ordinalKey(n int) string { return "ordinal." + strconv.Itoa(n) }

// openBucket opens the ordinal bucket, creating it on first use, and
// checks that its markers last the whole quarantine.
func openBucket(ctx context.Context, js jetstream.JetStream, name string, quarantine time.Duration) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:         name,
			Description:    "transport-io host ordinals (§7.3): one live key per session host",
			History:        1,
			Storage:        jetstream.FileStorage, // a NATS restart must not free every ordinal at once
			LimitMarkerTTL: quarantine,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, name) // another host made it first
		}
	}
	if err != nil {
		return nil, fmt.Errorf("nats: opening the host-ordinal bucket %q in JetStream: %w (is JetStream enabled on the NATS server?)", name, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("nats: reading the host-ordinal bucket %q: %w", name, err)
	}
	if st.LimitMarkerTTL() < quarantine {
		return nil, fmt.Errorf("nats: the host-ordinal bucket %q keeps markers %v, shorter than the ordinal quarantine of %v (§7.3): "+
			"it was made by a host with other options; delete the bucket while no host runs, or give this deployment another Prefix",
			name, st.LimitMarkerTTL(), quarantine)
	}
	return kv, nil
}

// claimOrdinal takes the lowest ordinal whose key has no message: neither
// a live lease nor a quarantine marker.
func claimOrdinal(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, nodeID string, ttl, quarantine time.Duration) (*lease, error) {
	taken, err := takenOrdinals(ctx, kv)
	if err != nil {
		return nil, err
	}
	// The value names this claim, not only the host: a renewal can then
	// tell its own applied write from anyone else's.
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	l := &lease{js: js, kv: kv, value: []byte(nodeID + " " + hex.EncodeToString(nonce[:])), ttl: ttl, quar: quarantine}
	for n := range adapter.MaxHostOrdinals {
		if taken[n] {
			continue
		}
		key := ordinalKey(n)
		subject := "$KV." + kv.Bucket() + "." + key
		sent := time.Now()
		ack, err := js.Publish(ctx, subject, l.value,
			jetstream.WithExpectLastSequencePerSubject(0), jetstream.WithMsgTTL(ttl))
		if isConflict(err) {
			continue // claimed by another host since the scan
		}
		if err != nil {
			return nil, fmt.Errorf("nats: claiming host ordinal %d: %w", n, err)
		}
		l.ordinal, l.key, l.subject, l.rev, l.sentAt = uint16(n), key, subject, ack.Sequence, sent
		return l, nil
	}
	return nil, &wire.Error{
		Code: wire.TooManyStreams,
		Message: fmt.Sprintf("all 1,024 host ordinals in bucket %q are held by live hosts or quarantined for %v after their host was last seen (§7.3)",
			kv.Bucket(), quarantine),
		Remedy: "Run fewer session hosts, or wait for departed hosts' ordinals to leave quarantine; this host does not start.",
	}
}

// listQuiet is how long the listing of taken ordinals waits for a further
// entry before it takes the list as complete. The watcher's own "caught up"
// marker never comes when an entry expires between the watch's start and its
// delivery (a lease lapsing, a marker ageing out), so it cannot be the only
// end. A list cut short is safe: every claim is a compare-and-set, and a
// claim of an ordinal the list missed fails and moves on.
const listQuiet = 250 * time.Millisecond

// takenOrdinals lists the ordinals whose key holds a message (a live lease
// or a marker), from one pass over the bucket's last entries.
func takenOrdinals(ctx context.Context, kv jetstream.KeyValue) ([]bool, error) {
	w, err := kv.WatchAll(ctx, jetstream.MetaOnly())
	if err != nil {
		return nil, fmt.Errorf("nats: listing host ordinals: %w", err)
	}
	defer w.Stop()
	taken := make([]bool, adapter.MaxHostOrdinals)
	quiet := time.NewTimer(listQuiet)
	defer quiet.Stop()
	for {
		select {
		case e := <-w.Updates():
			if e == nil {
				return taken, nil // caught up
			}
			if n, err := strconv.Atoi(strings.TrimPrefix(e.Key(), "ordinal.")); err == nil && n >= 0 && n < len(taken) {
				taken[n] = true
			}
			quiet.Reset(listQuiet)
		case <-quiet.C:
			return taken, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("nats: listing host ordinals: %w", ctx.Err())
		}
	}
}

func isConflict(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// renew extends the lease by one TTL. A conflict is either a renewal of
// ours that the server applied while its answer was lost (a frozen server
// reads what was sent before it froze): the key still holds this claim's
// value, and the renewal is retried on its revision; or the key is no
// longer ours, because the lease lapsed on the server.
func (l *lease) renew(ctx context.Context) error {
	sent := time.Now()
	ack, err := l.js.Publish(ctx, l.subject, l.value,
		jetstream.WithExpectLastSequencePerSubject(l.rev), jetstream.WithMsgTTL(l.ttl))
	if isConflict(err) {
		e, gerr := l.kv.Get(ctx, l.key)
		if gerr != nil || e.Operation() != jetstream.KeyValuePut || !bytes.Equal(e.Value(), l.value) {
			return err
		}
		l.rev = e.Revision()
		ack, err = l.js.Publish(ctx, l.subject, l.value,
			jetstream.WithExpectLastSequencePerSubject(l.rev), jetstream.WithMsgTTL(l.ttl))
	}
	if err != nil {
		return err
	}
	l.rev, l.sentAt = ack.Sequence, sent
	return nil
}

// fenceAt is when this host must stop trusting its lease: a quarter TTL
// before the earliest moment the server could let it lapse (the server's
// TTL runs from when it stored the revision, after sentAt).
func (l *lease) fenceAt() time.Time { return l.sentAt.Add(l.ttl - l.ttl/4) }

// run renews the lease every quarter TTL, retrying quickly after a failure,
// until done is closed. When the lease cannot be renewed in time it calls
// fence once and stops.
func (l *lease) run(done <-chan struct{}, fence func(error)) {
	every, retry := l.ttl/4, min(l.ttl/4, 100*time.Millisecond)
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		// One attempt waits at most a quarter TTL (a second at most): a
		// request sent just before the connection dropped is never
		// answered, and the retry on the new connection must not wait
		// for it until the fence.
		deadline := time.Now().Add(min(l.ttl/4, time.Second))
		if f := l.fenceAt(); f.Before(deadline) {
			deadline = f
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		err := l.renew(ctx)
		cancel()
		switch {
		case err == nil:
			t.Reset(every)
		case isConflict(err) || !time.Now().Before(l.fenceAt()):
			l.fenced.Store(true)
			fence(fmt.Errorf("nats: host ordinal %d could not be renewed before its lease of %v could lapse: %w", l.ordinal, l.ttl, err))
			return
		default:
			t.Reset(retry)
		}
	}
}

// release ends the lease at once, leaving the ordinal quarantined for the
// bucket's marker TTL from now (§7.3). A fenced lease is left to lapse.
func (l *lease) release(ctx context.Context) error {
	if l.fenced.Load() {
		return nil
	}
	if err := l.kv.Purge(ctx, l.key, jetstream.LastRevision(l.rev), jetstream.PurgeTTL(l.quar)); err != nil {
		return fmt.Errorf("nats: releasing host ordinal %d (it lapses by itself within %v, then waits out the quarantine): %w", l.ordinal, l.ttl, err)
	}
	return nil
}
