package tio

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/adapter/memory"
	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/datagram"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

func dgram(id, origin, seq uint32, payload string) []byte {
	return wire.AppendDatagram(nil, wire.Datagram{Codec: wire.CodecJSON, EventID: id, Origin: origin, Seq: seq, Payload: []byte(payload)})
}

func TestSpec7_4_SizeCeilingCheckedBeforeSending(t *testing.T) {
	p := newPair(t, loopback.Options{MaxDatagramSize: 100}, ServerOptions{}, Options{})
	wantCode(t, p.client.SendDatagram(evMove, make([]byte, 100-13+1)), wire.DatagramTooLarge)
	ok := []byte(`"` + strings.Repeat("x", 100-13-2) + `"`)
	if err := p.client.SendDatagram(evMove, ok); err != nil {
		t.Fatal(err)
	}
	if got := p.srv.got.next(t); got != "move:"+string(ok) {
		t.Fatalf("got %q", got)
	}
	if n := p.link.Stats().ClientToServer.DatagramsSent; n != 1 {
		t.Fatalf("%d datagrams sent; the oversized one must send nothing", n)
	}
	wantCode(t, p.peer.SendDatagram(evMove, make([]byte, 88)), wire.DatagramTooLarge)
}

func TestSpec7_4_UnknownSizeMeans1024(t *testing.T) {
	p := newPair(t, loopback.Options{MaxDatagramSize: loopback.UnknownDatagramSize}, ServerOptions{}, Options{})
	wantCode(t, p.client.SendDatagram(evMove, make([]byte, 1012)), wire.DatagramTooLarge)
	if err := p.client.SendDatagram(evMove, []byte(`"`+strings.Repeat("x", 1009)+`"`)); err != nil {
		t.Fatal(err)
	}
	p.srv.got.next(t)
}

