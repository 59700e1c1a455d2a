package endpoint

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cws "github.com/coder/websocket"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/wire"
)

// The burst tests' contract: say is relayed to the room "all" as said,
// shout back to its sender as heard.
var burstContract = tio.MustContract("burst",
	tio.Event{Name: "say", Lane: wire.Reliable, From: tio.FromClient, Kind: tio.Emit, Payload: wire.CodecBytes},
	tio.Event{Name: "said", Lane: wire.Reliable, From: tio.FromServer, Kind: tio.Emit, Payload: wire.CodecBytes},
	tio.Event{Name: "shout", Lane: wire.Reliable, From: tio.FromClient, Kind: tio.Emit, Payload: wire.CodecBytes},
	tio.Event{Name: "heard", Lane: wire.Reliable, From: tio.FromServer, Kind: tio.Emit, Payload: wire.CodecBytes},
)

var (
	evShout = wire.EventID("shout")
	evHeard = wire.EventID("heard")
)

// burstServer serves burstContract on both mappings; every peer joins
// "all".
type burstServer struct {
	*tio.Server
	l     *Listener
	mu    sync.Mutex
	peers []*tio.Peer
}

func startBurstServer(t *testing.T, opts tio.ServerOptions) *burstServer {
	t.Helper()
	s := &burstServer{}
	opts.OnSession = func(p *tio.Peer) {
		_ = p.Join("all")
		s.mu.Lock()
		s.peers = append(s.peers, p)
		s.mu.Unlock()
	}
	srv, err := tio.NewServer(burstContract, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	srv.HandleEmit(evSay, func(ctx context.Context, _ *tio.Peer, b []byte) error { return srv.Room("all").Emit(ctx, evSaid, b) })
	srv.HandleEmit(evShout, func(_ context.Context, p *tio.Peer, b []byte) error { return p.Emit(evHeard, b) })
	s.Server = srv
	s.l = listen(t, srv, Options{})
	return s
}

func (s *burstServer) waitMembers(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for s.Room("all").Members() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d peers joined", s.Room("all").Members(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rawPeer is a session written with runtime/wire directly, so a burst is
// one Write of many frames; it reads its emit stream as fast as loopback
// allows, counting frames, unless told not to.
type rawPeer struct {
	write func(b []byte) error
	said  atomic.Int64
	heard atomic.Int64
	ended chan struct{}
	code  atomic.Int64 // the server's close code once ended; -1 for none
	// hold, when closed before the reader starts, keeps it from reading.
	hold chan struct{}
}

var burstHandshake = func() []byte {
	b, err := wire.AppendFrame(nil, wire.FrameHandshake, wire.CodecJSON, 0,
		wire.AppendHandshake(nil, wire.Handshake{V: wire.ProtocolVersion, Feat: []string{}, Events: burstContract.Table()}))
	if err != nil {
		panic(err)
	}
	return b
}()

func (p *rawPeer) count(r io.Reader) {
	<-p.hold
	fr := wire.NewReader(r)
	for {
		f, err := fr.Next()
		if err != nil {
			return
		}
		switch f.EventID {
		case evSaid:
			p.said.Add(1)
		case evHeard:
			p.heard.Add(1)
		}
	}
}

func pinnedTLS(t *testing.T, protos ...string) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(cert(t).Leaf)
	return &tls.Config{RootCAs: pool, NextProtos: protos}
}

func dialRaw(t *testing.T, s *burstServer, mapping string, reading bool) *rawPeer {
	t.Helper()
	p := &rawPeer{ended: make(chan struct{}), hold: make(chan struct{})}
	p.code.Store(-1)
	if reading {
		close(p.hold)
	}
	ctx := testCtx(t)
	switch mapping {
	case "webtransport":
		d := &wt.Transport{
			TLSClientConfig: pinnedTLS(t, http3.NextProtoH3),
			QUICConfig:      &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true},
		}
		t.Cleanup(func() { _ = d.Close() })
		_, sess, err := d.Dial(ctx, s.l.URL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sess.CloseWithError(0, "") })
		emit, err := sess.OpenUniStreamSync(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p.write = func(b []byte) error { _, err := emit.Write(b); return err }
		go func() {
			if st, err := sess.AcceptUniStream(context.Background()); err == nil {
				p.count(st)
			}
		}()
		go func() {
			<-sess.Context().Done()
			_, err := sess.OpenStream()
			var se *wt.SessionError
			if errors.As(err, &se) && se.Remote {
				p.code.Store(int64(se.ErrorCode))
			}
			close(p.ended)
		}()
	case "websocket":
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: pinnedTLS(t)}}
		c, _, err := cws.Dial(ctx, s.l.WebSocketURL(), &cws.DialOptions{HTTPClient: client})
		if err != nil {
			t.Fatal(err)
		}
		c.SetReadLimit(-1)
		t.Cleanup(func() { _ = c.CloseNow() })
		p.write = func(b []byte) error { return c.Write(context.Background(), cws.MessageBinary, b) }
		pr, pw := io.Pipe()
		go p.count(pr)
		go func() {
			defer close(p.ended)
			<-p.hold
			for {
				_, b, err := c.Read(context.Background())
				if err != nil {
					var ce cws.CloseError
					if errors.As(err, &ce) {
						if code, ok := wire.SessionCodeFromWebSocket(uint16(ce.Code)); ok {
							p.code.Store(int64(code))
						}
					}
					pw.CloseWithError(err)
					return
				}
				_, _ = pw.Write(b)
			}
		}()
	}
	if err := p.write(burstHandshake); err != nil {
		t.Fatal(err)
	}
	return p
}

