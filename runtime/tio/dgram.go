package tio

import (
	"fmt"
	"sync/atomic"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/datagram"
	"github.com/transport-io/tiogen/runtime/metrics"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// clientOrigin is what a client stamps on its datagrams. A client has no
// allocated origin: origins are issued by the session host (§7.3), and its
// server's gate sees a single sender on the session, so any non-zero value
// keys it. The server stamps the peer's allocated origin on whatever it
// relays for the peer.
const clientOrigin = 1

// datagramLane is a session's unreliable lane (§7, §9): the send ring, the
// receive gate and, on a server over WebTransport, the liveness probe.
// The ring is made by the first datagram queued (push) and the gate by the
// first received, so a session that carries none holds neither.
type datagramLane struct {
	s    *session
	ring atomic.Pointer[datagram.Ring]
	// gate is used by the one goroutine that receives datagrams: the
	// datagram receiver, or the emit reader on the WebSocket mapping.
	gate *datagram.Gate
	// probe is a server's §7.2 probe timer (under s.mu).
	probe clock.Timer
	// The sender goroutine starts with the first datagram (push), so an
	// idle session pays no goroutine for the lane. shut, set by shutdown
	// while the session's watcher still counts in s.wg, keeps a late first
	// datagram from starting one after that (under s.mu).
	shut bool
	// origin and seq stamp what this side sends as itself.
	origin uint32
	seq    *datagram.Sequencer
}

func newDatagramLane(s *session, origin uint32, seq *datagram.Sequencer) datagramLane {
	return datagramLane{s: s, origin: origin, seq: seq}
}

// push queues an encoded datagram on the send ring, making the ring and,
// over WebTransport, starting the sender (startSender) with the first.
func (d *datagramLane) push(b []byte) {
	r := d.ring.Load()
	if r == nil {
		// The ring is published once its sender runs, so a push that finds
		// it has nothing to start.
		d.s.mu.Lock()
		if r = d.ring.Load(); r == nil {
			r = datagram.NewRing(datagram.RingCapacity, datagram.RingTTL, d.s.opts.Clock)
			d.startSenderLocked(r)
			d.ring.Store(r)
		}
		d.s.mu.Unlock()
	}
	r.Push(b)
}

// queued is the count of datagrams on the send ring.
func (d *datagramLane) queued() int {
	if r := d.ring.Load(); r != nil {
		return r.Len()
	}
	return 0
}

// probeDatagram is what a probe carries: one byte, shorter than the §7.1
// header, so receivers discard it (§7.2). Not zero bytes: Chromium 156
// fails the page's datagram reader on an empty datagram ("chunk is
// empty"), which ends the page's unreliable lane (tests/browser showed it).
var probeDatagram = []byte{0}

// beginProbes starts a server's probes over WebTransport (on the WebSocket
// mapping the transport has its own keepalive) once it accepted the peer's
// handshake: one at once, then one every 15000 ms (§7.2). The first tells a
// closing Go client that its handshake was read: webtransport-go abandons
// every stream it has not read when the close capsule arrives, so a close
// sent before that could lose the handshake (the client's Close waits for
// this probe, see the webtransport package). The sender starts with the
// first datagram (startSender).
func (d *datagramLane) beginProbes() {
	s := d.s
	if s.mapping != transport.WebTransport || s.role != roleServer {
		return
	}
	d.s.mu.Lock()
	if d.shut {
		d.s.mu.Unlock()
		return
	}
	d.probe = s.opts.Clock.AfterFunc(datagram.ProbeInterval, d.sendProbe)
	d.s.mu.Unlock()
	_ = s.conn.SendDatagram(probeDatagram)
}

// sendProbe sends the probe a server sends every 15000 ms (§7.2).
func (d *datagramLane) sendProbe() {
	if d.s.isEnded() {
		return
	}
	_ = d.s.conn.SendDatagram(probeDatagram)
	d.s.mu.Lock()
	d.probe.Reset(datagram.ProbeInterval)
	d.s.mu.Unlock()
}

// startSenderLocked runs sendLoop on the ring made for the first datagram
// queued over WebTransport, unless the lane is shut down; under s.mu.
func (d *datagramLane) startSenderLocked(r *datagram.Ring) {
	if d.s.mapping != transport.WebTransport || d.shut {
		return
	}
	d.s.wg.Add(1)
	go d.sendLoop(r)
}

func (d *datagramLane) shutdown() {
	d.s.mu.Lock()
	d.shut = true
	if d.probe != nil {
		d.probe.Stop()
	}
	d.s.mu.Unlock()
}

func (d *datagramLane) ringStats() (overflow, stale int64) {
	r := d.ring.Load()
	if r == nil {
		return 0, 0
	}
	o, s := r.Stats()
	return int64(o), int64(s)
}

// moveToLane appends up to room queued datagrams to buf as DATAGRAM frames
// (§3.3): header codec 0x01, event id 0, payload the §7.1 datagram. Stale
// ones are dropped at dequeue by the ring (§9).
func (d *datagramLane) moveToLane(buf []byte, room int) ([]byte, int) {
	r := d.ring.Load()
	if r == nil {
		return buf, 0
	}
	moved := 0
	for ; moved < room; moved++ {
		b, ok := r.Pop()
		if !ok {
			break
		}
		var h [wire.HeaderLen]byte
		wire.PutHeader(h[:], wire.FrameDatagram, wire.CodecJSON, 0, len(b))
		buf = append(append(buf, h[:]...), b...)
	}
	return buf, moved
}

// sendLoop drains the ring onto the transport's datagrams (WebTransport).
func (d *datagramLane) sendLoop(r *datagram.Ring) {
	defer d.s.wg.Done()
	for {
		select {
		case <-r.Ready():
		case <-d.s.ctx.Done():
			return
		}
		for {
			b, ok := r.Pop()
			if !ok {
				break
			}
			// Loss is the lane's nature (§7.5); a send error is a loss.
			if d.s.conn.SendDatagram(b) == nil {
				d.s.traffic.Out(metrics.LaneDatagram, len(b))
			}
		}
	}
}

// encodeDatagram builds one datagram after the §7.4 check against the
// transport's current size; nothing is sent on failure.
func (s *session) encodeDatagram(ev *Event, payload []byte, origin uint32, seq *datagram.Sequencer) ([]byte, error) {
	if len(payload) == 0 {
		return nil, Errorf(wire.ProtocolError, "event '%s': a datagram payload cannot be empty (§7.2)", ev.Name)
	}
	limit := wire.MaxDatagramPayload(s.conn.MaxDatagramSize())
	if len(payload) > limit {
		return nil, Errorf(wire.DatagramTooLarge, "event '%s': payload of %d bytes exceeds the %d-byte datagram limit (§7.4)", ev.Name, len(payload), limit)
	}
	b := make([]byte, 0, wire.DatagramHeaderLen+len(payload))
	return wire.AppendDatagram(b, wire.Datagram{Codec: ev.Payload, EventID: ev.ID, Origin: origin, Seq: seq.Next(ev.ID), Payload: payload}), nil
}

// sendDatagram is Client.SendDatagram and Peer.SendDatagram.
func (s *session) sendDatagram(event uint32, payload []byte) error {
	ev, err := s.lookupSend(event, Emit, wire.Unreliable)
	if err != nil {
		return err
	}
	b, err := s.encodeDatagram(ev, payload, s.dg.origin, s.dg.seq)
	if err != nil {
		return err
	}
	return s.queueDatagram(b)
}

// queueDatagram puts an encoded datagram in the send ring; b is shared and
// must not change (a broadcast hands the same bytes to every member).
func (s *session) queueDatagram(b []byte) error {
	if s.isEnded() {
		return s.closedError()
	}
	s.dg.push(b)
	if s.mapping == transport.WebSocket {
		s.q.kick() // the emit writer carries the ring there (§3.3)
	}
	return nil
}

// receiveDatagrams reads the transport's datagrams (WebTransport). Those
// arriving before the peer's handshake are discarded silently (§7.5).
func (s *session) receiveDatagrams() {
	defer s.wg.Done()
	for {
		b, err := s.conn.ReceiveDatagram(s.ctx)
		if err != nil {
			return
		}
		if len(b) < wire.DatagramHeaderLen {
			continue // a probe (§7.2): no traffic, and never early
		}
		s.traffic.In(metrics.LaneDatagram, len(b))
		if !s.hsDone.Fired() {
			s.counted().earlyDiscarded.Add(1)
			continue
		}
		if !s.receiveDatagram(b) {
			return
		}
	}
}

// receiveDatagram applies §7.2 and §7.3 to one datagram, from the transport
// or from a DATAGRAM frame; false when it closed the session.
func (s *session) receiveDatagram(b []byte) bool {
	d, ok, err := wire.ParseDatagram(b)
	if err != nil {
		s.counted().malformedDropped.Add(1)
		return true
	}
	if !ok {
		return true // shorter than the header: a probe or nothing (§7.2)
	}
	ev, known := s.contract.Event(d.EventID)
	if !known {
		s.counted().unknownDropped.Add(1)
		return true
	}
	if ev.Lane != wire.Unreliable {
		s.closeWith(wire.CloseProtocolError, fmt.Sprintf("a datagram carries event '%s', which is %s (§3)", ev.Name, ev.Lane))
		return false
	}
	if d.Codec != ev.Payload {
		s.closeWith(wire.CloseProtocolError, codecMismatch(ev, false, d.Codec))
		return false
	}
	if !d.Codec.Carries(d.Payload) {
		s.closeWith(wire.CloseProtocolError, notUTF8(ev, false))
		return false
	}
	if !ev.sentBy(s.role.peer()) {
		s.counted().directionDropped.Add(1)
		return true
	}
	if s.dg.gate == nil {
		s.dg.gate = datagram.NewGate(s.opts.Clock)
	}
	if !s.dg.gate.Accept(d.Origin, d.EventID, d.Seq) {
		s.counted().staleReceived.Add(1)
		return true
	}
	s.deliver(ev, d.Payload)
	return true
}
