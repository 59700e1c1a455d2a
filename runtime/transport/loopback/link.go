package loopback

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/transport"
)

// Link is the path between the two ends of a Pair. Its fault knobs apply
// from the next datagram or read on, and are safe for concurrent use.
//
// A datagram travels: DropDatagrams, then DuplicateDatagrams, then the
// reorder hold, then the delay, then the receiver's queue of DatagramQueue.
type Link struct {
	clk    clock.Clock
	done   chan struct{}
	window int
	split  bool
	conns  [2]*Conn
	stall  [2]atomic.Pointer[chan struct{}] // closed on resume; nil while reading

	mu        sync.Mutex
	ended     bool
	info      [2]transport.CloseInfo
	drop      func([]byte) bool
	delay     time.Duration
	reorder   bool
	duplicate bool
	seq       uint64       // pipes made, seeds SplitWrites
	dirs      [2]direction // by sending side
}

type direction struct {
	to      *Conn
	held    [][]byte // while reordering, in send order
	delayed []delayedDatagram
	timer   clock.Timer
	armed   bool
	stats   directionStats
}

type delayedDatagram struct {
	due time.Time
	b   []byte
}

// directionStats are the counters of one direction. Stream bytes are
// atomic because they are counted on the write path; the datagram counters
// change under Link.mu.
type directionStats struct {
	streamBytes       atomic.Uint64
	datagramsSent     uint64
	datagramsDropped  uint64
	datagramsOverflow uint64
	datagramsDup      uint64
	datagramsQueued   uint64
	datagramBytes     uint64
}

// LinkStats counts the traffic of a Link, per direction.
type LinkStats struct {
	ClientToServer, ServerToClient DirectionStats
}

// DirectionStats counts one direction of a Link.
type DirectionStats struct {
	// StreamBytes is the bytes written on every stream of this direction.
	StreamBytes uint64
	// DatagramsSent is SendDatagram calls that were accepted.
	DatagramsSent uint64
	// DatagramsDropped is datagrams DropDatagrams discarded.
	DatagramsDropped uint64
	// DatagramsDuplicated is the extra copies DuplicateDatagrams made.
	DatagramsDuplicated uint64
	// DatagramsOverflowed is datagrams lost to a full queue: the
	// receiver's DatagramQueue, or the link's hold while reordering or
	// delaying.
	DatagramsOverflowed uint64
	// DatagramsDelivered is datagrams put in the receiver's queue, and
	// DatagramBytes their bytes.
	DatagramsDelivered uint64
	DatagramBytes      uint64
}

// DropDatagrams drops, in both directions, every datagram for which fn
// reports true; nil drops none. fn runs without the link's lock held.
func (l *Link) DropDatagrams(fn func(b []byte) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop = fn
}

// DelayDatagrams holds every datagram sent from now on for d on the Link's
// clock (Options.Clock) before it reaches the receiver; 0 delivers at once.
// Datagrams leave the delay in the order they entered it.
func (l *Link) DelayDatagrams(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.delay = max(d, 0)
}

// ReorderDatagrams(true) holds every datagram sent from now on; a later
// ReorderDatagrams(false) releases the held ones in reverse order of
// sending, a deterministic reordering.
func (l *Link) ReorderDatagrams(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reorder = on
	if on || l.ended {
		return
	}
	for s := range l.dirs {
		d := &l.dirs[s]
		for i := len(d.held) - 1; i >= 0; i-- {
			l.delayLocked(d, d.held[i])
		}
		clear(d.held)
		d.held = d.held[:0]
	}
}

// DuplicateDatagrams makes the link deliver every datagram twice.
func (l *Link) DuplicateDatagrams(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.duplicate = on
}

// StallReader makes side stop, or resume, reading its incoming streams: its
// Reads block while data stays buffered, so the peer's Writes block once
// Options.StreamWindow fills. Datagrams are not affected.
func (l *Link) StallReader(side Side, stalled bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if stalled {
		if l.stall[side].Load() == nil {
			ch := make(chan struct{})
			l.stall[side].Store(&ch)
		}
		return
	}
	if ch := l.stall[side].Swap(nil); ch != nil {
		close(*ch)
	}
}

