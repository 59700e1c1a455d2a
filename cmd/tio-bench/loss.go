package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
)

// The loss-lane scenario: what the unreliable lane is for. A sender and a
// receiver run in two network namespaces joined by a link that delays each
// packet by half the RTT and drops the loss rate in each direction
// (lossNet); the sender sends cursor updates at a fixed rate, and the
// receiver samples the age of the newest cursor state it holds.

// lossLanes are the three ways the same cursor updates travel.
var lossLanes = []struct{ name, what string }{
	{"unreliable", "WebTransport, SendDatagram on an unreliable event (§7)"},
	{"reliable", "WebTransport, Emit on a reliable event (one stream, in order)"},
	{"ws newest", "the WebSocket mapping, the same unreliable event with fallback newest"},
}

const (
	lossRTT         = 50 * time.Millisecond
	lossUpdateRate  = 60 // cursor updates per second
	lossAgeBound    = 100 * time.Millisecond
	lossSampleEvery = time.Millisecond
	lossTail        = 5 * time.Second // the most a sender stays open past its schedule

	lossReceiverEnv = "TIO_BENCH_LOSS_RECEIVER" // the lane, in the receiving namespace
	lossSenderEnv   = "TIO_BENCH_LOSS_SENDER"   // the lane, in the sending namespace
	lossURLEnv      = "TIO_BENCH_LOSS_URL"
	lossHashEnv     = "TIO_BENCH_LOSS_CERT_HASH"
	lossForEnv      = "TIO_BENCH_LOSS_FOR" // how long the sender sends
)

var lossRates = []float64{0, 1, 5}

// lossScenario runs only when named: it needs root.
var lossScenario = scenario{"loss-lane", "newest cursor state age under 50 ms RTT and 0/1/5 % loss (network namespaces joined by a delaying, dropping TUN link; root)", runLossLane}

// errSkipped marks a scenario this host cannot run; run prints it and goes on.
type errSkipped struct{ why string }

func (e errSkipped) Error() string { return "skipped: " + e.why }

func runLossLane(ctx context.Context, cfg config) ([]sample, error) {
	if os.Geteuid() != 0 {
		return nil, errSkipped{"it creates network namespaces and TUN devices, which needs root"}
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, errSkipped{"ip is not on PATH (Debian: apt-get install iproute2)"}
	}
	var out []sample
	for _, loss := range lossRates {
		n, err := newLossNet(loss)
		if err != nil {
			return nil, err
		}
		for _, lane := range lossLanes {
			age, err := lossRound(ctx, cfg, n, lane.name)
			if err != nil {
				n.remove()
				return nil, fmt.Errorf("%.0f %% loss, %s: %w", loss, lane.name, err)
			}
			name := fmt.Sprintf("%s, %.0f %% loss", lane.name, loss)
			out = append(out,
				sample{Figure: name + ": newest age p50", Unit: "ms", Lower: true, Ours: age.P50,
					Note: fmt.Sprintf("%s; %d cursor updates/s for %v, %v RTT (%v each way), the loss rate in each direction, between two network namespaces; age of the newest state held by the receiver, sampled every %v", lane.what, lossUpdateRate, cfg.duration, lossRTT, lossRTT/2, lossSampleEvery)},
				sample{Figure: name + ": newest age p99", Unit: "ms", Lower: true, Ours: age.P99},
				sample{Figure: name + ": time older than 100 ms", Unit: "fraction", Lower: true, Ours: age.Older},
			)
		}
		n.remove()
		carried, dropped := n.carried.Load(), n.dropped.Load()
		out = append(out, sample{Figure: fmt.Sprintf("link, %.0f %% loss: packets dropped", loss), Unit: "fraction", Lower: true,
			Ours: float64(dropped) / float64(max(carried+dropped, 1)), Note: "what the link dropped of the packets it was given, both directions, all three lanes"})
	}
	return out, nil
}

