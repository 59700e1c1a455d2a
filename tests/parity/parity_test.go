package parity

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// parityRows are the engine-level behaviours of the emit lane, the
// handshake, rooms, refusal and close. Every row runs over both mappings
// with the same assertions; where the spec makes a mapping differ (calls,
// how an unreliable event travels) the row says so and asserts each side.
var parityRows = []struct {
	name string
	run  func(t *testing.T, m mapping)
}{
	{"Spec6_1_EmitsBothWaysInOrder", emitsBothWaysInOrder},
	{"Spec4_3_ContractMismatchNamesTheEvent", contractMismatchNamesTheEvent},
	{"Spec4_2_VersionMismatchRefused", versionMismatchRefused},
	{"Spec4_1_HandshakeDeadline", handshakeDeadline},
	{"Spec5_5_EmitLaneFaultClosesTheSession", emitLaneFaultClosesTheSession},
	{"Spec4_RefusalBeforeFrame0", refusalBeforeFrame0},
	{"Spec4_AuthorizeFailureIsNoError", authorizeFailureIsNoError},
	{"Spec6_5_JoinAndLeaveShapeTheClientsView", joinAndLeaveShapeTheClientsView},
	{"Spec6_5_RoomBroadcastSkipsTheExcepted", roomBroadcastSkipsTheExcepted},
	{"Spec10_2_ClientCloseReachesTheServer", clientCloseReachesTheServer},
	{"Spec10_2_ServerCloseReachesTheClient", serverCloseReachesTheClient},
	{"Spec11_LostConnectionEndsAsLost", lostConnectionEndsAsLost},
	{"Spec3_3_CallsPerMapping", callsPerMapping},
	{"Spec7_3_UnreliableEventsPassTheGate", unreliableEventsPassTheGate},
}

func TestSpec3_3_Parity(t *testing.T) {
	for _, row := range parityRows {
		t.Run(row.name, func(t *testing.T) {
			for _, m := range mappings {
				t.Run(m.name, func(t *testing.T) { row.run(t, m) })
			}
		})
	}
}

// §3.1, §6.1: the emit lane is ordered and reliable in both directions.
func emitsBothWaysInOrder(t *testing.T, m mapping) {
	const n = 200
	s := startServer(t, serverConfig{})
	got := make(chan string, 2*n)
	s.tio.HandleEmit(evShout, func(_ context.Context, p *tio.Peer, b []byte) error {
		if string(b) != `"go"` {
			got <- string(b)
			return nil
		}
		for i := range n {
			if err := p.Emit(evHeard, []byte(strconv.Itoa(i))); err != nil {
				return err
			}
		}
		return nil
	})
	cl := s.connect(t, m, target{})
	heard := listen(t, cl, evHeard)
	for i := range n {
		must(t, cl.Emit(evShout, []byte(strconv.Itoa(i))))
	}
	for i := range n {
		if g := next(t, got, "the client's emits"); g != strconv.Itoa(i) {
			t.Fatalf("the server's emit %d is %s", i, g)
		}
	}
	must(t, cl.Emit(evShout, []byte(`"go"`)))
	for i := range n {
		if g := next(t, heard, "the server's emits"); g != strconv.Itoa(i) {
			t.Fatalf("the client's emit %d is %s", i, g)
		}
	}
}

// §4.3: an event both sides know, declared differently, refuses the
// session as WT_CONTRACT_MISMATCH naming it, on both sides.
func contractMismatchNamesTheEvent(t *testing.T, m mapping) {
	s := startServer(t, serverConfig{})
	events := parityEvents()
	events[0].ID = 7 // shout, with an id that is not its name's
	other := tio.MustContract("parity", events...)
	_, err := s.tryConnect(t, m, other, target{})
	wantErr(t, "the client", err, wire.ContractMismatch, "'shout'")
	wantErr(t, "the server", s.nextEnd(t), wire.ContractMismatch, "'shout'")
}

