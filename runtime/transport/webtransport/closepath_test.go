package webtransport

import (
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
