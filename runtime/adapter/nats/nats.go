// Package nats is the adapter.Adapter that spreads rooms over several
// session hosts through one NATS server or cluster: one connection per
// host, a subject per room, and a host ordinal (§7.3) leased from a
// JetStream KV bucket.
//
// What it guarantees, and how:
//
//   - A host subscribes to a room's subject only while it has a local
//     member, so it never receives traffic for rooms it does not serve.
//   - A broadcast is published once, as the frame the engine encoded once
//     (§7.3) inside a small envelope naming the sender, the room and the
//     except list; the server does not echo it to its publisher, and a
//     receiver drops anything carrying its own node id.
//   - All room subscriptions share one channel and one connection, so what
//     one host publishes reaches every other host in publishing order,
//     within a room and across rooms.
//   - Nothing is buffered while NATS is unreachable: a broadcast then fails
//     at once with adapter.ErrUnreachable and is counted. Each envelope
//     carries the sender's sequence in its room, and a receiver that sees
//     one skipped reports a Gap; nothing is ever delivered twice.
//   - The connection reconnects every 100 ms for ever, restoring every
//     subscription, and a hung server is noticed by unanswered pings within
//     about a second.
package nats

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Defaults of Options.
const (
	DefaultPrefix      = "tio"
	DefaultLeaseTTL    = 10 * time.Second
	DefaultJoinTimeout = 2 * time.Second
	// ReconnectWait is the pause between reconnection attempts: NATS is
	// back in use within about this long of its return.
	ReconnectWait = 100 * time.Millisecond
	// PingInterval and MaxPingsOutstanding bound how long a hung server
	// (accepting nothing, closing nothing) goes unnoticed: about 1 s.
	PingInterval        = 500 * time.Millisecond
	MaxPingsOutstanding = 2
	// inboxSize is how many received messages wait for dispatch; beyond it
	// NATS drops them as a slow consumer, which receivers see as a Gap.
	inboxSize = 1 << 16
)

// Options configure an Adapter.
type Options struct {
	// URL is the NATS server (or a comma-separated list of a cluster's).
	URL string
	// NodeID names this host among the live ones; the default is the host
	// name and a random suffix.
	NodeID string
	// Prefix namespaces the deployment: room subjects are "<Prefix>.…" and
	// the ordinal bucket is "<Prefix>_ordinals". Letters, digits, '-' and
	// '_' only. Default "tio".
	Prefix string
	// LeaseTTL is how long a host's ordinal lease lives without renewal;
	// it is renewed every quarter of it, and a host that cannot renew for
	// three quarters of it is fenced. Whole seconds, at least 1 s; default
	// 10 s. Every host of a deployment should use the same value.
	LeaseTTL time.Duration
	// Quarantine is how long an ordinal waits after its holder was last
	// seen before another host may claim it (§7.3). It is fixed when the
	// bucket is made. Default and minimum adapter.OrdinalQuarantine;
	// shorter only with ShortQuarantineForTests.
	Quarantine time.Duration
	// ShortQuarantineForTests allows a Quarantine below the spec's 300 s,
	// so a test can watch an ordinal come back. Never in production: a
	// reissued ordinal could then meet sequence state that still exists.
	ShortQuarantineForTests bool
	// JoinTimeout bounds how long Join waits for the server to confirm a
	// new subscription. Default 2 s.
	JoinTimeout time.Duration
	// NATS adds connection options (credentials, TLS); they cannot undo
	// the reconnection and buffering options this package relies on.
	NATS []natsgo.Option
}

var prefixPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func (o Options) withDefaults() (Options, error) {
	if o.URL == "" {
		return o, errors.New("nats: Options.URL is empty: pass the NATS server's URL, e.g. nats://127.0.0.1:4222")
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if !prefixPattern.MatchString(o.Prefix) {
		return o, fmt.Errorf("nats: Options.Prefix %q may hold only letters, digits, '-' and '_'", o.Prefix)
	}
	if o.NodeID == "" {
		host, _ := os.Hostname()
		var b [6]byte
		_, _ = rand.Read(b[:])
		o.NodeID = host + "-" + hex.EncodeToString(b[:])
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.LeaseTTL < time.Second || o.LeaseTTL%time.Second != 0 {
		return o, fmt.Errorf("nats: Options.LeaseTTL %v must be whole seconds, at least 1 s (a NATS message TTL)", o.LeaseTTL)
	}
	if o.Quarantine == 0 {
		o.Quarantine = adapter.OrdinalQuarantine
	}
	if o.Quarantine < adapter.OrdinalQuarantine && !o.ShortQuarantineForTests {
		return o, fmt.Errorf("nats: Options.Quarantine %v is below the %v an ordinal must wait before reuse (§7.3)", o.Quarantine, adapter.OrdinalQuarantine)
	}
	if o.Quarantine < time.Second || o.Quarantine%time.Second != 0 {
		return o, fmt.Errorf("nats: Options.Quarantine %v must be whole seconds, at least 1 s", o.Quarantine)
	}
	if o.JoinTimeout == 0 {
		o.JoinTimeout = DefaultJoinTimeout
	}
	return o, nil
}

// Stats count what an Adapter did, since it started.
type Stats struct {
	Published     uint64 // broadcasts handed to NATS
	PublishFailed uint64 // broadcasts NATS could not take: the other hosts missed them
	Delivered     uint64 // remote broadcasts delivered to the engine
	Gaps          uint64 // Gap events: a sender's broadcasts missed here
	Malformed     uint64 // messages on a room subject that were not an envelope
	SlowConsumer  uint64 // times NATS dropped messages this host read too slowly
	Disconnects   uint64
	Reconnects    uint64
}

// Adapter is a session host's connection to the others through NATS.
type Adapter struct {
	opts       Options
	nc         *natsgo.Conn
	lease      *lease
	maxPayload int
	msgs       chan *natsgo.Msg
	done       chan struct{}
	wg         sync.WaitGroup

	subs   adapter.Listeners[adapter.Message]
	events adapter.Listeners[adapter.Event]

	mu     sync.Mutex
	rooms  map[string]*room
	closed bool

	pubMu   sync.Mutex
	seq     map[string]*sequence // per room this host broadcast to
	sweepAt int                  // len(seq) at which idle sequences are dropped
	buf     []byte

	published, publishFailed, delivered, gaps, malformed, slow, disconnects, reconnects atomic.Uint64
}

// sequence numbers this host's broadcasts to one room.
type sequence struct {
	subject      string
	stream, last uint64
	used         time.Time
}

// Sequences idle this long are dropped (a later broadcast starts a new
// stream), so a host broadcasting to ever new rooms keeps bounded state.
const (
	sequenceIdle  = time.Minute
	minSweepRooms = 1024
)

// room is one subscribed room.
type room struct {
	name  string
	peers map[string]struct{}
	sub   *natsgo.Subscription
	// ready is closed once the server confirmed the subscription (or the
	// confirmation failed, readyErr).
	ready    chan struct{}
	readyErr error
	// last is the dispatcher's: per sending node, the stream and last
	// sequence seen.
	last map[string]seen
	// suspect is set when this host lost NATS while subscribed: broadcasts
	// may have been lost then from senders it had not yet heard from, so
	// one whose first sequence here is not 1 is reported as a Gap.
	suspect bool
}

type seen struct {
	node        string
	stream, seq uint64
}

var _ adapter.Adapter = (*Adapter)(nil)

// New connects to NATS, checks that a maximal frame fits the server's
// max_payload, claims a host ordinal (§7.3) and subscribes to room "".
// It fails, having released everything, when NATS is unreachable, the
// payload limit is too small, JetStream is off, or no ordinal is free.
func New(ctx context.Context, opts Options) (*Adapter, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	a := &Adapter{
		opts:    opts,
		msgs:    make(chan *natsgo.Msg, inboxSize),
		done:    make(chan struct{}),
		rooms:   make(map[string]*room),
		seq:     make(map[string]*sequence),
		sweepAt: minSweepRooms,
	}
	natsOpts := append(append([]natsgo.Option(nil), opts.NATS...),
		natsgo.Name("tio "+opts.NodeID),
		natsgo.NoEcho(),
		natsgo.ReconnectBufSize(-1), // fail loudly rather than buffer and lose (§ outages, package doc)
		natsgo.MaxReconnects(-1),
		natsgo.ReconnectWait(ReconnectWait),
		natsgo.PingInterval(PingInterval),
		natsgo.MaxPingsOutstanding(MaxPingsOutstanding),
		natsgo.DisconnectErrHandler(func(_ *natsgo.Conn, err error) {
			a.disconnects.Add(1)
			a.suspectRooms()
			a.events.Call(adapter.Event{Kind: adapter.Disconnected, Err: err})
		}),
		natsgo.ReconnectHandler(func(*natsgo.Conn) {
			// nats.go calls this before the restored subscriptions have
			// reached the server; a round trip confirms them, so that a
			// broadcast another host makes on hearing of it is not lost.
			// Once connected again, a failed round trip means NATS is
			// gone again, and a later reconnection reports it.
			if err := a.flush(); err != nil && !a.nc.IsConnected() {
				return
			}
			a.reconnects.Add(1)
			a.events.Call(adapter.Event{Kind: adapter.Reconnected})
		}),
		natsgo.ErrorHandler(func(_ *natsgo.Conn, _ *natsgo.Subscription, err error) {
			if errors.Is(err, natsgo.ErrSlowConsumer) {
				a.slow.Add(1)
			}
		}),
	)
	if a.nc, err = natsgo.Connect(opts.URL, natsOpts...); err != nil {
		return nil, fmt.Errorf("nats: connecting to the NATS server: %w (is it running, and is the URL right?)", err)
	}
	if err := a.start(ctx); err != nil {
		a.nc.Close()
		return nil, err
	}
	a.wg.Add(2)
	go func() { defer a.wg.Done(); a.dispatch() }()
	go func() { defer a.wg.Done(); a.lease.run(a.done, a.fence) }()
	return a, nil
}

func (a *Adapter) start(ctx context.Context) error {
	need := maxFrame + envelopeBudget
	if a.maxPayload = int(a.nc.MaxPayload()); a.maxPayload < need {
		return fmt.Errorf("nats: the NATS server's max_payload is %d bytes, but a maximal frame (1 MiB and its 12-byte header, §5.1) "+
			"with the adapter's envelope needs %d: set max_payload to at least 2MB in the server's configuration", a.maxPayload, need)
	}
	js, err := jetstream.New(a.nc)
	if err != nil {
		return fmt.Errorf("nats: JetStream: %w", err)
	}
	kv, err := openBucket(ctx, js, a.opts.Prefix+"_ordinals", a.opts.Quarantine)
	if err != nil {
		return err
	}
	if a.lease, err = claimOrdinal(ctx, js, kv, a.opts.NodeID, a.opts.LeaseTTL, a.opts.Quarantine); err != nil {
		return err
	}
	sub, err := a.nc.ChanSubscribe(roomSubject(a.opts.Prefix, ""), a.msgs)
	if err == nil {
		err = a.flush()
	}
	if err != nil {
		_ = a.lease.release(context.Background())
		return fmt.Errorf("nats: subscribing: %w", err)
	}
	a.mu.Lock() // the connection's handlers (suspectRooms) may already run
	a.rooms[""] = &room{sub: sub, ready: closedChan, last: make(map[string]seen)}
	a.mu.Unlock()
	return nil
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (a *Adapter) flush() error {
	ctx, cancel := context.WithTimeout(context.Background(), a.opts.JoinTimeout)
	defer cancel()
	return a.nc.FlushWithContext(ctx)
}

// fence is the lease goroutine's: the ordinal can no longer be trusted.
func (a *Adapter) fence(err error) {
	a.events.Call(adapter.Event{Kind: adapter.Fenced, Err: err})
}

// NodeID names this host.
func (a *Adapter) NodeID() string { return a.opts.NodeID }

// HostOrdinal is the ordinal this host leased (§7.3).
func (a *Adapter) HostOrdinal() uint16 { return a.lease.ordinal }

// Fenced reports whether this host lost its lease (an adapter.Fenced event
// was sent).
func (a *Adapter) Fenced() bool { return a.lease.fenced.Load() }

// Connected reports whether the connection to NATS is up.
func (a *Adapter) Connected() bool { return a.nc.IsConnected() }

// Stats returns the adapter's counters.
func (a *Adapter) Stats() Stats {
	return Stats{
		Published: a.published.Load(), PublishFailed: a.publishFailed.Load(), Delivered: a.delivered.Load(),
		Gaps: a.gaps.Load(), Malformed: a.malformed.Load(), SlowConsumer: a.slow.Load(),
		Disconnects: a.disconnects.Load(), Reconnects: a.reconnects.Load(),
	}
}

// Join subscribes to the room's subject when peerID is the room's first
// local member, and returns once the server confirmed it, within
// JoinTimeout.
func (a *Adapter) Join(roomName, peerID string) error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return adapter.ErrClosed
	}
	r := a.rooms[roomName]
	first := r == nil
	if first {
		sub, err := a.nc.ChanSubscribe(roomSubject(a.opts.Prefix, roomName), a.msgs)
		if err != nil {
			a.mu.Unlock()
			return fmt.Errorf("nats: subscribing to room %q: %w", roomName, err)
		}
		r = &room{name: roomName, peers: make(map[string]struct{}), sub: sub, ready: make(chan struct{}), last: make(map[string]seen)}
		a.rooms[roomName] = r
	}
	r.peers[peerID] = struct{}{}
	a.mu.Unlock()
	if first {
		// Subscriptions are kept while reconnecting and restored after:
		// the membership stands either way, but say when it is not live.
		if !a.nc.IsConnected() {
			r.readyErr = fmt.Errorf("%w: room %q is joined here and its subscription is restored when NATS is back; broadcasts from other hosts arrive from then on",
				adapter.ErrUnreachable, roomName)
		} else if err := a.flush(); err != nil {
			r.readyErr = fmt.Errorf("%w: NATS did not confirm the subscription to room %q within %v: %v", adapter.ErrUnreachable, roomName, a.opts.JoinTimeout, err)
		}
		close(r.ready)
		return r.readyErr
	}
	select {
	case <-r.ready:
	case <-time.After(a.opts.JoinTimeout):
		return fmt.Errorf("%w: NATS did not confirm the subscription to room %q within %v", adapter.ErrUnreachable, roomName, a.opts.JoinTimeout)
	}
	if r.readyErr == nil {
		return nil
	}
	// The first join was not confirmed; a reconnection since restored the
	// subscription, which a flush now confirms.
	if !a.nc.IsConnected() {
		return r.readyErr
	}
	if err := a.flush(); err != nil {
		return fmt.Errorf("%w: NATS did not confirm the subscription to room %q within %v: %v", adapter.ErrUnreachable, roomName, a.opts.JoinTimeout, err)
	}
	return nil
}

// Leave unsubscribes from the room's subject once no local member is left.
func (a *Adapter) Leave(roomName, peerID string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return adapter.ErrClosed
	}
	r := a.rooms[roomName]
	if r == nil || roomName == "" {
		return nil
	}
	delete(r.peers, peerID)
	if len(r.peers) == 0 {
		delete(a.rooms, roomName)
		// A late message is dropped by the dispatcher, which finds no room.
		_ = r.sub.Unsubscribe()
	}
	return nil
}

