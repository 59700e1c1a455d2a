package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sync/atomic"
	"syscall"
	"time"

	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/wire"
)

// The fan-out server runs in a child process (this binary, or Node for
// socket.io) so that its CPU time is its own. It prints a childHello line,
// then answers one childReply line per childCommand line on stdin, and exits
// when stdin closes. socketio/server.mjs speaks the same lines.
const peerServerEnv = "TIO_BENCH_PEER_SERVER"

// peerProfileEnv names a file prefix: the child writes a CPU profile of
// each round to <prefix>-<subject>-burst-<pid>.pprof or -paced-<pid>.pprof.
const peerProfileEnv = "TIO_BENCH_PEER_PROFILE"

// peerFlushDelayEnv carries -flush-delay to a tiogen server child.
const peerFlushDelayEnv = "TIO_BENCH_PEER_FLUSH_DELAY"

type childHello struct {
	URL      string `json:"url"`
	CertHash string `json:"cert_hash,omitempty"` // hex SHA-256 of the WebTransport certificate
	Error    string `json:"error,omitempty"`
}

const (
	opMembers = "members" // reply once Members members have joined
	opRound   = "round"   // broadcast Count payloads of Size bytes, every Interval; reply when sent
	opCPU     = "cpu"     // reply with the CPU time since the last round began
)

type childCommand struct {
	Op       string        `json:"op"`
	Members  int           `json:"members,omitempty"`
	Count    int           `json:"count,omitempty"`
	Size     int           `json:"size,omitempty"`
	Interval time.Duration `json:"interval_ns,omitempty"`
}

type childReply struct {
	Members   int     `json:"members,omitempty"`
	Sent      int64   `json:"sent,omitempty"`
	CPUMicros float64 `json:"cpu_us,omitempty"`
	Error     string  `json:"error,omitempty"`
}

// fanoutServer is the parent's handle on a fan-out server child.
type fanoutServer struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *json.Decoder
	hello childHello
}

func startFanoutServer(ctx context.Context, cfg config, subject string) (*fanoutServer, error) {
	var cmd *exec.Cmd
	if subject == subSocketIO {
		dir, err := socketIODir()
		if err != nil {
			return nil, err
		}
		cmd = exec.CommandContext(ctx, cfg.peer.node, filepath.Join(dir, "server.mjs"))
	} else {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cmd = exec.CommandContext(ctx, self)
		cmd.Env = append(os.Environ(), peerServerEnv+"="+subject)
		cmd.Env = append(cmd.Env, peerFlushDelayEnv+"="+cfg.peer.flushDelay.String())
		if cfg.peer.serverProfile != "" {
			cmd.Env = append(cmd.Env, peerProfileEnv+"="+cfg.peer.serverProfile)
		}
	}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &fanoutServer{cmd: cmd, in: in, out: json.NewDecoder(bufio.NewReader(out))}
	if err := s.out.Decode(&s.hello); err != nil {
		s.close()
		return nil, fmt.Errorf("no hello from the server child: %w", err)
	}
	if s.hello.Error != "" {
		s.close()
		return nil, errors.New(s.hello.Error)
	}
	return s, nil
}

// call sends one command and reads its reply.
func (s *fanoutServer) call(c childCommand) (childReply, error) {
	if err := json.NewEncoder(s.in).Encode(c); err != nil {
		return childReply{}, fmt.Errorf("server child, %s: %w", c.Op, err)
	}
	var r childReply
	if err := s.out.Decode(&r); err != nil {
		return childReply{}, fmt.Errorf("server child, %s: no reply: %w", c.Op, err)
	}
	if r.Error != "" {
		return r, fmt.Errorf("server child, %s: %s", c.Op, r.Error)
	}
	return r, nil
}