// §4.2: during Stage 0 versions must be equal. The engine sends only its
// own version, so a raw peer sends another, and the server refuses it.
func versionMismatchRefused(t *testing.T, m mapping) {
	s := startServer(t, serverConfig{})
	r := s.raw(t, m, target{})
	r.write(t, handshakeFrame(t, wire.ProtocolVersion+1, parityContract))
	info := r.closed(t)
	if info.Code != wire.CloseProtocolVersionMismatch || !info.Remote {
		t.Fatalf("the raw peer's session ended %+v, want the server's WT_PROTOCOL_VERSION_MISMATCH", info)
	}
	wantErr(t, "the server", s.nextEnd(t), wire.ProtocolVersionMismatch, "version 0 here, 1 at the peer")
}

// §4.1: a peer that opens its emit stream and never writes its handshake is
// closed WT_HANDSHAKE_TIMEOUT. The server's deadline is shortened through
// its options; the default stays 5000 ms.
func handshakeDeadline(t *testing.T, m mapping) {
	s := startServer(t, serverConfig{handshakeTimeout: 200 * time.Millisecond})
	r := s.raw(t, m, target{})
	info := r.closed(t)
	if info.Code != wire.CloseHandshakeTimeout || !info.Remote {
		t.Fatalf("the silent peer's session ended %+v, want the server's WT_HANDSHAKE_TIMEOUT", info)
	}
	wantErr(t, "the server", s.nextEnd(t), wire.HandshakeTimeout, "no handshake in 200 ms")
}

// §5.3, §5.5: a fault on the emit lane (here an EMIT whose codec is not the
// event's slot) closes the whole session WT_PROTOCOL_ERROR, naming the
// event and the slot; it never resets the lane.
func emitLaneFaultClosesTheSession(t *testing.T, m mapping) {
	s := startServer(t, serverConfig{})
	s.echoShouts()
	r := s.raw(t, m, target{})
	r.handshake(t, s)
	b, err := wire.AppendFrame(nil, wire.FrameEmit, wire.CodecBytes, evShout, []byte{1, 2, 3})
	must(t, err)
	r.write(t, b)
	info := r.closed(t)
	if info.Code != wire.CloseProtocolError || !info.Remote {
		t.Fatalf("the session ended %+v, want the server's WT_PROTOCOL_ERROR", info)
	}
	wantErr(t, "the server", s.nextEnd(t), wire.ProtocolError, "event 'shout' payload slot")
}

// §4, §4.3: authorize decides from the path, query and peer address; a
// refusal closes WT_UNAUTHORIZED with the application's reason before the
// server's frame 0, so the client never sees the event table.
func refusalBeforeFrame0(t *testing.T, m mapping) {
	asked := make(chan *transport.Request, 4)
	s := startServer(t, serverConfig{authorize: func(_ context.Context, r *transport.Request) (any, error) {
		asked <- r
		return nil, transport.Refuse("expired")
	}})
	to := target{query: "?token=abc"}

	_, err := s.tryConnect(t, m, parityContract, to)
	wantErr(t, "the client", err, wire.Unauthorized, "expired")
	req := next(t, asked, "authorize")
	if req.Path != sessionPath || req.Query.Get("token") != "abc" || req.RemoteAddr == "" {
		t.Fatalf("authorize saw path %q, token %q, address %q", req.Path, req.Query.Get("token"), req.RemoteAddr)
	}

	r := s.raw(t, m, to)
	next(t, asked, "authorize")
	info := r.closed(t)
	if info != (transport.CloseInfo{Code: wire.CloseUnauthorized, Reason: "expired", Remote: true}) {
		t.Fatalf("the refused session ended %+v, want WT_UNAUTHORIZED \"expired\" from the server", info)
	}
	next(t, r.readDone, "the raw reader to end")
	if n := r.bytesRead.Load(); n != 0 {
		t.Fatalf("a refused peer read %d bytes of the server's emit stream, want none", n)
	}
	select {
	case err := <-s.ended:
		t.Fatalf("a refused session was served: %v", err)
	default:
	}
}