// Broadcast publishes m once to the room's subject. It fails at once, and
// counts the failure, when NATS cannot take it.
func (a *Adapter) Broadcast(ctx context.Context, m adapter.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if m.Lane != wire.Reliable && m.Lane != wire.Unreliable {
		return fmt.Errorf("nats: broadcast on lane %q, neither %q nor %q", m.Lane, wire.Reliable, wire.Unreliable)
	}
	if len(m.Frame) == 0 {
		return errors.New("nats: broadcast of an empty frame")
	}
	a.mu.Lock()
	closed := a.closed
	a.mu.Unlock()
	if closed {
		return adapter.ErrClosed
	}
	e := envelope{lane: m.Lane, origin: m.Origin, node: a.opts.NodeID, room: m.Room, except: m.Except, frame: m.Frame}
	if n := envelopeLen(&e); n > a.maxPayload {
		return fmt.Errorf("nats: a broadcast of %d bytes (a %d-byte frame, its room name and except list) exceeds the NATS server's max_payload of %d bytes; "+
			"shorten the except list or raise max_payload", n, len(m.Frame), a.maxPayload)
	}
	a.pubMu.Lock()
	// The sequence advances even when the publish fails: the other hosts
	// missed this broadcast, and the skipped number is how they learn it.
	var subject string
	subject, e.stream, e.seq = a.nextSeq(m.Room)
	a.buf = appendEnvelope(a.buf[:0], &e)
	err := a.nc.Publish(subject, a.buf) // copies a.buf before it returns
	if cap(a.buf) > 64<<10 {
		a.buf = nil // keep no maximal frame's buffer for ever
	}
	a.pubMu.Unlock()
	if err != nil {
		a.publishFailed.Add(1)
		return fmt.Errorf("%w: the broadcast to room %q did not reach the other hosts (local members got it): %v", adapter.ErrUnreachable, m.Room, err)
	}
	a.published.Add(1)
	return nil
}

