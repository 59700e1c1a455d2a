package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/wire"
)

// drainWait is how long a datagram receiver may go without a delivery before
// it is considered drained once the sender stopped.
const drainWait = 300 * time.Millisecond

// dgramCounter counts deliveries and remembers when the last one came.
type dgramCounter struct {
	n    atomic.Int64
	last atomic.Int64 // UnixNano
}

func (c *dgramCounter) add() {
	c.n.Add(1)
	c.last.Store(time.Now().UnixNano())
}

// drained waits until deliveries stop for drainWait or reach want, and
// returns the count and the time of the last delivery.
func (c *dgramCounter) drained(want int64) (int64, time.Time) {
	for got := c.n.Load(); got < want; {
		time.Sleep(drainWait)
		now := c.n.Load()
		if now == got {
			break
		}
		got = now
	}
	return c.n.Load(), time.Unix(0, c.last.Load())
}

// dgramResult is one side's datagram figures.
type dgramResult struct {
	offered  float64 // SendDatagram calls per second while sending
	onWire   float64 // datagrams handed to QUIC per second, over the whole run
	received float64 // per second, over the whole run
	dropped  float64 // fraction of calls dropped before QUIC (ours: the §9 ring)
	loss     float64 // fraction of datagrams handed to QUIC never received
}

func runWTDatagram(ctx context.Context, cfg config) ([]sample, error) {
	payload := jsonPayload(64)
	size := len(payload)
	var out []sample
	for _, rate := range []int{0, cfg.dgramRate} {
		ours, err := datagramOurs(ctx, cfg, rate, payload)
		if err != nil {
			return nil, fmt.Errorf("ours: %w", err)
		}
		raw, err := datagramRaw(ctx, cfg, rate, payload)
		if err != nil {
			return nil, fmt.Errorf("raw: %w", err)
		}
		mode, note := "unpaced", "client→server, unpaced blast; ours: Client.SendDatagram (never blocks; send ring of 64 drops oldest, §9) counted in the server's handler; raw: Session.SendDatagram of the same §7.1 bytes (blocks while quic-go's queue is full), counted by ReceiveDatagram; per-second figures over first send to last receipt"
		if rate > 0 {
			mode, note = fmt.Sprintf("paced %d/s", rate), fmt.Sprintf("as unpaced, but both senders paced to %d calls/s in bursts of 16", rate)
		}
		out = append(out,
			sample{Figure: "datagram calls " + mode, Size: size, Unit: "calls/s", Ours: ours.offered, Raw: raw.offered, HasRaw: true, Note: note},
			sample{Figure: "datagrams sent " + mode, Size: size, Unit: "datagrams/s", Ours: ours.onWire, Raw: raw.onWire, HasRaw: true},
			sample{Figure: "datagrams received " + mode, Size: size, Unit: "datagrams/s", Ours: ours.received, Raw: raw.received, HasRaw: true},
			sample{Figure: "dropped before QUIC " + mode, Size: size, Unit: "fraction", Lower: true, Ours: ours.dropped, Raw: raw.dropped, HasRaw: true},
			sample{Figure: "lost after send " + mode, Size: size, Unit: "fraction", Lower: true, Ours: ours.loss, Raw: raw.loss, HasRaw: true},
		)
	}
	return out, nil
}

// blast calls send until the count or the duration is reached and returns
// the calls made and the time they took. With a rate above 0 it paces the
// calls to that many per second, in bursts of 16.
func blast(cfg config, rate int, send func() error) (int64, time.Duration, error) {
	start := time.Now()
	deadline := start.Add(cfg.duration)
	var n int64
	for n < int64(cfg.count) {
		if n%16 == 0 && rate > 0 {
			for float64(n) >= time.Since(start).Seconds()*float64(rate) {
				time.Sleep(100 * time.Microsecond)
			}
		}
		if n%256 == 0 && time.Now().After(deadline) {
			break
		}
		if err := send(); err != nil {
			return n, time.Since(start), err
		}
		n++
	}
	return n, time.Since(start), nil
}

