package parity

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/wire"
)

// undeclaredContract has two unreliable events with no fallback (§7.6):
// "zoom", declared first, and "move". Its handshake table is the parity
// contract's plus zoom, whatever the fallbacks (they are never carried).
func undeclaredContract(t *testing.T) *tio.Contract {
	t.Helper()
	events := append([]tio.Event{{Name: "zoom", Lane: wire.Unreliable, Payload: wire.CodecJSON}}, parityEvents()...)
	for i := range events {
		events[i].Fallback = tio.NoFallback
	}
	c, err := tio.NewContract("parity", events...)
	must(t, err)
	return c
}

// declaredContract is undeclaredContract with `fallback newest` on both.
func declaredContract(t *testing.T) *tio.Contract {
	t.Helper()
	events := append([]tio.Event{{Name: "zoom", Lane: wire.Unreliable, Payload: wire.CodecJSON, Fallback: tio.Newest}}, parityEvents()...)
	c, err := tio.NewContract("parity", events...)
	must(t, err)
	return c
}

// §2, §7.6: over the WebSocket mapping a session exists only when every
// unreliable event of this side's contract declares `fallback newest`;
// otherwise the side closes WT_RELIABILITY_REFUSED before the handshake,
// naming the first undeclared event (in name order, as the handshake table
// is sorted: "move" before "zoom"). Each side applies its own contract.
func TestSpec2_ReliabilityRefusedOverWebSocket(t *testing.T) {
	t.Run("ClientContractUndeclared", func(t *testing.T) {
		s := startServer(t, serverConfig{contract: declaredContract(t)})
		_, err := s.tryConnect(t, websocketMapping, undeclaredContract(t), target{})
		wantErr(t, "the client", err, wire.ReliabilityRefused, "closed by this side", "'move' is unreliable with no fallback")
		wantErr(t, "the server", s.nextEnd(t), wire.ReliabilityRefused, "closed by the peer", "'move' is unreliable with no fallback")
	})
	t.Run("ServerContractUndeclared", func(t *testing.T) {
		s := startServer(t, serverConfig{contract: undeclaredContract(t)})
		_, err := s.tryConnect(t, websocketMapping, declaredContract(t), target{})
		wantErr(t, "the client", err, wire.ReliabilityRefused, "closed by the peer", "'move' is unreliable with no fallback")
		wantErr(t, "the server", s.nextEnd(t), wire.ReliabilityRefused, "closed by this side", "'move' is unreliable with no fallback")
		// Before the handshake: the peer never sees the server's frame 0.
		r := s.raw(t, websocketMapping, target{})
		info := r.closed(t)
		if info.Code != wire.CloseReliabilityRefused || !info.Remote {
			t.Fatalf("the raw peer's session ended %+v, want the server's WT_RELIABILITY_REFUSED", info)
		}
		next(t, r.readDone, "the raw reader to end")
		if n := r.bytesRead.Load(); n != 0 {
			t.Fatalf("the refused peer read %d bytes, want none before the handshake", n)
		}
		s.nextEnd(t)
	})
	t.Run("WebTransportCarriesTheSameContracts", func(t *testing.T) {
		// The refusal is the WebSocket mapping's alone: WebTransport has
		// datagrams, so the same undeclared contracts have a session.
		s := startServer(t, serverConfig{contract: undeclaredContract(t)})
		cl, err := s.tryConnect(t, webtransportMapping, undeclaredContract(t), target{})
		if err != nil {
			t.Fatalf("NewClient over WebTransport: %v", err)
		}
		if err := cl.Err(); err != nil {
			t.Fatalf("the session ended: %v", err)
		}
	})
}

// §3.3: a DATAGRAM frame is the WebSocket mapping's; on WebTransport's emit
// stream it is a protocol error that closes the session.
func TestSpec3_3_DatagramFrameOnWebTransportIsProtocolError(t *testing.T) {
	s := startServer(t, serverConfig{})
	s.echoShouts()
	r := s.raw(t, webtransportMapping, target{})
	r.handshake(t, s)
	dg := wire.AppendDatagram(nil, wire.Datagram{Codec: wire.CodecJSON, EventID: evMove, Origin: 7, Seq: 1, Payload: []byte(`1`)})
	b, err := wire.AppendFrame(nil, wire.FrameDatagram, wire.CodecJSON, 0, dg)
	must(t, err)
	r.write(t, b)
	info := r.closed(t)
	if info.Code != wire.CloseProtocolError || !info.Remote {
		t.Fatalf("the session ended %+v, want the server's WT_PROTOCOL_ERROR", info)
	}
	wantErr(t, "the server", s.nextEnd(t), wire.ProtocolError, "DATAGRAM frame")
}

// §3.3, §9: on the WebSocket, unreliable frames wait in the ring and move
// onto the emit lane only below 32 frames, so a burst far beyond the emit
// queue's 256 never closes the session WT_PEER_TOO_SLOW; the emits among it
// arrive in order, and every datagram is either delivered or counted as
// dropped (overflow or stale, §9), none lost on this reliable lane.
func TestSpec3_3_UnreliableBurstOverWebSocketKeepsTheSession(t *testing.T) {
	const datagrams, every = 5000, 100
	s := startServer(t, serverConfig{})
	s.tio.HandleEmit(evShout, func(_ context.Context, p *tio.Peer, _ []byte) error {
		for i := 1; i <= datagrams; i++ {
			if err := p.SendDatagram(evMove, []byte(strconv.Itoa(i))); err != nil {
				return err
			}
			if i%every == 0 {
				if err := p.Emit(evHeard, []byte(strconv.Itoa(i/every))); err != nil {
					return err
				}
			}
		}
		return nil
	})
	cl := s.connect(t, websocketMapping, target{})
	p := s.nextPeer(t)
	heard := listen(t, cl, evHeard)
	var delivered atomic.Int64
	defer cl.On(evMove, func([]byte) error { delivered.Add(1); return nil })()

	must(t, cl.Emit(evShout, []byte(`"burst"`)))
	for i := 1; i <= datagrams/every; i++ {
		if got := next(t, heard, "the emits among the burst"); got != strconv.Itoa(i) {
			t.Fatalf("emit %d is %s", i, got)
		}
	}
	within(t, "every datagram delivered or counted", func() bool {
		st := p.Stats()
		return delivered.Load()+st.OverflowDropped+st.StaleDropped == datagrams
	})
	if err := cl.Err(); err != nil {
		t.Fatalf("the burst ended the session: %v", err)
	}
	st := p.Stats()
	t.Logf("%d delivered, %d overflow, %d stale", delivered.Load(), st.OverflowDropped, st.StaleDropped)
	if delivered.Load() == 0 {
		t.Fatal("no datagram of the burst was delivered")
	}
}