// suspectRooms marks every subscribed room: this host is losing NATS.
func (a *Adapter) suspectRooms() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range a.rooms {
		r.suspect = true
	}
}

// nextSeq numbers a broadcast to room; pubMu is held.
func (a *Adapter) nextSeq(roomName string) (subject string, stream, seq uint64) {
	now := time.Now()
	q := a.seq[roomName]
	if q == nil {
		if len(a.seq) >= a.sweepAt {
			for name, old := range a.seq {
				if now.Sub(old.used) > sequenceIdle {
					delete(a.seq, name)
				}
			}
			a.sweepAt = max(minSweepRooms, 2*len(a.seq))
		}
		var b [8]byte
		_, _ = rand.Read(b[:])
		q = &sequence{subject: roomSubject(a.opts.Prefix, roomName), stream: binary.BigEndian.Uint64(b[:])}
		a.seq[roomName] = q
	}
	q.last++
	q.used = now
	return q.subject, q.stream, q.last
}

// Subscribe registers deliver for broadcasts from other hosts.
func (a *Adapter) Subscribe(deliver func(adapter.Message)) (unsubscribe func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return func() {}
	}
	return a.subs.Add(deliver)
}

// Events registers on for Disconnected, Reconnected, Gap and Fenced.
func (a *Adapter) Events(on func(adapter.Event)) (stop func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return func() {}
	}
	return a.events.Add(on)
}