// close ends the child by closing its stdin, and kills it if it does not
// exit by itself.
func (s *fanoutServer) close() {
	_ = s.in.Close()
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// fanoutTarget is a server a child runs: where to reach it, how many members
// have joined, and how it broadcasts.
type fanoutTarget struct {
	hello     childHello
	joined    func() int
	broadcast func(payload []byte) error
	close     func()
}

var fanoutTargets = map[string]func() (*fanoutTarget, error){
	subTioWT:      tioWTTarget,
	subTioWS:      tioWSTarget,
	subRawWT:      rawWTTarget,
	subRawWS:      rawWSTarget,
	subCentrifuge: centrifugeTarget,
	subTioWTLean:  tioWTTarget,
	subRawWTTio:   func() (*fanoutTarget, error) { return wtHubTarget(true) },
}

// runPeerServerChild is the child's main when peerServerEnv names a subject.
func runPeerServerChild(stdin io.Reader, stdout io.Writer) (bool, error) {
	subject := os.Getenv(peerServerEnv)
	if subject == "" {
		return false, nil
	}
	enc := json.NewEncoder(stdout)
	start, ok := fanoutTargets[subject]
	if !ok {
		return true, enc.Encode(childHello{Error: fmt.Sprintf("no fan-out server for %q", subject)})
	}
	t, err := start()
	if err != nil {
		return true, enc.Encode(childHello{Error: err.Error()})
	}
	defer t.close()
	if err := enc.Encode(t.hello); err != nil {
		return true, err
	}
	dec := json.NewDecoder(bufio.NewReader(stdin))
	var roundCPU time.Duration
	prof := roundProfile{prefix: os.Getenv(peerProfileEnv), subject: shortSubject(subject), id: os.Getpid()}
	defer prof.stop()
	for {
		var c childCommand
		if err := dec.Decode(&c); errors.Is(err, io.EOF) {
			return true, nil
		} else if err != nil {
			return true, err
		}
		var r childReply
		switch c.Op {
		case opMembers:
			r = awaitMembers(t, c.Members)
		case opRound:
			if err := prof.start(c.Interval > 0); err != nil {
				r.Error = err.Error()
				break
			}
			roundCPU = cpuTime()
			r = broadcastPaced(t, c)
		case opCPU:
			r.CPUMicros = float64(cpuTime()-roundCPU) / float64(time.Microsecond)
			prof.stop()
		default:
			r.Error = fmt.Sprintf("unknown op %q", c.Op)
		}
		if err := enc.Encode(r); err != nil {
			return true, err
		}
	}
}

// roundProfile profiles this process's CPU over one round: the child's from
// its first broadcast until the parent asks for the CPU time, the members'
// (the parent's) from its command to broadcast until every member had every
// broadcast; nothing without a prefix. id tells the runs apart: the child's
// pid, or the parent's count of subjects measured.
// A second round of a kind (-paced-rounds) adds its number to the name.
type roundProfile struct {
	prefix, subject string
	id              int
	f               *os.File
	rounds          [2]int // rounds profiled: burst, paced
}

func (p *roundProfile) start(paced bool) error {
	if p.prefix == "" {
		return nil
	}
	p.stop()
	round, kind := "burst", 0
	if paced {
		round, kind = "paced", 1
	}
	p.rounds[kind]++
	name := fmt.Sprintf("%s-%s-%s-%d", p.prefix, p.subject, round, p.id)
	if n := p.rounds[kind]; n > 1 {
		name += fmt.Sprintf("-%d", n)
	}
	f, err := os.Create(name + ".pprof")
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return err
	}
	p.f = f
	return nil
}

func (p *roundProfile) stop() {
	if p.f != nil {
		pprof.StopCPUProfile()
		_ = p.f.Close()
		p.f = nil
	}
}

// awaitMembers replies once n members joined, or with an error after a
// minute.
func awaitMembers(t *fanoutTarget, n int) childReply {
	deadline := time.Now().Add(time.Minute)
	for t.joined() < n {
		if time.Now().After(deadline) {
			return childReply{Error: fmt.Sprintf("%d of %d members joined", t.joined(), n)}
		}
		time.Sleep(time.Millisecond)
	}
	return childReply{Members: t.joined()}
}

// broadcastPaced broadcasts c.Count stamped payloads, one every c.Interval
// (back to back when 0).
func broadcastPaced(t *fanoutTarget, c childCommand) childReply {
	var buf []byte
	start := time.Now()
	for i := range c.Count {
		if c.Interval > 0 {
			if d := time.Until(start.Add(time.Duration(i) * c.Interval)); d > 0 {
				time.Sleep(d)
			}
		}
		buf = stamped(buf, time.Now(), c.Size)
		if err := t.broadcast(buf); err != nil {
			return childReply{Error: err.Error()}
		}
	}
	return childReply{Sent: int64(c.Count)}
}

