package webtransport

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// udpProxy relays one client's datagrams to a server and back, and can go
// silent: a peer that stops answering without closing anything.
type udpProxy struct {
	conn   *net.UDPConn
	target *net.UDPAddr
	client atomic.Pointer[net.UDPAddr]
	drop   atomic.Bool
}

func startProxy(t *testing.T, target *net.UDPAddr) *udpProxy {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	p := &udpProxy{conn: c, target: target}
	go func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := c.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if p.drop.Load() {
				continue
			}
			if from.Port == target.Port && from.IP.Equal(target.IP) {
				if to := p.client.Load(); to != nil {
					c.WriteToUDP(buf[:n], to)
				}
				continue
			}
			p.client.Store(from)
			c.WriteToUDP(buf[:n], target)
		}
	}()
	t.Cleanup(func() { c.Close() })
	return p
}

func (p *udpProxy) url() string { return "https://" + p.conn.LocalAddr().String() + "/tio" }

// The server's close waits for the peer's answer, and only then releases the
// session (releasing it sooner races the capsule in Chromium).
func TestCloseEndsOnThePeersAnswer(t *testing.T) {
	fake := clock.NewFake()
	h := startServer(t, Options{Clock: fake})
	client, server := h.pair()
	server.Close(wire.CloseContractMismatch, "x")
	// No time passes on the fake clock: only the peer's answer can end it.
	if got := waitDone(t, server); got != (transport.CloseInfo{Code: wire.CloseContractMismatch, Reason: "x"}) {
		t.Fatalf("server CloseInfo = %+v", got)
	}
	waitDone(t, client)
}

// A peer that never answers the close is released after the grace.
func TestCloseFallsBackAfterGraceWhenPeerIsSilent(t *testing.T) {
	fake := clock.NewFake()
	h := startServer(t, Options{Clock: fake})
	proxy := startProxy(t, h.srv.UDPAddr())
	opts := h.dialOptions()
	opts.CloseGrace = 100 * time.Millisecond
	client, err := Dial(ctx5s(t), proxy.url(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close(0, "")
	server := h.accept().conn

	proxy.drop.Store(true)
	server.Close(wire.CloseContractMismatch, "x")
	select {
	case <-server.Done():
		t.Fatal("the session ended before the peer answered or the grace passed")
	case <-time.After(200 * time.Millisecond):
	}
	fake.Advance(DefaultCloseGrace)
	if got := waitDone(t, server); got != (transport.CloseInfo{Code: wire.CloseContractMismatch, Reason: "x"}) {
		t.Fatalf("server CloseInfo = %+v", got)
	}
}

func TestCloseCapsuleBytes(t *testing.T) {
	got := appendCloseCapsule(nil, 1007, "bad-token")
	// 0x2843 is a two-byte varint (0x40 prefix); length 13 = 4-byte code + 9.
	want := append([]byte{0x68, 0x43, 13, 0, 0, 0x03, 0xef}, "bad-token"...)
	if string(got) != string(want) {
		t.Fatalf("capsule % x, want % x", got, want)
	}
}

// §4.1, §11: a client that closes right after writing its handshake does
// not lose it to a server that reads late: the close waits for the server's
// sign that it read (its first probe, a datagram too short to carry an
// event), not for a timer.
// The server here reads 300 ms late, as a loaded one may; a close sent
// before it read makes webtransport-go abandon the unread stream.
func TestSpec11_ClientCloseWaitsUntilTheServerReadItsHandshake(t *testing.T) {
	h := startServer(t, Options{})
	client, server := h.pair()
	handshake := []byte("frame 0 of the client's emit stream")
	st, err := client.OpenEmit(ctx5s(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Write(handshake); err != nil {
		t.Fatal(err)
	}
	go func() { // as the engine does for the whole session
		for {
			if _, err := client.ReceiveDatagram(context.Background()); err != nil {
				return
			}
		}
	}()
	read := make(chan string, 1)
	go func() {
		time.Sleep(300 * time.Millisecond) // a loaded server, late to read
		rs, err := server.AcceptEmit(ctx5s(t))
		if err != nil {
			read <- "accept: " + err.Error()
			return
		}
		b := make([]byte, len(handshake))
		if _, err := io.ReadFull(rs, b); err != nil {
			read <- "read: " + err.Error()
			return
		}
		read <- string(b)
		_ = server.SendDatagram([]byte{0}) // the sign: the handshake was read
	}()
	began := time.Now()
	if err := client.Close(wire.CloseNoError, "bye"); err != nil {
		t.Fatal(err)
	}
	if got := <-read; got != string(handshake) {
		t.Fatalf("the server read %q, want the handshake written before the close", got)
	}
	if took := time.Since(began); took >= handshakeReadBound {
		t.Fatalf("the close took %v: it waited out the bound, not the server's probe", took)
	}
	if got := waitDone(t, server); got != (transport.CloseInfo{Code: wire.CloseNoError, Reason: "bye", Remote: true}) {
		t.Fatalf("server CloseInfo = %+v", got)
	}
}

// A client that wrote nothing on its emit stream has nothing to be read:
// its close goes out at once, without waiting for a probe.
func TestClientCloseWithNothingWrittenDoesNotWait(t *testing.T) {
	h := startServer(t, Options{})
	client, server := h.pair()
	began := time.Now()
	if err := client.Close(wire.CloseNoError, ""); err != nil {
		t.Fatal(err)
	}
	waitDone(t, server)
	if took := time.Since(began); took >= handshakeReadBound {
		t.Fatalf("the close took %v, want no wait for a probe", took)
	}
}

// A server that never probes holds a client's close for handshakeReadBound
// at most: the wait is a bounded linger, never a hang.
func TestClientCloseWaitsForAProbeAtMostTheBound(t *testing.T) {
	h := startServer(t, Options{})
	client, server := h.pair()
	st, err := client.OpenEmit(ctx5s(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Write([]byte("a handshake")); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := client.Close(wire.CloseNoError, "late"); err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	if took < handshakeReadBound || took > handshakeReadBound+time.Second {
		t.Fatalf("the close took %v, want the bound of %v", took, handshakeReadBound)
	}
	if got := waitDone(t, server); got.Code != wire.CloseNoError || got.Reason != "late" || !got.Remote {
		t.Fatalf("server CloseInfo = %+v", got)
	}
}
