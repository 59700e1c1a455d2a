package tio

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

func TestSpec4_1_HandshakeSentAtOnceAsFrameZero(t *testing.T) {
	// The raw client never sends its own handshake: the server must not
	// wait for it before sending frame 0.
	_, raw, _ := serveRaw(t, loopback.Options{}, ServerOptions{})
	f := raw.mustFrame()
	if f.Type != wire.FrameHandshake || f.Codec != wire.CodecJSON || f.EventID != 0 {
		t.Fatalf("frame 0 is %s codec %s id %d", f.Type, f.Codec, f.EventID)
	}
	h, err := wire.DecodeHandshake(f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if h.V != 0 || len(h.Events) != len(testEvents()) {
		t.Fatalf("handshake %+v", h)
	}
	if err := wire.CompareTables(testContract.table, h.Events); err != nil {
		t.Fatal(err)
	}
}

func TestSpec4_1_HandshakeDeadlineCloses1002(t *testing.T) {
	fake := clock.NewFake()
	_, raw, _ := serveRaw(t, loopback.Options{}, ServerOptions{Options: Options{Clock: fake}})
	raw.mustFrame() // the server is up and has armed its deadline
	fake.Advance(DefaultHandshakeTimeout - time.Millisecond)
	select {
	case <-raw.conn.Done():
		t.Fatal("closed before the 5000 ms deadline")
	case <-time.After(20 * time.Millisecond):
	}
	fake.Advance(time.Millisecond)
	wantClose(t, raw.conn, wire.CloseHandshakeTimeout, "5000 ms")
}

func TestSpec4_1_ClientHandshakeDeadline(t *testing.T) {
	fake := clock.NewFake()
	cconn, sconn, _ := loopback.Pair(loopback.Options{})
	_ = newRawPeer(t, sconn) // a server that opens its emit stream and never writes
	errc := make(chan error, 1)
	go func() {
		_, err := NewClient(context.Background(), cconn, testContract, Options{Clock: fake})
		errc <- err
	}()
	waitFor(t, "the deadline to be armed", func() bool { return fake.Pending() > 0 })
	fake.Advance(DefaultHandshakeTimeout)
	err := <-errc
	wantCode(t, err, wire.HandshakeTimeout)
	wantClose(t, sconn, wire.CloseHandshakeTimeout, "no handshake")
}

func TestSpec4_2_VersionMismatchCloses1000(t *testing.T) {
	_, raw, _ := serveRaw(t, loopback.Options{}, ServerOptions{})
	payload := wire.AppendHandshake(nil, wire.Handshake{V: 1, Events: testContract.table})
	raw.frame(wire.FrameHandshake, wire.CodecJSON, 0, payload)
	wantClose(t, raw.conn, wire.CloseProtocolVersionMismatch, "version 0 here, 1 at the peer")
}

func TestSpec4_2_UnknownFeatureTokensIgnored(t *testing.T) {
	ts, raw, _ := serveRaw(t, loopback.Options{}, ServerOptions{})
	payload := wire.AppendHandshake(nil, wire.Handshake{V: 0, Feat: []string{"emit-per-room", "zz-unknown"}, Events: testContract.table})
	raw.frame(wire.FrameHandshake, wire.CodecJSON, 0, payload)
	raw.frame(wire.FrameEmit, wire.CodecJSON, evPing, []byte(`1`))
	if got := ts.got.next(t); got != "ping:1" {
		t.Fatalf("got %q", got)
	}
}

func TestSpec4_3_ContractMismatchNamesEvent(t *testing.T) {
	events := testEvents()
	for i := range events {
		if events[i].Name == "move" {
			events[i].Lane = wire.Reliable
			events[i].Fallback = NoFallback
		}
	}
	clientContract := MustContract("test", events...)
	ts := newTestServer(t, ServerOptions{})
	cconn, sconn, _ := loopback.Pair(loopback.Options{})
	served := make(chan error, 1)
	go func() { served <- ts.Serve(sconn, nil) }()
	_, err := NewClient(context.Background(), cconn, clientContract, Options{})
	wantCode(t, err, wire.ContractMismatch)
	// Whichever side saw it first closed with 1001, naming the event.
	info := cconn.CloseInfo()
	if info.Code != wire.CloseContractMismatch || !strings.Contains(info.Reason, "event 'move' is '") {
		t.Fatalf("closed %d %q", info.Code, info.Reason)
	}
	wantCode(t, <-served, wire.ContractMismatch)
}

func TestSpec4_3_IDMismatchNamesEvent(t *testing.T) {
	// Same name, different id: refused, naming the event.
	events := append(testEvents(), Event{Name: "extra", Lane: wire.Reliable, Kind: Returns, Payload: wire.CodecJSON, Result: wire.CodecJSON})
	for i := range events {
		if events[i].Name == "ping" {
			events[i].ID = 7
		}
	}
	_, raw, _ := serveRaw(t, loopback.Options{}, ServerOptions{})
	raw.handshake(MustContract("test", events...))
	wantClose(t, raw.conn, wire.CloseContractMismatch, "event 'ping' has id")
}

func TestSpec4_3_EventKnownToOneSideProceedsAsUnknownEvent(t *testing.T) {
	events := append(testEvents(), Event{Name: "extra", Lane: wire.Reliable, Kind: Returns, Payload: wire.CodecJSON, Result: wire.CodecJSON})
	ts := newTestServer(t, ServerOptions{})
	cconn, sconn, _ := loopback.Pair(loopback.Options{})
	served := make(chan error, 1)
	go func() { served <- ts.Serve(sconn, nil) }()
	c, err := NewClient(context.Background(), cconn, MustContract("test", events...), Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Call(context.Background(), wire.EventID("extra"), []byte(`{}`))
	wantCode(t, err, wire.UnknownEvent)
	// The session stays up.
	if _, err := c.Call(context.Background(), evEcho, []byte(`1`)); err != nil {
		t.Fatal(err)
	}
	_ = c.Close(NoError, "")
	_ = c.Wait()
	<-served
}

func TestSpec4_4_TableCheckedBeforeFeatures(t *testing.T) {
	// A lane conflict refuses the session whatever features are shared.
	events := testEvents()
	events[len(events)-1].Lane = wire.Reliable
	events[len(events)-1].Fallback = NoFallback
	_, raw, _ := serveRaw(t, loopback.Options{}, ServerOptions{Options: Options{Features: []string{"emit-per-room"}}})
	payload := wire.AppendHandshake(nil, wire.Handshake{V: 0, Feat: []string{"emit-per-room"}, Events: MustContract("x", events...).table})
	raw.frame(wire.FrameHandshake, wire.CodecJSON, 0, payload)
	wantClose(t, raw.conn, wire.CloseContractMismatch, "event 'move'")
}

func TestSpec4_2_FeaturesAreTheIntersection(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{Options: Options{Features: []string{"a", "b"}}}, Options{Features: []string{"b", "c"}})
	if got := p.client.Features(); len(got) != 1 || got[0] != "b" {
		t.Fatalf("client features %v", got)
	}
	if got := p.peer.Features(); len(got) != 1 || got[0] != "b" {
		t.Fatalf("server features %v", got)
	}
}

func TestSpec3_1_FirstFrameMustBeHandshake(t *testing.T) {
	_, raw, _ := serveRaw(t, loopback.Options{}, ServerOptions{})
	raw.frame(wire.FrameEmit, wire.CodecJSON, evPing, []byte(`1`))
	wantClose(t, raw.conn, wire.CloseProtocolError, "not HANDSHAKE")
}

func TestSpec5_2_SecondHandshakeIsProtocolError(t *testing.T) {
	_, raw, _ := serveRaw(t, loopback.Options{}, ServerOptions{})
	raw.handshake(testContract)
	raw.handshake(testContract)
	wantClose(t, raw.conn, wire.CloseProtocolError, "HANDSHAKE frame on the emit stream")
}

func TestSpec7_5_DatagramBeforeHandshakeDiscarded(t *testing.T) {
	ts, raw, _ := serveRaw(t, loopback.Options{}, ServerOptions{})
	early := wire.AppendDatagram(nil, wire.Datagram{Codec: wire.CodecJSON, EventID: evMove, Origin: 9, Seq: 5, Payload: []byte(`"early"`)})
	if err := raw.conn.SendDatagram(early); err != nil {
		t.Fatal(err)
	}
	var peer *Peer
	waitFor(t, "the early datagram to be discarded", func() bool {
		ts.mu.RLock()
		defer ts.mu.RUnlock()
		for _, p := range ts.peers.all() {
			peer = p
		}
		return peer != nil && peer.Stats().EarlyDiscarded == 1
	})
	raw.handshake(testContract)
	raw.frame(wire.FrameEmit, wire.CodecJSON, evPing, []byte(`1`))
	if got := ts.got.next(t); got != "ping:1" { // the handshake is accepted
		t.Fatalf("got %q", got)
	}
	// Had the early datagram been accepted, sequence 1 would be stale now.
	late := wire.AppendDatagram(nil, wire.Datagram{Codec: wire.CodecJSON, EventID: evMove, Origin: 9, Seq: 1, Payload: []byte(`"late"`)})
	if err := raw.conn.SendDatagram(late); err != nil {
		t.Fatal(err)
	}
	if got := ts.got.next(t); got != `move:"late"` {
		t.Fatalf("got %q", got)
	}
	if s := peer.Stats(); s.StaleReceived != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestSpec2_WebSocketRefusedWithoutFallback(t *testing.T) {
	events := append(testEvents(), Event{Name: "cursor", Lane: wire.Unreliable, Payload: wire.CodecJSON},
		Event{Name: "aim", Lane: wire.Unreliable, Payload: wire.CodecJSON})
	c := MustContract("nofallback", events...)
	srv, err := NewServer(c, ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cconn, sconn, _ := loopback.Pair(loopback.Options{Mapping: transport.WebSocket})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sconn, nil) }()
	// Refused before the handshake: the server never opens its emit stream.
	wantClose(t, cconn, wire.CloseReliabilityRefused, "'aim' is unreliable with no fallback")
	if _, err := cconn.AcceptEmit(context.Background()); err == nil {
		t.Fatal("the refused server sent its emit stream")
	}
	wantCode(t, <-served, wire.ReliabilityRefused)

	// The client applies its own contract the same way (§7.6: local).
	cconn, _, _ = loopback.Pair(loopback.Options{Mapping: transport.WebSocket})
	_, err = NewClient(context.Background(), cconn, c, Options{})
	wantCode(t, err, wire.ReliabilityRefused)
}

func TestSpec3_3_CallOnWebSocketIsLaneUnavailable(t *testing.T) {
	p := newPair(t, loopback.Options{Mapping: transport.WebSocket}, ServerOptions{}, Options{})
	_, err := p.client.Call(context.Background(), evEcho, []byte(`1`))
	wantCode(t, err, wire.LaneUnavailable)
	for _, err := range p.client.Stream(context.Background(), evCount, []byte(`{"n":1}`)) {
		wantCode(t, err, wire.LaneUnavailable)
	}
	// The session stays up.
	if err := p.client.Emit(evPing, []byte(`2`)); err != nil {
		t.Fatal(err)
	}
	if got := p.srv.got.next(t); got != "ping:2" {
		t.Fatalf("got %q", got)
	}
}

func TestSpec4_3_SameIDDifferentNameRefused(t *testing.T) {
	events := testEvents()
	for i := range events {
		if events[i].Name == "ping" {
			events[i].Name = "pong"
			events[i].ID = evPing
		}
	}
	_, raw, _ := serveRaw(t, loopback.Options{}, ServerOptions{})
	raw.handshake(MustContract("test", events...))
	wantClose(t, raw.conn, wire.CloseContractMismatch, "is event 'ping' here and 'pong' at the peer")
}

func TestSpec4_1_MalformedHandshakeIsProtocolError(t *testing.T) {
	_, raw, _ := serveRaw(t, loopback.Options{}, ServerOptions{})
	raw.frame(wire.FrameHandshake, wire.CodecJSON, 0, []byte(`{"v":0,"feat":[],"events":[],"extra":1}`))
	wantClose(t, raw.conn, wire.CloseProtocolError, "handshake")
}