// cpuTime is this process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// tiogen: a room every session joins; Room.Emit encodes the frame once.
func tioTarget(start func(tio.ServerOptions) (ourServer, error), hello func(ourServer) childHello) (*fanoutTarget, error) {
	var joined atomic.Int64
	delay, err := time.ParseDuration(os.Getenv(peerFlushDelayEnv))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", peerFlushDelayEnv, err)
	}
	o, err := start(tio.ServerOptions{Options: tio.Options{EmitFlushDelay: delay}, OnSession: func(p *tio.Peer) {
		if p.Join(broadcastRoom) == nil {
			joined.Add(1)
		}
	}})
	if err != nil {
		return nil, err
	}
	room := o.server().Room(broadcastRoom)
	return &fanoutTarget{
		hello:     hello(o),
		joined:    func() int { return int(joined.Load()) },
		broadcast: func(b []byte) error { return room.Emit(context.Background(), evSaid, b) },
		close:     o.close,
	}, nil
}

func tioWTTarget() (*fanoutTarget, error) {
	return tioTarget(func(opts tio.ServerOptions) (ourServer, error) { return startOurWT(opts) }, func(s ourServer) childHello {
		o := s.(*ourWT)
		return childHello{URL: o.ln.URL(), CertHash: hex.EncodeToString(o.cert.SHA256[:])}
	})
}

func tioWSTarget() (*fanoutTarget, error) {
	return tioTarget(func(opts tio.ServerOptions) (ourServer, error) { return startOurWS(opts) }, func(s ourServer) childHello {
		return childHello{URL: s.(*ourWS).url}
	})
}

// rawFrame wraps a broadcast payload in the same §5 EMIT frame tiogen
// sends, so the raw programs carry the same bytes.
func rawFrame(hub *rawHub) func([]byte) error {
	var frame []byte
	return func(payload []byte) error {
		var err error
		if frame, err = wire.AppendFrame(frame[:0], wire.FrameEmit, wire.CodecJSON, evSaid, payload); err != nil {
			return err
		}
		return hub.broadcast(frame)
	}
}

// rawWTTarget: plain webtransport-go, a uni stream per session fed by the
// same hub as the raw WebSocket program (a writer goroutine and a
// 256-message channel per member, one Write per message).
func rawWTTarget() (*fanoutTarget, error) { return wtHubTarget(false) }

// wtHubTarget is rawWTTarget; with handshake, each stream starts with the
// bench contract's §4 frame 0, which is all tiogen's clients need of a
// server to take its EMIT frames (raw WT tio). Their own emit streams are
// never read.
func wtHubTarget(handshake bool) (*fanoutTarget, error) {
	var hs []byte
	if handshake {
		var err error
		if hs, err = handshakeFrame(); err != nil {
			return nil, err
		}
	}
	hub := &rawHub{done: make(chan struct{})}
	r, err := startRawWT(func(sess *wt.Session) {
		str, err := sess.OpenUniStreamSync(sess.Context())
		if err != nil {
			return
		}
		if hs != nil {
			if _, err := str.Write(hs); err != nil {
				return
			}
			// The §7.2 probe a tiogen server sends once it read the
			// client's handshake, which a tiogen client's close awaits
			// (up to a second) before it closes.
			_ = sess.SendDatagram([]byte{0})
		}
		out := make(chan []byte, 256)
		hub.mu.Lock()
		hub.outs = append(hub.outs, out)
		hub.mu.Unlock()
		hub.count.Add(1)
		for {
			select {
			case b := <-out:
				if _, err := str.Write(b); err != nil {
					return
				}
			case <-hub.done:
				_ = str.Close()
				return
			case <-sess.Context().Done():
				return
			}
		}
	})
	if err != nil {
		return nil, err
	}
	c, err := benchCert()
	if err != nil {
		r.close()
		return nil, err
	}
	return &fanoutTarget{
		hello:     childHello{URL: r.url, CertHash: hex.EncodeToString(c.SHA256[:])},
		joined:    func() int { return int(hub.count.Load()) },
		broadcast: rawFrame(hub),
		close:     func() { close(hub.done); _ = r.srv.Close(); _ = r.udp.Close() }, // r.tr never dialed
	}, nil
}

func rawWSTarget() (*fanoutTarget, error) {
	hub := &rawHub{done: make(chan struct{})}
	addr, hs, err := serveHTTP(hub)
	if err != nil {
		return nil, err
	}
	return &fanoutTarget{
		hello:     childHello{URL: "ws://" + addr + "/"},
		joined:    func() int { return int(hub.count.Load()) },
		broadcast: rawFrame(hub),
		close:     func() { close(hub.done); _ = hs.Close() },
	}, nil
}
