package endpoint

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/transport-io/tiogen/internal/scrape"
	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/datagram"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// The limit and the drops below are counted where a real peer meets them,
// over QUIC on 127.0.0.1, and read from the text exposition
// (metrics.Serve, internal/scrape). Their deadlines run on a fake clock
// given to the server (tio.Options.Clock).

// greetAndAwaitProbe writes contract's handshake on emit and returns once
// receive brings the server's first §7.2 probe: its sign that it accepted
// the handshake (a server of this module sends one then).
func greetAndAwaitProbe(t *testing.T, ctx context.Context, emit io.Writer, receive func(context.Context) ([]byte, error), contract *tio.Contract) {
	t.Helper()
	hs, err := wire.AppendFrame(nil, wire.FrameHandshake, wire.CodecJSON, 0,
		wire.AppendHandshake(nil, wire.Handshake{V: wire.ProtocolVersion, Feat: []string{}, Events: contract.Table()}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := emit.Write(hs); err != nil {
		t.Fatal(err)
	}
	for {
		d, err := receive(ctx)
		if err != nil {
			t.Fatalf("waiting for the server's first probe: %v", err)
		}
		if len(d) < wire.DatagramHeaderLen {
			return
		}
	}
}

// dialRawWT opens a WebTransport session to url that writes runtime/wire
// bytes itself (the engine's transport, without the engine), sends the
// handshake of contract and returns once the server accepted it: its first
// §7.2 probe, which a server of this module sends then, has arrived. The
// server's emit stream is read and dropped.
func dialRawWT(t *testing.T, url string, contract *tio.Contract) transport.Conn {
	t.Helper()
	ctx := testCtx(t)
	c, err := webtransport.Dial(ctx, url, webtransport.DialOptions{CertHashes: [][32]byte{cert(t).SHA256}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Close(wire.CloseNoError, "done")
		<-c.Released()
	})
	go func() {
		if rs, err := c.AcceptEmit(context.Background()); err == nil {
			_, _ = io.Copy(io.Discard, rs)
		}
	}()
	emit, err := c.OpenEmit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	greetAndAwaitProbe(t, ctx, emit, c.ReceiveDatagram, contract)
	return c
}

// §6.2, §10.1: a call request that does not arrive whole within
// RequestTimeout is answered CALL_ERROR WT_ABORTED, and the hit is counted
// as tio_limit_hits_total{limit="request_timeout"} in the scrape. The peer
// announces 1,024 bytes and sends 100; the deadline passes on the fake
// clock only.
func TestSpec6_2_MetricsCountTheRequestDeadlineOverQUIC(t *testing.T) {
	fake := clock.NewFake()
	reg := serveMetrics(t)
	srv, err := tio.NewServer(metricsContract, tio.ServerOptions{Metrics: reg.Metrics, Options: tio.Options{Clock: fake}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.HandleCall(evEcho, func(_ context.Context, _ *tio.Peer, req []byte) ([]byte, error) { return req, nil })
	l := listen(t, srv, Options{})
	c := dialRawWT(t, l.URL(), metricsContract)

	armed := fake.Pending()
	st, err := c.OpenCall(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	req := make([]byte, wire.HeaderLen, wire.HeaderLen+100)
	wire.PutHeader(req, wire.FrameCallRequest, wire.CodecBytes, evEcho, 1024)
	if _, err := st.Write(append(req, make([]byte, 100)...)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the request deadline to be armed", func() bool { return fake.Pending() > armed })
	if got := value(t, reg, "tio_limit_hits_total", "limit", "request_timeout"); got != 0 {
		t.Fatalf("request_timeout hits %v before the deadline, want 0", got)
	}
	fake.Advance(tio.DefaultRequestTimeout + time.Millisecond)
	f, err := wire.NewReader(st).Next()
	if err != nil || f.Type != wire.FrameCallError {
		t.Fatalf("after the deadline the call stream gave %v, %v; want CALL_ERROR", f.Type, err)
	}
	if ce, err := wire.ParseCallError(f.Payload); err != nil || ce.Code != wire.Aborted || !strings.Contains(ce.Message, "did not arrive whole") {
		t.Fatalf("CALL_ERROR %+v, %v; want WT_ABORTED \"did not arrive whole\"", ce, err)
	}
	got := reg.Scrape(t)
	for limit, want := range map[string]float64{"request_timeout": 1, "request_bytes": 0, "request_bytes_total": 0, "max_calls": 0} {
		if v := got.Get("tio_limit_hits_total", "limit", limit); v != want {
			t.Errorf("%s hits %v, want %v", limit, v, want)
		}
	}
}

// §7.2, §7.3: datagrams a peer sends that the server drops are counted by
// cause in the scrape: a duplicate or older sequence number of an event
// (last-write-wins) as stale_received, event id 0 as malformed. A datagram
// may be lost (§7.5), so each kind is sent again until one is counted; the
// scrape then accounts for every datagram it counted as received:
// delivered to the handler, stale_received or malformed, and each cause
// equals the session's Peer.Stats().
func TestSpec7_2_Spec7_3_MetricsCountTheDatagramsDroppedOnArrivalOverQUIC(t *testing.T) {
	reg := serveMetrics(t)
	peers := make(chan *tio.Peer, 1)
	srv, err := tio.NewServer(metricsContract, tio.ServerOptions{Metrics: reg.Metrics, OnSession: func(p *tio.Peer) { peers <- p }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var delivered atomic.Int64
	srv.HandleEmit(evMetPos, func(context.Context, *tio.Peer, []byte) error { delivered.Add(1); return nil })
	l := listen(t, srv, Options{})
	c := dialRawWT(t, l.URL(), metricsContract)
	p := <-peers

	pos := func(ev, seq uint32) []byte {
		return wire.AppendDatagram(nil, wire.Datagram{Codec: wire.CodecBytes, EventID: ev, Origin: 1, Seq: seq, Payload: []byte("p")})
	}
	dropped := func(s scrape.Samples, reason string) float64 { return s.Get("tio_dropped_total", "reason", reason) }
	sendUntil := func(what string, d []byte, counted func(scrape.Samples) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !counted(reg.Scrape(t)) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: never counted", what)
			}
			if err := c.SendDatagram(d); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	sendUntil("sequence 2", pos(evMetPos, 2), func(scrape.Samples) bool { return delivered.Load() >= 1 })
	sendUntil("sequence 1, older", pos(evMetPos, 1), func(s scrape.Samples) bool { return dropped(s, "stale_received") >= 1 })
	sendUntil("event id 0", pos(0, 3), func(s scrape.Samples) bool { return dropped(s, "malformed") >= 1 })

	var got scrape.Samples
	waitFor(t, "every datagram received accounted for", func() bool {
		got = reg.Scrape(t)
		received := got.Get("tio_frames_received_total", "mapping", "webtransport", "lane", "datagram")
		return received == float64(delivered.Load())+dropped(got, "stale_received")+dropped(got, "malformed")
	})
	st := p.Stats()
	for reason, want := range map[string]int64{"stale_received": st.StaleReceived, "malformed": st.MalformedDropped, "early": 0, "unknown": 0, "direction": 0} {
		if v := dropped(got, reason); v != float64(want) {
			t.Errorf("tio_dropped_total{reason=%q} = %v, want %d (Peer.Stats)", reason, v, want)
		}
	}
	if delivered.Load() < 1 || st.StaleReceived < 1 || st.MalformedDropped < 1 {
		t.Fatalf("delivered %d, stale_received %d, malformed %d: want each at least 1", delivered.Load(), st.StaleReceived, st.MalformedDropped)
	}
}

// §9: the datagram send ring's drops are counted by cause in the scrape.
// The path to the client is cut (udpProxy), so QUIC stops sending and the
// ring's sender blocks; 100 more datagrams overflow the 64-frame ring
// (overflow), and once the fake clock passed the ring's 150 ms TTL and the
// path is back, what the ring held is dropped at dequeue (stale). Every
// datagram the server queued is either handed to QUIC
// (tio_frames_sent_total), or dropped for one cause, and each cause equals
// the session's Peer.Stats().
func TestSpec9_MetricsCountTheSendRingsDropsOverQUIC(t *testing.T) {
	fake := clock.NewFake()
	reg := serveMetrics(t)
	peers := make(chan *tio.Peer, 1)
	srv, err := tio.NewServer(metricsContract, tio.ServerOptions{Metrics: reg.Metrics, Options: tio.Options{Clock: fake},
		OnSession: func(p *tio.Peer) { peers <- p }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	l := listen(t, srv, Options{})
	proxy := newUDPProxy(t, l.UDPAddr())
	c, err := Dial(testCtx(t), "https://"+proxy.addr()+"/echo", metricsContract, DialOptions{CertHashes: [][32]byte{cert(t).SHA256}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Wait()
	defer c.Close(tio.NoError, "done")
	p := <-peers

	sent := func() float64 {
		return value(t, reg, "tio_frames_sent_total", "mapping", "webtransport", "lane", "datagram")
	}
	payload := make([]byte, 1000)
	queued := 0
	queue := func(n int) {
		for range n {
			if err := p.SendDatagram(evMetPos, payload); err != nil {
				t.Fatal(err)
			}
			queued++
		}
	}
	proxy.cut.Store(true)
	// Enough to fill QUIC's congestion window and its own queue of 32: the
	// ring's sender then waits for QUIC, which waits for acknowledgements
	// that cannot come.
	queue(200)
	for last, still := -1.0, 0; still < 3; time.Sleep(100 * time.Millisecond) {
		if n := sent(); n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
	queue(100)
	fake.Advance(datagram.RingTTL + time.Millisecond)
	proxy.cut.Store(false)

	var got scrape.Samples
	waitFor(t, "every queued datagram accounted for", func() bool {
		got = reg.Scrape(t)
		return got.Get("tio_frames_sent_total", "mapping", "webtransport", "lane", "datagram")+
			got.Get("tio_dropped_total", "reason", "overflow")+got.Get("tio_dropped_total", "reason", "stale") == float64(queued)
	})
	st := p.Stats()
	overflow, stale := got.Get("tio_dropped_total", "reason", "overflow"), got.Get("tio_dropped_total", "reason", "stale")
	if overflow != float64(st.OverflowDropped) || stale != float64(st.StaleDropped) {
		t.Fatalf("scraped overflow %v, stale %v; Peer.Stats %d, %d", overflow, stale, st.OverflowDropped, st.StaleDropped)
	}
	// The last 100 went into a ring the blocked sender did not take from.
	if overflow < 100 || stale < 1 {
		t.Fatalf("overflow %v, stale %v of %d queued (%v handed to QUIC): want at least 100 and 1", overflow, stale, queued, sent())
	}
	t.Logf("%d queued: %v handed to QUIC, %v overflow, %v stale", queued, sent(), overflow, stale)
}

// udpProxy forwards one client's UDP datagrams on 127.0.0.1 to target and
// back; while cut is set it drops them both ways, as a dead path does.
type udpProxy struct {
	conn   *net.UDPConn
	target *net.UDPAddr
	client atomic.Pointer[net.UDPAddr]
	cut    atomic.Bool
}

func newUDPProxy(t *testing.T, target *net.UDPAddr) *udpProxy {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	p := &udpProxy{conn: c, target: target}
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 1<<16)
		for {
			n, from, err := c.ReadFromUDP(buf)
			if err != nil {
				return
			}
			switch {
			case p.cut.Load():
			case from.Port == target.Port && from.IP.Equal(target.IP):
				if to := p.client.Load(); to != nil {
					_, _ = c.WriteToUDP(buf[:n], to)
				}
			default:
				p.client.Store(from)
				_, _ = c.WriteToUDP(buf[:n], target)
			}
		}
	})
	t.Cleanup(func() {
		_ = c.Close()
		wg.Wait()
	})
	return p
}

func (p *udpProxy) addr() string { return p.conn.LocalAddr().String() }