// frames is n frames of event in one buffer, for one Write.
func frames(t *testing.T, event uint32, n int) []byte {
	t.Helper()
	var b []byte
	for i := range n {
		var err error
		if b, err = wire.AppendFrame(b, wire.FrameEmit, wire.CodecBytes, event, fmt.Appendf(nil, "frame %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func waitCount(t *testing.T, what string, c *atomic.Int64, want int64, ended chan struct{}, code *atomic.Int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for c.Load() < want {
		select {
		case <-ended:
			t.Fatalf("%s: closed with %d after %d of %d frames", what, code.Load(), c.Load(), want)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d frames arrived", what, c.Load(), want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// §9: a burst from one member must not disconnect members that read as
// fast as loopback allows. In a room of 26, one member writes 300 and then
// 4,096 say frames in one Write each; every member, the sender included,
// receives every said frame and none is closed: the server stops reading
// the sender's emit stream while a recipient's queue is full, rather than
// closing the recipient WT_PEER_TOO_SLOW.
func TestSpec9_BurstInARoomClosesNoReader(t *testing.T) {
	for _, m := range []string{"webtransport", "websocket"} {
		t.Run(m, func(t *testing.T) {
			s := startBurstServer(t, tio.ServerOptions{})
			const members = 26
			peers := make([]*rawPeer, members)
			for i := range peers {
				peers[i] = dialRaw(t, s, m, true)
			}
			s.waitMembers(t, members)
			var want int64
			for _, burst := range []int{300, 4096} {
				if err := peers[0].write(frames(t, evSay, burst)); err != nil {
					t.Fatal(err)
				}
				want += int64(burst)
				for i, p := range peers {
					waitCount(t, fmt.Sprintf("member %d after a burst of %d", i, burst), &p.said, want, p.ended, &p.code)
				}
			}
		})
	}
}

// §9: a client bursting 1,024 shouts, each answered to itself, is not
// closed while it reads.
func TestSpec9_BurstOfOwnShoutsIsNotClosed(t *testing.T) {
	for _, m := range []string{"webtransport", "websocket"} {
		t.Run(m, func(t *testing.T) {
			s := startBurstServer(t, tio.ServerOptions{})
			p := dialRaw(t, s, m, true)
			s.waitMembers(t, 1)
			if err := p.write(frames(t, evShout, 1024)); err != nil {
				t.Fatal(err)
			}
			waitCount(t, "the shouter", &p.heard, 1024, p.ended, &p.code)
		})
	}
}

// §9 unchanged: a member that stops reading is still closed
// WT_PEER_TOO_SLOW once its queue holds 256 frames, and the sender and
// the members that read carry on. The stall deadline runs on an injected
// clock. The scrape shows the full queue in tio_emit_queue_frames_max while
// it waits, then the emit_queue hit and the WT_PEER_TOO_SLOW end.
func TestSpec9_MemberThatStopsReadingIsClosedPeerTooSlow(t *testing.T) {
	for _, m := range []string{"webtransport", "websocket"} {
		t.Run(m, func(t *testing.T) {
			clk := clock.NewFake()
			reg := serveMetrics(t)
			s := startBurstServer(t, tio.ServerOptions{Metrics: reg.Metrics, Options: tio.Options{Clock: clk}})
			// Dialled one by one, so s.peers is in this order.
			sender := dialRaw(t, s, m, true)
			s.waitMembers(t, 1)
			reader := dialRaw(t, s, m, true)
			s.waitMembers(t, 2)
			stalled := dialRaw(t, s, m, false)
			s.waitMembers(t, 3)
			s.mu.Lock()
			peers := slices.Clone(s.peers)
			s.mu.Unlock()
			stalledPeer := peers[2]
			// The transport's buffers hold a few MiB before the stalled
			// member's queue fills: keep saying 1 KiB frames until then.
			say := make([]byte, 0, 64*(1<<10+wire.HeaderLen))
			for i := range 64 {
				var err error
				payload := make([]byte, 1<<10)
				payload[0] = byte(i)
				if say, err = wire.AppendFrame(say, wire.FrameEmit, wire.CodecBytes, evSay, payload); err != nil {
					t.Fatal(err)
				}
			}
			stop, sending := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(sending)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if sender.write(say) != nil {
						return
					}
				}
			}()
			// The flood ends, and the server has read all of it, before the
			// sessions close: a close packet sent behind the flood can be
			// dropped by the server's full UDP receive buffer, and a peer's
			// close that never arrives holds the listener's Shutdown until
			// its context ends. A shout answered after the last say shows
			// the server read every frame before it.
			defer func() {
				close(stop)
				select {
				case <-sending:
				case <-time.After(20 * time.Second):
					t.Error("the sender's last write did not return")
					return
				}
				if t.Failed() {
					return
				}
				if err := sender.write(frames(t, evShout, 1)); err != nil {
					t.Fatal(err)
				}
				waitCount(t, "the sender's shout after the flood", &sender.heard, 1, sender.ended, &sender.code)
			}()
			// The deadline passes once the sender waits on the stalled
			// member alone: its queue full, the others' not, held so for
			// 20 ms, the sender's stall timer armed.
			stuck := func() bool {
				for i, p := range peers {
					if depth := p.Stats().EmitQueueDepth; (i == 2) != (depth == tio.EmitQueueFrames) {
						return false
					}
				}
				return clk.Pending() > 0
			}
			deadline := time.Now().Add(30 * time.Second)
			for held := 0; stalledPeer.Err() == nil; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the stalled member is still open with %d frames queued", stalledPeer.Stats().EmitQueueDepth)
				}
				if held++; !stuck() {
					held = 0
				}
				if held == 20 {
					// The full queue shows in the gauges while it waits. A
					// queue full only while congestion control held the
					// transport back may drain during the scrape: then the
					// wait starts over.
					got := reg.Scrape(t)
					if deepest, all := got.Get("tio_emit_queue_frames_max"), got.Get("tio_emit_queue_frames"); deepest != tio.EmitQueueFrames || all < deepest {
						if !stuck() {
							held = 0
							continue
						}
						t.Fatalf("with a queue full the scrape shows the deepest queue %v and %v frames queued, want %d and at least as many", deepest, all, tio.EmitQueueFrames)
					}
					clk.Advance(tio.DefaultEmitStallTimeout)
				}
			}
			if code := wire.CodeOf(stalledPeer.Err()); code != wire.PeerTooSlow {
				t.Fatalf("the stalled member ended with %v, want WT_PEER_TOO_SLOW", stalledPeer.Err())
			}
			waitFor(t, "the stalled member's end counted", func() bool {
				return value(t, reg, "tio_sessions_ended_total", "mapping", m, "code", "WT_PEER_TOO_SLOW") == 1
			})
			if got := value(t, reg, "tio_limit_hits_total", "limit", "emit_queue"); got != 1 {
				t.Fatalf("emit_queue hits %v, want 1", got)
			}
			select {
			case <-sender.ended:
				t.Fatalf("the sender was closed (%d)", sender.code.Load())
			case <-reader.ended:
				t.Fatalf("the reading member was closed (%d)", reader.code.Load())
			default:
			}
			close(stalled.hold)
		})
	}
}