// §4: a server that reached no decision closes WT_NO_ERROR with
// "authorize failed", never WT_UNAUTHORIZED, so the client may retry.
func authorizeFailureIsNoError(t *testing.T, m mapping) {
	s := startServer(t, serverConfig{authorize: func(context.Context, *transport.Request) (any, error) {
		return nil, errors.New("verification backend down")
	}})
	_, err := s.tryConnect(t, m, parityContract, target{})
	wantErr(t, "the client", err, wire.NoError, "authorize failed")
}

// §6.5: rooms are the server's; the client keeps its view from JOIN and
// LEAVE, in order with the emits around them.
func joinAndLeaveShapeTheClientsView(t *testing.T, m mapping) {
	s := startServer(t, serverConfig{})
	s.tio.HandleEmit(evShout, func(_ context.Context, p *tio.Peer, b []byte) error {
		switch string(b) {
		case `"join"`:
			if err := errors.Join(p.Join("lobby"), p.Join("red")); err != nil {
				t.Errorf("join: %v", err)
			}
		case `"leave"`:
			if err := p.Leave("red"); err != nil {
				t.Errorf("leave: %v", err)
			}
		}
		return p.Emit(evHeard, b)
	})
	cl := s.connect(t, m, target{})
	heard := listen(t, cl, evHeard)
	if got := cl.Rooms(); len(got) != 0 {
		t.Fatalf("a new session is in rooms %v", got)
	}
	must(t, cl.Emit(evShout, []byte(`"join"`)))
	next(t, heard, "the answer to join")
	if got := cl.Rooms(); !slices.Equal(got, []string{"lobby", "red"}) {
		t.Fatalf("after two JOINs the client is in %v", got)
	}
	must(t, cl.Emit(evShout, []byte(`"leave"`)))
	next(t, heard, "the answer to leave")
	if got := cl.Rooms(); !slices.Equal(got, []string{"lobby"}) {
		t.Fatalf("after a LEAVE the client is in %v", got)
	}
}

// §6.5: a member's broadcast reaches every other member, not the sender.
func roomBroadcastSkipsTheExcepted(t *testing.T, m mapping) {
	s := startServer(t, serverConfig{})
	s.tio.HandleEmit(evShout, func(_ context.Context, p *tio.Peer, b []byte) error {
		switch string(b) {
		case `"join"`:
			if err := p.Join("lobby"); err != nil {
				return err
			}
			return p.Emit(evHeard, []byte(`"joined"`))
		case `"broadcast"`:
			if err := p.Broadcast(context.Background(), "lobby", evHeard, []byte(`"from a"`)); err != nil {
				return err
			}
			// Then one emit to all: it follows the broadcast on each lane.
			return s.tio.Room("lobby").Emit(context.Background(), evHeard, []byte(`"marker"`))
		}
		return nil
	})
	names := []string{"a", "b", "c"}
	heard := make(map[string]<-chan string)
	clients := make(map[string]*tio.Client)
	for _, name := range names {
		cl := s.connect(t, m, target{})
		clients[name], heard[name] = cl, listen(t, cl, evHeard)
		must(t, cl.Emit(evShout, []byte(`"join"`)))
		if got := next(t, heard[name], "joined"); got != `"joined"` {
			t.Fatalf("%s heard %s", name, got)
		}
	}
	must(t, clients["a"].Emit(evShout, []byte(`"broadcast"`)))
	for _, name := range names[1:] {
		if got := next(t, heard[name], "the broadcast"); got != `"from a"` {
			t.Fatalf("%s heard %s, want the broadcast", name, got)
		}
		if got := next(t, heard[name], "the marker"); got != `"marker"` {
			t.Fatalf("%s heard %s, want the marker", name, got)
		}
	}
	if got := next(t, heard["a"], "the marker"); got != `"marker"` {
		t.Fatalf("the sender heard %s before the marker: its own broadcast came back", got)
	}
}