// Lose kills the connection with no close from either side: both sides'
// Done fire and CloseInfo reports Lost with no code (§11).
func (l *Link) Lose() {
	lost := transport.CloseInfo{Lost: true}
	l.end([2]transport.CloseInfo{lost, lost})
}

// Stats returns the link's counters.
func (l *Link) Stats() LinkStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	snap := func(s *directionStats) DirectionStats {
		return DirectionStats{
			StreamBytes:         s.streamBytes.Load(),
			DatagramsSent:       s.datagramsSent,
			DatagramsDropped:    s.datagramsDropped,
			DatagramsDuplicated: s.datagramsDup,
			DatagramsOverflowed: s.datagramsOverflow,
			DatagramsDelivered:  s.datagramsQueued,
			DatagramBytes:       s.datagramBytes,
		}
	}
	return LinkStats{
		ClientToServer: snap(&l.dirs[Client].stats),
		ServerToClient: snap(&l.dirs[Server].stats),
	}
}

// end ends the session once, with each side's view of how.
func (l *Link) end(infos [2]transport.CloseInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	l.ended = true
	l.info = infos
	for s := range l.dirs {
		d := &l.dirs[s]
		if d.timer != nil {
			d.timer.Stop()
		}
		d.held, d.delayed = nil, nil
	}
	close(l.done)
}

func (l *Link) sendDatagram(from Side, b []byte) {
	l.mu.Lock()
	d := &l.dirs[from]
	d.stats.datagramsSent++
	drop := l.drop
	l.mu.Unlock()
	if drop != nil && drop(b) {
		l.mu.Lock()
		d.stats.datagramsDropped++
		l.mu.Unlock()
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	copies := [2][]byte{b}
	n := 1
	if l.duplicate {
		copies[1] = append([]byte(nil), b...)
		d.stats.datagramsDup++
		n = 2
	}
	for _, c := range copies[:n] {
		switch {
		case l.reorder && len(d.held) >= maxLinkDatagrams:
			d.stats.datagramsOverflow++
		case l.reorder:
			d.held = append(d.held, c)
		default:
			l.delayLocked(d, c)
		}
	}
}

// delayLocked passes b through the delay stage of d; l.mu is held.
func (l *Link) delayLocked(d *direction, b []byte) {
	if l.delay == 0 && len(d.delayed) == 0 {
		l.deliverLocked(d, b)
		return
	}
	if len(d.delayed) >= maxLinkDatagrams {
		d.stats.datagramsOverflow++
		return
	}
	d.delayed = append(d.delayed, delayedDatagram{due: l.clk.Now().Add(l.delay), b: b})
	l.armLocked(d)
}

// armLocked makes d's timer fire when the oldest delayed datagram is due.
func (l *Link) armLocked(d *direction) {
	if d.armed || len(d.delayed) == 0 {
		return
	}
	wait := d.delayed[0].due.Sub(l.clk.Now())
	if d.timer == nil {
		d.timer = l.clk.AfterFunc(wait, func() { l.releaseDue(d) })
	} else {
		d.timer.Reset(wait)
	}
	d.armed = true
}

// releaseDue delivers d's delayed datagrams that are due, in order.
func (l *Link) releaseDue(d *direction) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d.armed = false
	if l.ended {
		return
	}
	now := l.clk.Now()
	n := 0
	for n < len(d.delayed) && !d.delayed[n].due.After(now) {
		l.deliverLocked(d, d.delayed[n].b)
		n++
	}
	rest := copy(d.delayed, d.delayed[n:])
	clear(d.delayed[rest:])
	d.delayed = d.delayed[:rest]
	l.armLocked(d)
}

// deliverLocked puts b in the receiver's queue, or counts it lost when the
// queue is full; l.mu is held.
func (l *Link) deliverLocked(d *direction, b []byte) {
	select {
	case d.to.dgrams <- b:
		d.stats.datagramsQueued++
		d.stats.datagramBytes += uint64(len(b))
	default:
		d.stats.datagramsOverflow++
	}
}