// lossNet is the two namespaces, each holding one end of the link: a TUN
// device whose packets this process carries to the other end after half
// the RTT, dropping the loss rate in each direction. This is what tc netem
// does on a veth pair, in user space: it needs only root and /dev/net/tun,
// where netem needs the kernel's sch_netem, which some kernels (this
// project's measurement host among them) are built without.
type lossNet struct {
	sender, receiver string
	receiverIP       string
	tuns             []*os.File
	pumps            sync.WaitGroup
	dropped, carried atomic.Int64
}

func newLossNet(loss float64) (*lossNet, error) {
	id := os.Getpid()
	n := &lossNet{sender: fmt.Sprintf("tiobench-%d-c", id), receiver: fmt.Sprintf("tiobench-%d-s", id), receiverIP: "10.234.0.1"}
	ends := []struct{ ns, dev, addr string }{
		{n.sender, fmt.Sprintf("tb%dc", id), "10.234.0.2/24"},
		{n.receiver, fmt.Sprintf("tb%ds", id), n.receiverIP + "/24"},
	}
	fail := func(err error) (*lossNet, error) {
		n.remove()
		return nil, err
	}
	for _, e := range ends {
		if err := ipCommand("netns", "add", e.ns); err != nil {
			return fail(err)
		}
		tun, err := openTUN(e.dev)
		if err != nil {
			return fail(errSkipped{"no TUN device: " + err.Error()})
		}
		n.tuns = append(n.tuns, tun)
		for _, args := range [][]string{
			{"link", "set", e.dev, "netns", e.ns},
			{"-n", e.ns, "addr", "add", e.addr, "dev", e.dev},
			{"-n", e.ns, "link", "set", e.dev, "up"},
			{"-n", e.ns, "link", "set", "lo", "up"},
		} {
			if err := ipCommand(args...); err != nil {
				return fail(err)
			}
		}
	}
	n.pumps.Go(func() { n.pump(n.tuns[0], n.tuns[1], loss) })
	n.pumps.Go(func() { n.pump(n.tuns[1], n.tuns[0], loss) })
	return n, nil
}

func ipCommand(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err == nil {
		return nil
	}
	msg := strings.TrimSpace(string(out))
	if strings.Contains(msg, "Operation not permitted") || strings.Contains(msg, "Permission denied") {
		return errSkipped{"network namespaces are not permitted here: " + msg}
	}
	return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, msg)
}