// dgramFigures turns counts into the result: calls made in blastTime,
// onWire of them handed to QUIC, recv received by last.
func dgramFigures(start time.Time, blastTime time.Duration, calls, onWire, recv int64, last time.Time) dgramResult {
	whole := max(last.Sub(start), blastTime)
	r := dgramResult{
		offered:  perSecond(calls, blastTime),
		onWire:   perSecond(onWire, whole),
		received: perSecond(recv, whole),
	}
	if calls > 0 {
		r.dropped = 1 - float64(onWire)/float64(calls)
	}
	if onWire > 0 {
		r.loss = 1 - float64(recv)/float64(onWire)
	}
	return r
}

func datagramOurs(ctx context.Context, cfg config, rate int, payload []byte) (dgramResult, error) {
	var got dgramCounter
	o, err := startOurWT(tio.ServerOptions{})
	if err != nil {
		return dgramResult{}, err
	}
	defer o.close()
	o.srv.HandleEmit(evMove, func(context.Context, *tio.Peer, []byte) error { got.add(); return nil })
	seen := make(chan struct{}, 1)
	o.srv.HandleEmit(evPing, func(context.Context, *tio.Peer, []byte) error { seen <- struct{}{}; return nil })
	c, err := o.dial(ctx)
	if err != nil {
		return dgramResult{}, err
	}
	defer closeClient(c)
	// Dial returns once the server's handshake arrived, but the server
	// discards datagrams until it has read the client's (§4). An emit
	// handled after that handshake shows the server is ready.
	if err := c.Emit(evPing, []byte(`{}`)); err != nil {
		return dgramResult{}, err
	}
	select {
	case <-seen:
	case <-ctx.Done():
		return dgramResult{}, ctx.Err()
	}
	start := time.Now()
	n, blastTime, err := blast(cfg, rate, func() error { return c.SendDatagram(evMove, payload) })
	if err != nil {
		return dgramResult{}, err
	}
	// What left the ring for QUIC: calls minus the oldest-first overflow
	// and the stale drops (§9). The ring holds at most 64 more, which the
	// TTL drops or sends within 150 ms, inside the drain wait.
	st := c.Stats()
	onWire := n - st.OverflowDropped - st.StaleDropped
	recv, last := got.drained(onWire)
	if st2 := c.Stats(); st2.OverflowDropped+st2.StaleDropped != st.OverflowDropped+st.StaleDropped {
		onWire = n - st2.OverflowDropped - st2.StaleDropped
	}
	return dgramFigures(start, blastTime, n, onWire, recv, last), nil
}

func datagramRaw(ctx context.Context, cfg config, rate int, payload []byte) (dgramResult, error) {
	ctx, cancel := measureCtx(ctx, cfg)
	defer cancel()
	var got dgramCounter
	r, err := startRawWT(func(sess *wt.Session) {
		for {
			if _, err := sess.ReceiveDatagram(ctx); err != nil {
				return
			}
			got.add()
		}
	})
	if err != nil {
		return dgramResult{}, err
	}
	defer r.close()
	sess, err := r.dial(ctx)
	if err != nil {
		return dgramResult{}, err
	}
	defer sess.CloseWithError(0, "")
	var seq uint32
	var buf []byte
	start := time.Now()
	n, blastTime, err := blast(cfg, rate, func() error {
		seq = wire.NextSeq(seq)
		buf = wire.AppendDatagram(buf[:0], wire.Datagram{Codec: wire.CodecJSON, EventID: evMove, Seq: seq, Payload: payload})
		return sess.SendDatagram(buf)
	})
	if err != nil {
		return dgramResult{}, err
	}
	recv, last := got.drained(n)
	return dgramFigures(start, blastTime, n, n, recv, last), nil
}
