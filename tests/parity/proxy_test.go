package parity

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/transport-io/tiogen/runtime/transport"
)

// A proxy sits between a client and the server on 127.0.0.1 so a test can
// cut the path without either side closing: a lost connection (§11).
type proxy interface {
	addr() string
	// cut loses the path: nothing passes any more, and no side is told.
	cut()
}

// tcpProxy relays TCP connections to target (the WebSocket mapping).
type tcpProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns []*net.TCPConn
	isCut bool
}

// startTCPProxy relays connections accepted on ln to target until the test
// ends.
func startTCPProxy(t *testing.T, ln net.Listener, target string) *tcpProxy {
	p := &tcpProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		_ = p.ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		down := c.(*net.TCPConn)
		upstream := up.(*net.TCPConn)
		if !p.track(down, upstream) {
			continue
		}
		p.wg.Add(2)
		go p.relay(upstream, down)
		go p.relay(down, upstream)
	}
}

// track records a relayed pair; after a cut it drops the pair at once.
func (p *tcpProxy) track(a, b *net.TCPConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.isCut {
		_ = a.Close()
		_ = b.Close()
		return false
	}
	p.conns = append(p.conns, a, b)
	return true
}

func (p *tcpProxy) relay(dst, src *net.TCPConn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.CloseWrite()
}

// cut resets every relayed connection: each side meets a dead socket, with
// no WebSocket close frame (§3.3: not a session close code).
func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isCut = true
	for _, c := range p.conns {
		_ = c.SetLinger(0)
		_ = c.Close()
	}
	p.conns = nil
}

// udpProxy relays one client's datagrams to target and back (the
// WebTransport mapping, QUIC).
type udpProxy struct {
	front  *net.UDPConn
	back   *net.UDPConn
	client atomic.Pointer[net.UDPAddr]
	isCut  atomic.Bool
	wg     sync.WaitGroup
}

func startUDPProxy(t *testing.T, target string) *udpProxy {
	t.Helper()
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	raddr, err := net.ResolveUDPAddr("udp", target)
	if err != nil {
		t.Fatal(err)
	}
	back, err := net.DialUDP("udp", nil, raddr)
	if err != nil {
		t.Fatal(err)
	}
	p := &udpProxy{front: front, back: back}
	p.wg.Add(2)
	go p.forward()
	go p.backward()
	t.Cleanup(func() {
		_ = front.Close()
		_ = back.Close()
		p.wg.Wait()
	})
	return p
}

func (p *udpProxy) addr() string { return p.front.LocalAddr().String() }

func (p *udpProxy) cut() { p.isCut.Store(true) }

func (p *udpProxy) forward() {
	defer p.wg.Done()
	buf := make([]byte, 64<<10)
	for {
		n, from, err := p.front.ReadFromUDP(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.client.Store(from)
		if !p.isCut.Load() {
			_, _ = p.back.Write(buf[:n])
		}
	}
}

func (p *udpProxy) backward() {
	defer p.wg.Done()
	buf := make([]byte, 64<<10)
	for {
		n, err := p.back.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if to := p.client.Load(); to != nil && !p.isCut.Load() {
			_, _ = p.front.WriteToUDP(buf[:n], to)
		}
	}
}

// proxyFor puts a proxy of m's kind in front of s.
func proxyFor(t *testing.T, m mapping, s *server) proxy {
	t.Helper()
	if m.kind == transport.WebSocket {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return startTCPProxy(t, ln, s.addr())
	}
	return startUDPProxy(t, s.wt.UDPAddr().String())
}