// dispatch delivers what the room subscriptions receive, in arrival order:
// one goroutine, so the order NATS keeps is the order the engine sees.
func (a *Adapter) dispatch() {
	for {
		select {
		case <-a.done:
			return
		case msg := <-a.msgs:
			a.receive(msg)
		}
	}
}

func (a *Adapter) receive(msg *natsgo.Msg) {
	e, err := parseEnvelope(msg.Data)
	if err != nil {
		a.malformed.Add(1)
		return
	}
	if string(e.nodeB) == a.opts.NodeID {
		return // our own broadcast: the engine delivered it locally
	}
	a.mu.Lock()
	r := a.rooms[string(e.roomB)] // the exact name: a hashed subject's other rooms find nothing
	if r == nil {
		a.mu.Unlock()
		return
	}
	var prev uint64
	s, known := r.last[string(e.nodeB)]
	if !known {
		s.node = string(e.nodeB) // allocated once per sender and room
	}
	if s.stream == e.stream {
		prev = s.seq // else a new stream: nothing of it seen yet
	}
	if prev != 0 && e.seq <= prev {
		a.mu.Unlock()
		return // never twice
	}
	s.stream, s.seq = e.stream, e.seq
	r.last[s.node] = s
	suspect := r.suspect
	a.mu.Unlock()
	var lost error
	switch {
	case prev != 0 && e.seq != prev+1:
		lost = fmt.Errorf("nats: %d broadcasts from host %q to room %q did not arrive", e.seq-prev-1, s.node, r.name)
	case prev == 0 && suspect && e.seq != 1:
		lost = fmt.Errorf("nats: broadcasts from host %q to room %q may have been lost while this host was disconnected "+
			"(its first broadcast here is number %d)", s.node, r.name, e.seq)
	}
	if lost != nil {
		a.gaps.Add(1)
		a.events.Call(adapter.Event{Kind: adapter.Gap, Room: r.name, Node: s.node, Err: lost})
	}
	a.delivered.Add(1)
	a.subs.Call(adapter.Message{Room: r.name, Lane: e.lane, Frame: e.frame, Except: e.except, Origin: e.origin, Node: s.node})
}

// Close unsubscribes, releases the ordinal into quarantine (§7.3) and
// closes the connection; every goroutine has ended when it returns.
func (a *Adapter) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.rooms = nil
	a.mu.Unlock()
	a.subs.RemoveAll()
	a.events.RemoveAll()
	close(a.done)
	a.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), a.opts.JoinTimeout)
	err := a.lease.release(ctx)
	cancel()
	a.nc.Close()
	return err
}