func TestSpec7_3_LastWriteWinsPerOriginAndEvent(t *testing.T) {
	ts, raw := handshaken(t)
	for _, d := range [][]byte{
		dgram(evMove, 9, 5, `"a5"`),
		dgram(evMove, 9, 3, `"a3"`),  // older: stale
		dgram(evMove, 9, 5, `"a5"`),  // duplicate: stale
		dgram(evMove, 10, 1, `"b1"`), // another origin is independent
		dgram(evMove, 9, 6, `"a6"`),
		dgram(evMove, 11, 0xFFFFFFFF, `"c-max"`),
		dgram(evMove, 11, 1, `"c-wrapped"`), // circular: 1 follows 0xFFFFFFFF
	} {
		if err := raw.conn.SendDatagram(d); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{`"a5"`, `"b1"`, `"a6"`, `"c-max"`, `"c-wrapped"`} {
		if got := ts.got.next(t); got != "move:"+want {
			t.Fatalf("got %q, want %s", got, want)
		}
	}
	if s := onlyPeer(ts).Stats(); s.StaleReceived != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestSpec7_2_EmptyAndShortDatagramsIgnored(t *testing.T) {
	ts, raw := handshaken(t)
	_ = raw.conn.SendDatagram(nil)
	_ = raw.conn.SendDatagram(make([]byte, 12))
	_ = raw.conn.SendDatagram(dgram(evMove, 1, 1, `"after"`))
	if got := ts.got.next(t); got != `move:"after"` {
		t.Fatalf("got %q", got)
	}
	if s := onlyPeer(ts).Stats(); s != (Stats{}) {
		t.Fatalf("stats %+v, want nothing counted", s)
	}
}

func TestSpec7_2_MalformedDatagramsDropped(t *testing.T) {
	ts, raw := handshaken(t)
	reserved := dgram(evMove, 1, 1, `1`)
	reserved[0] = 3
	_ = raw.conn.SendDatagram(reserved)
	_ = raw.conn.SendDatagram(dgram(evMove, 1, 2, ``)) // header only: empty payload
	_ = raw.conn.SendDatagram(dgram(0, 1, 3, `1`))     // event id 0
	_ = raw.conn.SendDatagram(dgram(evMove, 1, 4, `"ok"`))
	if got := ts.got.next(t); got != `move:"ok"` {
		t.Fatalf("got %q", got)
	}
	if s := onlyPeer(ts).Stats(); s.MalformedDropped != 3 {
		t.Fatalf("stats %+v", s)
	}
}

func TestSpec5_3_DatagramCodecMismatchNamesEventAndSlot(t *testing.T) {
	_, raw := handshaken(t)
	d := dgram(evMove, 1, 1, `1`)
	d[0] = byte(wire.CodecBytes)
	_ = raw.conn.SendDatagram(d)
	wantClose(t, raw.conn, wire.CloseProtocolError, "event 'move' payload slot is json")
}

func TestSpecDirectionViolationOnDatagramDropped(t *testing.T) {
	c := MustContract("dir", Event{Name: "pos", Lane: wire.Unreliable, From: FromServer, Payload: wire.CodecJSON, Fallback: Newest})
	srv, err := NewServer(c, ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	peers := make(chan *Peer, 1)
	srv.opts.OnSession = func(p *Peer) { peers <- p }
	cconn, sconn, _ := loopback.Pair(loopback.Options{})
	go func() { _ = srv.Serve(sconn, nil) }()
	raw := newRawPeer(t, cconn)
	raw.handshake(c)
	p := <-peers
	_ = cconn.SendDatagram(dgram(wire.EventID("pos"), 1, 1, `1`))
	waitFor(t, "the datagram to be counted", func() bool { return p.Stats().DirectionDropped == 1 })
	_ = cconn.Close(0, "")
}

func TestSpec7_3_ServerStampsOriginAndSequenceFromOne(t *testing.T) {
	ts, raw := handshaken(t)
	p := onlyPeer(ts)
	for i := range 3 {
		if err := p.SendDatagram(evMove, fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// The first datagram is the probe that follows the accepted handshake.
	if b, err := raw.conn.ReceiveDatagram(context.Background()); err != nil || !isProbe(b) {
		t.Fatalf("first datagram %x %v, want the probe", b, err)
	}
	for i := range 3 {
		b, err := raw.conn.ReceiveDatagram(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		d, ok, err := wire.ParseDatagram(b)
		if !ok || err != nil {
			t.Fatalf("datagram %x: %v", b, err)
		}
		if d.Origin != ts.origin || d.Origin == 0 || d.Seq != uint32(i+1) || d.EventID != evMove {
			t.Fatalf("datagram %d: %+v (server origin %d)", i, d, ts.origin)
		}
	}
}

// §7.2: a server's probes begin once it accepted the peer's handshake: one
// at once (a closing client's sign that its handshake was read), then one
// every 15000 ms; none before the handshake. Each is one byte, too short to
// carry an event, and not empty.
func TestSpec7_2_ServerProbesOnceHandshakenThenEvery15s(t *testing.T) {
	fake := clock.NewFake()
	ts, raw, _ := serveRaw(t, loopback.Options{Clock: fake}, ServerOptions{Options: Options{Clock: fake}})
	fake.Advance(wire.HandshakeDeadline - time.Millisecond)
	if n := raw.link().Stats().ServerToClient.DatagramsSent; n != 0 {
		t.Fatalf("%d probes before the handshake", n)
	}
	raw.handshake(testContract)
	raw.frame(wire.FrameEmit, wire.CodecJSON, evPing, []byte(`1`))
	ts.got.next(t) // the handshake is accepted; its deadline is off
	for i := range 3 {
		if i > 0 {
			fake.Advance(datagram.ProbeInterval - time.Millisecond)
			if n := raw.link().Stats().ServerToClient.DatagramsSent; n != uint64(i) {
				t.Fatalf("%d probes before %d intervals passed", n, i)
			}
			fake.Advance(time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		b, err := raw.conn.ReceiveDatagram(ctx)
		cancel()
		if err != nil || !isProbe(b) {
			t.Fatalf("probe %d: %x %v, want a datagram shorter than the header", i, b, err)
		}
	}
}

// isProbe: a probe carries no event (shorter than the §7.1 header) and is
// never empty, which Chromium's datagram reader fails on.
func isProbe(b []byte) bool { return len(b) > 0 && len(b) < wire.DatagramHeaderLen }

func TestSpec3_3_UnreliableEventsTravelAsDatagramFrames(t *testing.T) {
	ts, raw, _ := serveRaw(t, loopback.Options{Mapping: transport.WebSocket}, ServerOptions{})
	raw.handshake(testContract)
	if f := raw.mustFrame(); f.Type != wire.FrameHandshake {
		t.Fatalf("frame 0 %s", f.Type)
	}
	// Received: the §7.3 gate applies inside DATAGRAM frames.
	for _, seq := range []uint32{2, 1, 3} {
		raw.frame(wire.FrameDatagram, wire.CodecJSON, 0, dgram(evMove, 4, seq, fmt.Sprint(seq)))
	}
	if a, b := ts.got.next(t), ts.got.next(t); a != "move:2" || b != "move:3" {
		t.Fatalf("got %q %q", a, b)
	}
	p := onlyPeer(ts)
	if s := p.Stats(); s.StaleReceived != 1 {
		t.Fatalf("stats %+v", s)
	}
	// Sent: header codec 0x01, id 0, payload a §7.1 datagram.
	if err := p.SendDatagram(evMove, []byte(`"down"`)); err != nil {
		t.Fatal(err)
	}
	f := raw.mustFrame()
	if f.Type != wire.FrameDatagram || f.Codec != wire.CodecJSON || f.EventID != 0 {
		t.Fatalf("frame %s codec %s id %d", f.Type, f.Codec, f.EventID)
	}
	d, ok, err := wire.ParseDatagram(f.Payload)
	if !ok || err != nil || d.EventID != evMove || string(d.Payload) != `"down"` || d.Seq != 1 {
		t.Fatalf("datagram %+v %v", d, err)
	}
}

// burstWhileStalled sends n datagrams from the server over the WebSocket
// mapping while the client reads nothing, then resumes the client after
// the fake clock passed the ring's TTL.
func burstWhileStalled(t *testing.T, n int) (*pairT, *recorder, *clock.Fake) {
	fake := clock.NewFake()
	p := newPair(t, loopback.Options{Mapping: transport.WebSocket, StreamWindow: 1 << 10, Clock: fake},
		ServerOptions{Options: Options{Clock: fake}}, Options{Clock: fake})
	got := newRecorder()
	p.client.On(evMove, func(b []byte) error { got.add(string(b)); return nil })
	p.link.StallReader(loopback.Client, true)
	for i := range n {
		if err := p.peer.SendDatagram(evMove, fmt.Appendf(nil, `"%04d"`, i)); err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
	}
	return p, got, fake
}

func TestSpec3_3_UnreliableBurstNeverClosesPeerTooSlow(t *testing.T) {
	p, _, _ := burstWhileStalled(t, 2000)
	if p.peer.Err() != nil {
		t.Fatalf("session ended: %v", p.peer.Err())
	}
	if d := p.peer.Stats().EmitQueueDepth; d != 0 {
		t.Fatalf("datagrams reached the emit queue: depth %d", d)
	}
	p.link.StallReader(loopback.Client, false)
	if err := p.peer.Emit(evHeard, []byte(`"still up"`)); err != nil {
		t.Fatal(err)
	}
}

func TestSpec9_OverflowAndStaleCountedSeparately(t *testing.T) {
	const n = 500
	p, got, fake := burstWhileStalled(t, n)
	s := p.peer.Stats()
	if s.OverflowDropped == 0 || s.StaleDropped != 0 {
		t.Fatalf("after the burst: %+v, want overflow only", s)
	}
	fake.Advance(datagram.RingTTL + time.Millisecond) // the queued ones are now stale
	p.link.StallReader(loopback.Client, false)
	waitFor(t, "every datagram to be delivered or counted", func() bool {
		s = p.peer.Stats()
		return int(s.OverflowDropped+s.StaleDropped)+len(got.all()) == n
	})
	if s.StaleDropped == 0 || s.StaleDropped > datagram.RingCapacity {
		t.Fatalf("stats %+v", s)
	}
	if p.peer.Err() != nil {
		t.Fatal(p.peer.Err())
	}
}

func TestSpec7_3_OriginFromHostOrdinalAndReleased(t *testing.T) {
	bus := memory.NewBus()
	first, _ := bus.Node("first") // ordinal 0
	defer first.Close()
	node, err := bus.Node("second")
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	srv, err := NewServer(testContract, ServerOptions{Adapter: node})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	peers := make(chan *Peer, 1)
	srv.opts.OnSession = func(p *Peer) { peers <- p }
	cconn, sconn, _ := loopback.Pair(loopback.Options{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sconn, nil) }()
	c, err := NewClient(context.Background(), cconn, testContract, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := <-peers
	if p.Origin()>>22 != uint32(node.HostOrdinal()) || p.Origin()&(1<<22-1) == 0 || srv.origin>>22 != uint32(node.HostOrdinal()) {
		t.Fatalf("origin %#x, server %#x, ordinal %d", p.Origin(), srv.origin, node.HostOrdinal())
	}
	if srv.origins.Live() != 2 {
		t.Fatalf("live origins %d", srv.origins.Live())
	}
	_ = c.Close(NoError, "")
	<-served
	if srv.origins.Live() != 1 || srv.origins.Quarantined() != 1 {
		t.Fatalf("after the session: live %d quarantined %d", srv.origins.Live(), srv.origins.Quarantined())
	}
}

func TestSpec3_3_DatagramsEndToEndOnWebSocket(t *testing.T) {
	p := newPair(t, loopback.Options{Mapping: transport.WebSocket}, ServerOptions{}, Options{})
	moved := newRecorder()
	p.client.On(evMove, func(b []byte) error { moved.add(string(b)); return nil })
	if err := p.client.SendDatagram(evMove, []byte(`"up"`)); err != nil {
		t.Fatal(err)
	}
	if got := p.srv.got.next(t); got != `move:"up"` {
		t.Fatalf("got %q", got)
	}
	if err := p.peer.SendDatagram(evMove, []byte(`"down"`)); err != nil {
		t.Fatal(err)
	}
	if got := moved.next(t); got != `"down"` {
		t.Fatalf("got %q", got)
	}
}
