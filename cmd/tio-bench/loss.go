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
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
)

// The loss-lane scenario: what the unreliable lane is for. A sender and a
// receiver run in two network namespaces joined by a veth pair whose ends
// both delay by half the RTT and drop the loss rate with tc netem; the
// sender sends cursor updates at a fixed rate, and the receiver samples the
// age of the newest cursor state it holds.

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

	lossReceiverEnv = "TIO_BENCH_LOSS_RECEIVER" // the lane, in the receiving namespace
	lossSenderEnv   = "TIO_BENCH_LOSS_SENDER"   // the lane, in the sending namespace
	lossURLEnv      = "TIO_BENCH_LOSS_URL"
	lossHashEnv     = "TIO_BENCH_LOSS_CERT_HASH"
	lossForEnv      = "TIO_BENCH_LOSS_FOR" // how long the sender sends
)

var lossRates = []float64{0, 1, 5}

// lossScenario runs only when named: it needs root and netem.
var lossScenario = scenario{"loss-lane", "newest cursor state age under 50 ms RTT and 0/1/5 % loss (network namespaces, veth, tc netem; root)", runLossLane}

// errSkipped marks a scenario this host cannot run; run prints it and goes on.
type errSkipped struct{ why string }

func (e errSkipped) Error() string { return "skipped: " + e.why }

func runLossLane(ctx context.Context, cfg config) ([]sample, error) {
	if os.Geteuid() != 0 {
		return nil, errSkipped{"it creates network namespaces, a veth pair and tc netem qdiscs, which needs root"}
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, errSkipped{tool + " is not on PATH (Debian: apt-get install iproute2)"}
		}
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
					Note: fmt.Sprintf("%s; %d cursor updates/s for %v, %v RTT (netem delay %v on each veth end), loss on each end; age of the newest state held by the receiver, sampled every %v", lane.what, lossUpdateRate, cfg.duration, lossRTT, lossRTT/2, lossSampleEvery)},
				sample{Figure: name + ": newest age p99", Unit: "ms", Lower: true, Ours: age.P99},
				sample{Figure: name + ": time older than 100 ms", Unit: "fraction", Lower: true, Ours: age.Older},
			)
		}
		n.remove()
	}
	return out, nil
}

// lossNet is the two namespaces and their veth pair.
type lossNet struct {
	sender, receiver string
	receiverIP       string
}

func newLossNet(loss float64) (*lossNet, error) {
	id := os.Getpid()
	n := &lossNet{sender: fmt.Sprintf("tiobench-%d-c", id), receiver: fmt.Sprintf("tiobench-%d-s", id), receiverIP: "10.234.0.1"}
	vs, vr := fmt.Sprintf("tb%dc", id), fmt.Sprintf("tb%ds", id)
	netem := []string{"delay", (lossRTT / 2).String(), "loss", strconv.FormatFloat(loss, 'f', -1, 64) + "%", "limit", "10000"}
	steps := [][]string{
		{"ip", "netns", "add", n.sender},
		{"ip", "netns", "add", n.receiver},
		{"ip", "link", "add", vs, "type", "veth", "peer", "name", vr},
		{"ip", "link", "set", vs, "netns", n.sender},
		{"ip", "link", "set", vr, "netns", n.receiver},
		{"ip", "-n", n.sender, "addr", "add", "10.234.0.2/30", "dev", vs},
		{"ip", "-n", n.receiver, "addr", "add", n.receiverIP + "/30", "dev", vr},
		{"ip", "-n", n.sender, "link", "set", vs, "up"},
		{"ip", "-n", n.receiver, "link", "set", vr, "up"},
		{"ip", "-n", n.sender, "link", "set", "lo", "up"},
		{"ip", "-n", n.receiver, "link", "set", "lo", "up"},
		append([]string{"ip", "netns", "exec", n.sender, "tc", "qdisc", "add", "dev", vs, "root", "netem"}, netem...),
		append([]string{"ip", "netns", "exec", n.receiver, "tc", "qdisc", "add", "dev", vr, "root", "netem"}, netem...),
	}
	for _, s := range steps {
		out, err := exec.Command(s[0], s[1:]...).CombinedOutput()
		if err != nil {
			n.remove()
			msg := strings.TrimSpace(string(out))
			if strings.Contains(msg, "qdisc kind is unknown") {
				return nil, errSkipped{"this kernel has no netem qdisc (sch_netem): " + msg}
			}
			if strings.Contains(msg, "Operation not permitted") {
				return nil, errSkipped{"network namespaces are not permitted here: " + msg}
			}
			return nil, fmt.Errorf("%s: %v: %s", strings.Join(s, " "), err, msg)
		}
	}
	return n, nil
}

// remove deletes both namespaces, which deletes the veth pair with them.
func (n *lossNet) remove() {
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
	take := func(_ *tio.Peer, b []byte) error {
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
	// The receiver's window ends d after its first update, which left here
	// half an RTT after start: stay open past it.
	time.Sleep(2 * lossRTT)
	return nil
}
