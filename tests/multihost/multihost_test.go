package multihost

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/transport-io/tiogen/cmd/tio-conformance/conformance"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
)

// Timings of the hosts: a lease long enough to ride out the 2 s outage
// and a quarantine shortened so the test can watch a killed host's
// ordinal come back. A host renews every quarter lease and fences three
// quarters of a lease after it sent its last renewal, so whatever its
// renewal phase it rides out any outage shorter than half the lease (3 s):
// the outage, NATS's restart and the hosts' reconnection and renewal must
// fit in that, so the outage is timed from the moment NATS stops serving.
const (
	lease      = 6 * time.Second
	quarantine = 3 * time.Second
	outage     = 2 * time.Second
	// wait bounds every wait; nothing should take a tenth of it.
	wait = 15 * time.Second
)

// proc is a child process whose stderr is kept line by line.
type proc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	out  *bufio.Scanner

	mu   sync.Mutex
	log  []string
	done chan struct{}
}

func start(t *testing.T, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, name: name, cmd: cmd, out: bufio.NewScanner(stdout), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		lines := bufio.NewScanner(stderr)
		for lines.Scan() {
			p.mu.Lock()
			p.log = append(p.log, lines.Text())
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() { p.kill(syscall.SIGKILL) })
	return p
}

// line reads the next stdout line.
func (p *proc) line() string {
	p.t.Helper()
	got := make(chan string, 1)
	go func() {
		if p.out.Scan() {
			got <- p.out.Text()
		}
		close(got)
	}()
	select {
	case l, ok := <-got:
		if !ok {
			p.t.Fatalf("%s exited before printing its line; stderr:\n%s", p.name, p.stderr())
		}
		go io.Copy(io.Discard, p.cmd.Stdout.(io.Reader))
		return l
	case <-time.After(wait):
		p.t.Fatalf("%s printed nothing within %v; stderr:\n%s", p.name, wait, p.stderr())
	}
	return ""
}

func (p *proc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.log, "\n")
}

// count reports how many stderr lines contain s.
func (p *proc) count(s string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, l := range p.log {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// awaitLog waits until more than before stderr lines contain s, and
// returns how long that took.
func (p *proc) awaitLog(s string, before int, within time.Duration) time.Duration {
	p.t.Helper()
	began := time.Now()
	for p.count(s) <= before {
		if time.Since(began) > within {
			p.t.Fatalf("%s logged no new %q within %v; stderr:\n%s", p.name, s, within, p.stderr())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(began)
}

func (p *proc) signal(sig syscall.Signal) {
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %v to %s: %v", sig, p.name, err)
	}
}

// kill signals the process and waits for it; a second kill does nothing.
func (p *proc) kill(sig syscall.Signal) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(sig)
	<-p.done
	_ = p.cmd.Wait()
}

// natsServer is the NATS server process; it restarts on the same port and
// store.
type natsServer struct {
	*proc
	dir, url string
	port     int
}

func startNATS(t *testing.T, n *natsServer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envServe+"="+n.dir, envPort+"="+strconv.Itoa(n.port))
	n.proc = start(t, "nats-server", cmd)
	l := n.line()
	url, ok := strings.CutPrefix(l, "nats ")
	if !ok {
		t.Fatalf("nats-server printed %q", l)
	}
	n.url = url
	i := strings.LastIndex(url, ":")
	n.port, _ = strconv.Atoi(url[i+1:])
}

type host struct {
	*proc
	ready   conformance.Ready
	ordinal int
}

var ordinalLine = regexp.MustCompile(`as node (\S+), host ordinal (\d+)`)

func startHost(t *testing.T, bin, certDir, natsURL, node string) *host {
	t.Helper()
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--dev", "--dev-dir", certDir, "--nats", natsURL, "--node-id", node,
		"--nats-lease", lease.String(), "--nats-test-quarantine", quarantine.String())
	h := &host{proc: start(t, node, cmd)}
	if err := json.Unmarshal([]byte(h.line()), &h.ready); err != nil {
		t.Fatalf("%s readiness: %v", node, err)
	}
	deadline := time.Now().Add(wait)
	for {
		if m := ordinalLine.FindStringSubmatch(h.stderr()); m != nil && m[1] == node {
			h.ordinal, _ = strconv.Atoi(m[2])
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s reported no host ordinal; stderr:\n%s", node, h.stderr())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// client is a conformance client in one room, keeping every said.
type client struct {
	*conformance.Client
	mu   sync.Mutex
	said []string
}

func dial(t *testing.T, h *host, room string) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	pin, err := webtransport.HashFromHex(h.ready.CertSHA256)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := conformance.Dial(ctx, h.ready.URL, endpoint.DialOptions{CertHashes: [][32]byte{pin}})
	if err != nil {
		t.Fatalf("dial %s: %v", h.name, err)
	}
	c := &client{Client: cl}
	cl.OnSaid(func(v conformance.Text) {
		c.mu.Lock()
		c.said = append(c.said, v.Text)
		c.mu.Unlock()
	})
	if _, err := cl.Enter(ctx, conformance.RoomName{Room: room}); err != nil {
		t.Fatalf("enter %s on %s: %v", room, h.name, err)
	}
	t.Cleanup(func() { _ = cl.Close(tio.NoError, "test over"); _ = cl.Wait() })
	return c
}

func (c *client) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.said...)
}