// openTUN creates a TUN device (IP packets, no packet information header).
func openTUN(name string) (*os.File, error) {
	fd, err := syscall.Open("/dev/net/tun", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var req struct {
		name  [syscall.IFNAMSIZ]byte
		flags uint16
		_     [22]byte
	}
	copy(req.name[:], name)
	req.flags = syscall.IFF_TUN | syscall.IFF_NO_PI
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TUNSETIFF, uintptr(unsafe.Pointer(&req))); errno != 0 {
		_ = syscall.Close(fd)
		return nil, errno
	}
	if err := syscall.SetNonblock(fd, true); err != nil { // so reads go through the runtime's poller and Close ends them
		_ = syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// delayed is a packet and when it may leave.
type delayed struct {
	at  time.Time
	pkt []byte
}

// pump carries packets from one end to the other: each leaves half the
// RTT after it arrived, in order, unless dropped (loss in percent). Up to
// lossQueue packets wait, as netem's default limit of 1,000 bounds its
// queue.
func (n *lossNet) pump(from, to *os.File, loss float64) {
	const lossQueue = 1000
	q := make(chan delayed, lossQueue)
	var out sync.WaitGroup
	out.Go(func() {
		for d := range q {
			time.Sleep(time.Until(d.at))
			if _, err := to.Write(d.pkt); err != nil && !errors.Is(err, os.ErrClosed) {
				return
			}
		}
	})
	defer out.Wait()
	defer close(q)
	for {
		buf := make([]byte, 65535)
		m, err := from.Read(buf)
		if err != nil {
			return
		}
		if rand.Float64()*100 < loss {
			n.dropped.Add(1)
			continue
		}
		select {
		case q <- delayed{at: time.Now().Add(lossRTT / 2), pkt: buf[:m]}:
			n.carried.Add(1)
		default:
			n.dropped.Add(1) // the queue is full, as netem drops past its limit
		}
	}
}

// remove stops the pumps and deletes both namespaces, which deletes the
// devices with them.
func (n *lossNet) remove() {
	for _, t := range n.tuns {
		_ = t.Close()
	}
	n.pumps.Wait()
	_ = exec.Command("ip", "netns", "del", n.sender).Run()
	_ = exec.Command("ip", "netns", "del", n.receiver).Run()
}

// ageFigures are the receiver's figures.
type ageFigures struct {
	P50, P99, Older float64 // ms, ms, fraction of samples older than lossAgeBound
	Updates         int64   // cursor updates received
	Error           string  `json:",omitempty"`
}

// lossRound runs a receiver in one namespace and a sender in the other.
func lossRound(ctx context.Context, cfg config, n *lossNet, lane string) (ageFigures, error) {
	self, err := os.Executable()
	if err != nil {
		return ageFigures{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.duration+time.Minute)
	defer cancel()
	recv := exec.CommandContext(ctx, "ip", "netns", "exec", n.receiver, self)
	recv.Env = append(os.Environ(), lossReceiverEnv+"="+lane, lossURLEnv+"="+n.receiverIP, lossForEnv+"="+cfg.duration.String())
	recv.Stderr = os.Stderr
	out, err := recv.StdoutPipe()
	if err != nil {
		return ageFigures{}, err
	}
	if err := recv.Start(); err != nil {
		return ageFigures{}, err
	}
	defer func() { _ = recv.Wait() }()
	dec := json.NewDecoder(bufio.NewReader(out))
	var hello childHello
	if err := dec.Decode(&hello); err != nil || hello.Error != "" {
		return ageFigures{}, fmt.Errorf("receiver: %v %s", err, hello.Error)
	}
	send := exec.CommandContext(ctx, "ip", "netns", "exec", n.sender, self)
	send.Env = append(os.Environ(), lossSenderEnv+"="+lane, lossURLEnv+"="+hello.URL, lossHashEnv+"="+hello.CertHash, lossForEnv+"="+cfg.duration.String())
	if b, err := send.CombinedOutput(); err != nil {
		return ageFigures{}, fmt.Errorf("sender: %v: %s", err, b)
	}
	var age ageFigures
	if err := dec.Decode(&age); err != nil {
		return ageFigures{}, fmt.Errorf("receiver: %w", err)
	}
	if age.Error != "" {
		return age, errors.New(age.Error)
	}
	return age, nil
}

// runLossChild is a receiver's or a sender's whole life.
func runLossChild(stdout io.Writer) (bool, error) {
	recv, send := os.Getenv(lossReceiverEnv), os.Getenv(lossSenderEnv)
	if recv == "" && send == "" {
		return false, nil
	}
	d, err := time.ParseDuration(os.Getenv(lossForEnv))
	if err != nil {
		return true, err
	}
	if recv != "" {
		return true, lossReceive(recv, os.Getenv(lossURLEnv), d, stdout)
	}
	return true, lossSend(send, os.Getenv(lossURLEnv), os.Getenv(lossHashEnv), d)
}

// lossReceive serves one session on ip, holds the newest cursor state it
// received and samples its age for d from the first update: the sender's
// schedule, not the session's end, which a lost close would delay to the
// idle timeout.
func lossReceive(lane, ip string, d time.Duration, stdout io.Writer) error {
	enc := json.NewEncoder(stdout)
	var (
		newest  atomic.Int64 // send time of the newest state, Unix ns
		updates atomic.Int64
		ended   = make(chan struct{})
		once    sync.Once
	)
	srv, err := tio.NewServer(benchContract, tio.ServerOptions{})
	if err != nil {
		return err
	}
	defer srv.Close()
	take := func(_ context.Context, _ *tio.Peer, b []byte) error {
		if t, ok := stampOf(b); ok {
			updates.Add(1)
			for {
				cur := newest.Load()
				if t.UnixNano() <= cur || newest.CompareAndSwap(cur, t.UnixNano()) {
					break
				}
			}
		}
		return nil
	}
	srv.HandleEmit(evMove, take)
	srv.HandleEmit(evPing, take)
	serve := func(conn transport.Conn, _ *transport.Request, data any) {
		_ = srv.Serve(conn, data)
		once.Do(func() { close(ended) })
	}
	var hello childHello
	var stop func()
	if lane == "ws newest" {
		h := &websocket.Handler{Path: benchPath, OnSession: serve, MaxSessions: 4}
		url, hs, err := serveHTTPOn(ip+":0", h)
		if err != nil {
			return enc.Encode(childHello{Error: err.Error()})
		}
		hello.URL, stop = "ws://"+url+benchPath, func() { _ = hs.Close() }
	} else {
		c, err := benchCert()
		if err != nil {
			return err
		}
		// The namespace's address is not loopback, where a development
		// listener refuses to bind: the same certificate goes in as a
		// plain one, pinned by the sender.
		ln, err := webtransport.Listen(webtransport.Options{Addr: ip + ":0", Path: benchPath, TLSConfig: &tls.Config{Certificates: []tls.Certificate{c.TLS}}, Handler: serve, CloseGrace: 200 * time.Millisecond})
		if err != nil {
			return enc.Encode(childHello{Error: err.Error()})
		}
		hello.URL, hello.CertHash = ln.URL(), hex.EncodeToString(c.SHA256[:])
		stop = func() { _ = ln.Shutdown(context.Background()) }
	}
	defer stop()
	if err := enc.Encode(hello); err != nil {
		return err
	}
	var ages latencies
	var older int
	var until time.Time
	t := time.NewTicker(lossSampleEvery)
	defer t.Stop()
	for {
		select {
		case <-ended:
			if len(ages) == 0 {
				return enc.Encode(ageFigures{Error: fmt.Sprintf("the session ended with no cursor state sampled (%d updates)", updates.Load())})
			}
			return enc.Encode(ageFigures{Error: fmt.Sprintf("the session ended %v before the sender's schedule did", time.Until(until).Round(time.Millisecond))})
		case now := <-t.C:
			ns := newest.Load()
			if ns == 0 {
				continue
			}
			if until.IsZero() {
				until = now.Add(d)
			}
			if now.After(until) {
				return enc.Encode(ageFigures{P50: ages.percentile(0.5), P99: ages.percentile(0.99), Older: float64(older) / float64(len(ages)), Updates: updates.Load()})
			}
			age := now.Sub(time.Unix(0, ns))
			ages = append(ages, age)
			if age > lossAgeBound {
				older++
			}
		}
	}
}

// lossSend sends lossUpdateRate cursor updates per second for d, then
// closes the session.
func lossSend(lane, url, hash string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	var conn transport.Conn
	var err error
	if lane == "ws newest" {
		conn, err = websocket.Dial(ctx, url, websocket.DialOptions{})
	} else {
		h, herr := certHash(childHello{CertHash: hash})
		if herr != nil {
			return herr
		}
		conn, err = webtransport.Dial(ctx, url, webtransport.DialOptions{CertHashes: [][32]byte{h}, CloseGrace: 200 * time.Millisecond})
	}
	if err != nil {
		return err
	}
	c, err := tio.NewClient(ctx, conn, benchContract, tio.Options{})
	if err != nil {
		return err
	}
	defer closeClient(c)
	var buf []byte
	start := time.Now()
	for i := 0; time.Since(start) < d; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / lossUpdateRate)))
		buf = stamped(buf, time.Now(), 64)
		if lane == "reliable" {
			err = c.Emit(evPing, buf)
		} else {
			err = c.SendDatagram(evMove, buf)
		}
		if err != nil {
			return err
		}
	}
	// The receiver's window ends d after the first update it got, which
	// left here half an RTT after start, or later when the link dropped the
	// first updates or the session's first packets (a retransmission waits
	// out QUIC's probe timeout): stay open until the receiver, done, ends
	// the session, for at most lossTail.
	select {
	case <-c.Done():
	case <-time.After(lossTail):
	}
	return nil
}