// §10.2 (§3.3 on the WebSocket): a client's close code and reason reach
// the server.
func clientCloseReachesTheServer(t *testing.T, m mapping) {
	s := startServer(t, serverConfig{})
	cl := s.connect(t, m, target{})
	s.nextPeer(t)
	const reason = "bye, ünïcødé 🙂"
	must(t, cl.Close(wire.ContractMismatch, reason))
	wantErr(t, "the server", s.nextEnd(t), wire.ContractMismatch, "session closed by the peer: "+reason)
	wantErr(t, "the client", ended(t, cl), wire.ContractMismatch, "session closed by this side: "+reason)
}

// §10.2 (§3.3 on the WebSocket): a server's close code and reason reach
// the client, WT_NO_ERROR (WebSocket 1000) and WT_UNAUTHORIZED on an
// established session (a credential that expired, §4) alike.
func serverCloseReachesTheClient(t *testing.T, m mapping) {
	s := startServer(t, serverConfig{})
	for _, c := range []struct {
		code   wire.Code
		reason string
	}{{wire.NoError, "done"}, {wire.Unauthorized, "expired"}} {
		cl := s.connect(t, m, target{})
		p := s.nextPeer(t)
		must(t, p.Close(c.code, c.reason))
		wantErr(t, "the client", ended(t, cl), c.code, "session closed by the peer: "+c.reason)
		wantErr(t, "the server", s.nextEnd(t), c.code, "session closed by this side: "+c.reason)
	}
}

// §11 (§3.3: a socket's own close is no session code): a path that dies
// with no close from either side ends the session as lost, which carries
// no code: WT_NO_ERROR "the connection was lost" (a SessionEnd that is
// Lost, not Normal), never a transport's own code.
func lostConnectionEndsAsLost(t *testing.T, m mapping) {
	// QUIC reports a silent path only after its idle timeout (a transport
	// option, not a spec timer): one second here on both ends.
	s := startServer(t, serverConfig{idle: idleForLoss})
	via := proxyFor(t, m, s)
	cl := s.connect(t, m, target{hostport: via.addr(), idle: idleForLoss})
	s.nextPeer(t)
	via.cut()
	for side, err := range map[string]error{"the client": ended(t, cl), "the server": s.nextEnd(t)} {
		wantErr(t, side, err, wire.NoError, "the connection was lost")
		var end *tio.SessionEnd
		if !errors.As(err, &end) || !end.Lost || end.Normal() {
			t.Fatalf("%s: %v wraps %+v, want a lost SessionEnd", side, err, end)
		}
	}
}