func (c *client) has(s string) bool {
	for _, g := range c.got() {
		if g == s {
			return true
		}
	}
	return false
}

func (c *client) ended() bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}

func say(t *testing.T, c *client, text string) {
	t.Helper()
	if err := c.EmitSay(conformance.Text{Text: text}); err != nil {
		t.Fatalf("say %q: %v", text, err)
	}
}

func awaitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSpec7_3_ThreeHostsOneNATS(t *testing.T) {
	top := t // processes started in a subtest outlive it
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "tio-conformance")
	build := exec.Command("go", "build", "-o", bin, "github.com/transport-io/tiogen/cmd/tio-conformance")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the conformance server: %v\n%s", err, out)
	}
	n := &natsServer{dir: filepath.Join(tmp, "nats"), port: -1}
	startNATS(t, n)
	certDir := filepath.Join(tmp, "cert")
	var hosts []*host
	for i := range 3 {
		hosts = append(hosts, startHost(t, bin, certDir, n.url, fmt.Sprintf("h%d", i)))
	}
	ordinals := map[int]string{}
	for _, h := range hosts {
		if other, ok := ordinals[h.ordinal]; ok {
			t.Fatalf("%s and %s both hold host ordinal %d", other, h.name, h.ordinal)
		}
		ordinals[h.ordinal] = h.name
	}

	t.Run("BroadcastOnceInOrderNoSelfEcho", func(t *testing.T) {
		const each = 50
		var members []*client
		for _, h := range hosts {
			members = append(members, dial(t, h, "hall"), dial(t, h, "hall"))
		}
		for i := range each {
			say(t, members[0], fmt.Sprintf("h0-%d", i))
			say(t, members[2], fmt.Sprintf("h1-%d", i))
		}
		for i, m := range members {
			awaitCond(t, fmt.Sprintf("member %d to get %d says", i, 2*each), func() bool { return len(m.got()) >= 2*each })
		}
		time.Sleep(200 * time.Millisecond)
		for i, m := range members {
			got := m.got()
			if len(got) != 2*each {
				t.Fatalf("member %d got %d says for %d broadcasts (a duplicate or a self-echo)", i, len(got), 2*each)
			}
			next := map[string]int{}
			for _, s := range got {
				from, num, _ := strings.Cut(s, "-")
				if k, _ := strconv.Atoi(num); k != next[from] {
					t.Fatalf("member %d got %q when %s-%d was due: out of order", i, s, from, next[from])
				}
				next[from]++
			}
		}
	})

	// SIGKILL: the host cannot release its ordinal; it stays blocked for
	// the lease and the quarantine.
	killed := hosts[2]
	killed.kill(syscall.SIGKILL)
	killedAt := time.Now()
	if h := startHost(t, bin, certDir, n.url, "h3"); h.ordinal == killed.ordinal {
		t.Fatalf("a host started right after %s was killed got its ordinal %d", killed.name, h.ordinal)
	}

	t.Run("FrozenNATSDetected", func(t *testing.T) {
		disc, rec := hosts[0].count("event=disconnected"), hosts[0].count("event=reconnected")
		n.signal(syscall.SIGSTOP)
		took := hosts[0].awaitLog("event=disconnected", disc, wait)
		n.signal(syscall.SIGCONT)
		t.Logf("a frozen NATS was noticed after %v", took)
		if took > 3*time.Second {
			t.Fatalf("a frozen NATS was noticed after %v, want within 3 s", took)
		}
		hosts[0].awaitLog("event=reconnected", rec, wait)
	})

	t.Run("KilledHostOrdinalReturnsAfterQuarantine", func(t *testing.T) {
		// Past the lease but inside the quarantine: still blocked.
		if d := time.Until(killedAt.Add(lease + quarantine/3)); d > 0 {
			time.Sleep(d)
		} else {
			t.Fatalf("the check inside the quarantine comes %v too late", -d)
		}
		if h := startHost(top, bin, certDir, n.url, "h4"); h.ordinal == killed.ordinal {
			t.Fatalf("%s's ordinal %d was reissued %v after the kill, inside its %v lease and %v quarantine",
				killed.name, killed.ordinal, time.Since(killedAt), lease, quarantine)
		}
		var h *host
		deadline := killedAt.Add(lease + quarantine + wait)
		for i := 0; ; i++ {
			h = startHost(top, bin, certDir, n.url, fmt.Sprintf("late%d", i))
			if h.ordinal == killed.ordinal {
				break
			}
			h.kill(syscall.SIGKILL) // its own ordinal stays blocked: no matter
			if time.Now().After(deadline) {
				t.Fatalf("%s's ordinal %d was not reissued within %v of the kill", killed.name, killed.ordinal, time.Since(killedAt))
			}
			time.Sleep(250 * time.Millisecond)
		}
		// The host was last seen at its last renewal, at most a quarter
		// lease before the kill; its lease ran a whole lease from there.
		if since, least := time.Since(killedAt), lease-lease/4+quarantine; since < least {
			t.Fatalf("ordinal reissued %v after the kill, before the %v its last renewal's lease and the quarantine bound", since, least)
		}
	})
	t.Run("OutageFailsLoudlyNothingTwiceResumes", func(t *testing.T) {
		p0, p1 := dial(t, hosts[0], "probe"), dial(t, hosts[1], "probe")
		r0, r1 := dial(t, hosts[0], "resume"), dial(t, hosts[1], "resume")
		disc0, disc1 := hosts[0].count("event=disconnected"), hosts[1].count("event=disconnected")
		failed := hosts[0].count("unreachable")
		// NATS drops its clients at once but takes about a second more to
		// shut JetStream down and exit; that second is part of the outage.
		down := time.Now()
		n.kill(syscall.SIGTERM)
		hosts[0].awaitLog("event=disconnected", disc0, wait)
		hosts[1].awaitLog("event=disconnected", disc1, wait)
		say(t, p0, "during")
		awaitCond(t, "the local member to get the say made during the outage", func() bool { return p0.has("during") })
		hosts[0].awaitLog("unreachable", failed, wait)
		rec0, rec1 := hosts[0].count("event=reconnected"), hosts[1].count("event=reconnected")
		time.Sleep(time.Until(down.Add(outage)))
		startNATS(top, n)
		back := time.Now()
		notFenced := func() {
			t.Helper()
			for _, h := range hosts[:2] {
				if h.count("event=fenced") > 0 {
					t.Fatalf("%s was fenced by a %v outage (NATS down for %v) and a freeze, well inside its %v lease; stderr:\n%s",
						h.name, outage, back.Sub(down), lease, h.stderr())
				}
			}
		}
		// A broadcast made while a host reconnects fails (and its room's
		// members elsewhere are closed to resync): wait for both hosts.
		hosts[0].awaitLog("event=reconnected", rec0, wait)
		hosts[1].awaitLog("event=reconnected", rec1, wait)
		// A fenced host closes every session: say so rather than time out
		// on what follows from it.
		notFenced()
		say(t, r0, "resumed")
		awaitCond(t, "a broadcast to cross hosts after NATS returned", func() bool { return r1.has("resumed") })
		resumed := time.Since(back)
		t.Logf("broadcasts crossed hosts again %v after NATS returned", resumed)
		if resumed > time.Second {
			t.Fatalf("broadcasts resumed %v after NATS returned, want within 1 s", resumed)
		}
		time.Sleep(100 * time.Millisecond)
		if got := r1.got(); len(got) != 1 {
			t.Fatalf("the member in a room that lost nothing got %q, want one \"resumed\"", got)
		}
		// p1 missed "during": its session is closed so its client resyncs.
		say(t, p0, "after")
		awaitCond(t, "the member that missed a broadcast to be closed", p1.ended)
		if p1.has("during") {
			t.Fatal("the say that failed reached the other host")
		}
		if r1.ended() {
			t.Fatal("a member of a room that lost nothing was closed")
		}
		notFenced()
	})

}