// §3.2, §3.3, §10.3, §11: calls exist on WebTransport only. There they
// answer, and a pending call rejects WT_SESSION_CLOSED when the session
// closes; on the WebSocket a call or a stream fails locally with
// WT_LANE_UNAVAILABLE and the session stays up.
func callsPerMapping(t *testing.T, m mapping) {
	s := startServer(t, serverConfig{})
	s.echoShouts()
	started := make(chan struct{}, 1)
	s.tio.HandleCall(evHang, func(ctx context.Context, _ *tio.Peer, _ []byte) ([]byte, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	cl := s.connect(t, m, target{})
	p := s.nextPeer(t)
	heard := listen(t, cl, evHeard)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	if m.kind == transport.WebSocket {
		_, err := cl.Call(ctx, evEcho, []byte(`"hi"`))
		wantErr(t, "Call", err, wire.LaneUnavailable)
		for _, err := range cl.Stream(ctx, evCount, []byte(`3`)) {
			wantErr(t, "Stream", err, wire.LaneUnavailable)
		}
		if err := cl.Err(); err != nil {
			t.Fatalf("the session ended after a call: %v", err)
		}
		must(t, cl.Emit(evShout, []byte(`"still up"`)))
		if got := next(t, heard, "an emit after the calls"); got != `"still up"` {
			t.Fatalf("heard %s", got)
		}
		return
	}

	resp, err := cl.Call(ctx, evEcho, []byte(`"hi"`))
	if err != nil || string(resp) != `"hi"` {
		t.Fatalf("echo: %q %v", resp, err)
	}
	var got []string
	for b, err := range cl.Stream(ctx, evCount, []byte(`3`)) {
		must(t, err)
		got = append(got, string(b))
	}
	if !slices.Equal(got, []string{"0", "1", "2"}) {
		t.Fatalf("count yielded %v", got)
	}
	pending := make(chan error, 1)
	go func() {
		_, err := cl.Call(ctx, evHang, []byte(`{}`))
		pending <- err
	}()
	next(t, started, "the pending call to reach its handler")
	must(t, p.Close(wire.NoError, "server done"))
	wantErr(t, "the pending call", next(t, pending, "the pending call to end"), wire.SessionClosed, "server done")
}

// §7.1, §7.3, §3.3: an unreliable event travels as a datagram on
// WebTransport and as a DATAGRAM frame (codec 0x01, event id 0) on the
// WebSocket's emit lane, and either way the receiver's last-write-wins gate
// drops stale and duplicate sequences and counts them.
func unreliableEventsPassTheGate(t *testing.T, m mapping) {
	s := startServer(t, serverConfig{})
	s.echoShouts()
	moves := make(chan string, 16)
	s.tio.HandleEmit(evMove, func(_ context.Context, _ *tio.Peer, b []byte) error {
		moves <- string(b)
		return nil
	})
	r := s.raw(t, m, target{})
	p := r.handshake(t, s)

	send := func(seq uint32, payload string) {
		t.Helper()
		dg := wire.AppendDatagram(nil, wire.Datagram{Codec: wire.CodecJSON, EventID: evMove, Origin: 7, Seq: seq, Payload: []byte(payload)})
		if m.kind == transport.WebTransport {
			must(t, r.conn.SendDatagram(dg))
			return
		}
		b, err := wire.AppendFrame(nil, wire.FrameDatagram, wire.CodecJSON, 0, dg)
		must(t, err)
		r.write(t, b)
	}
	stale := func(n int64) {
		t.Helper()
		within(t, "the stale count to reach "+strconv.FormatInt(n, 10), func() bool { return p.Stats().StaleReceived == n })
	}
	send(1, `1`)
	if got := next(t, moves, "sequence 1"); got != `1` {
		t.Fatalf("got %s", got)
	}
	send(2, `2`)
	if got := next(t, moves, "sequence 2"); got != `2` {
		t.Fatalf("got %s", got)
	}
	send(2, `"duplicate"`)
	stale(1)
	send(1, `"older"`)
	stale(2)
	send(3, `3`)
	if got := next(t, moves, "sequence 3"); got != `3` {
		t.Fatalf("got %s, want sequence 3: a stale datagram was delivered", got)
	}

	// The server's datagram to this peer, as this mapping carries it.
	must(t, p.SendDatagram(evMove, []byte(`{"x":1}`)))
	var b []byte
	if m.kind == transport.WebTransport {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		for len(b) < wire.DatagramHeaderLen { // an empty one is a probe (§7.2)
			var err error
			b, err = r.conn.ReceiveDatagram(ctx)
			must(t, err)
		}
	} else {
		f := r.next(t)
		if f.Type != wire.FrameDatagram || f.Codec != wire.CodecJSON || f.EventID != 0 {
			t.Fatalf("the server's unreliable event came as %s codec %d event %d, want DATAGRAM codec 1 event 0 (§3.3)", f.Type, f.Codec, f.EventID)
		}
		b = f.Payload
	}
	d, ok, err := wire.ParseDatagram(b)
	if err != nil || !ok || d.EventID != evMove || d.Origin == 0 || d.Seq == 0 || string(d.Payload) != `{"x":1}` {
		t.Fatalf("the server's datagram parses as %+v %v %v", d, ok, err)
	}
}
