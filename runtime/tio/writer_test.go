package tio

import (
	"bytes"
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/transport/loopback"
)

// emitWriters counts the goroutines running an emit writer now, on either
// end of every session in the process.
func emitWriters() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte("tio.(*session).writeRun(")) + bytes.Count(buf[:n], []byte("tio.(*session).writeLoop("))
		}
		buf = make([]byte, 2*len(buf))
	}
}

func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// §3.1, §9: the emit writer runs only while there is something to write.
// An idle session, past its handshake, has none on either end; emits that
// keep coming, each written before the next is queued (the queue empties
// every time: the case most prone to it), reuse one writer rather than
// starting a goroutine per frame; and once they stop, the writer ends
// within a few emitWriterLinger.
func TestSpec3_1_EmitWriterRunsOnlyWhileFramesKeepComing(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	waitFor(t, "no emit writer on an idle session", func() bool { return emitWriters() == 0 })

	const frames = 400
	before := goroutinesCreated()
	for i := range frames {
		if err := p.client.Emit(evPing, fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
		if got, want := p.srv.got.next(t), fmt.Sprintf("ping:%d", i); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	// The writer may end and start again only if emitWriterLinger passed
	// between two frames, which a loaded host can make happen a few times;
	// one goroutine per frame would be 400.
	if created := goroutinesCreated() - before; created > frames/20 {
		t.Errorf("%d goroutines created for %d frames written one by one, want at most %d: the writer must not start per frame", created, frames, frames/20)
	}
	waitFor(t, "the emit writer to end once frames stop", func() bool { return emitWriters() == 0 })

	// And it starts again for the next frame.
	if err := p.client.Emit(evPing, []byte(`"again"`)); err != nil {
		t.Fatal(err)
	}
	if got := p.srv.got.next(t); got != `ping:"again"` {
		t.Fatalf("got %q after the writer ended", got)
	}
}

// §9: the writer waits on one wake-up token, which the linger's expiry
// and a push share; a frame queued as the linger expires is written all
// the same (never left until a later push), in order, whether the writer
// is running or parked, and the writer still ends once frames stop.
func TestSpec9_EmitQueuedAsTheLingerExpiresIsWritten(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	for i := range 40 {
		if i%2 == 0 {
			p.client.q.lingerFired() // its token first: the push's merges with it
		} else {
			p.client.q.lingered.Store(true) // the flag set, its token not yet sent
		}
		if err := p.client.Emit(evPing, fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
		if got, want := p.srv.got.next(t), fmt.Sprintf("ping:%d", i); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	waitFor(t, "the emit writer to end once frames stop", func() bool { return emitWriters() == 0 })
}

// The session's end wakes a writer waiting for frames, which ends then,
// not at its linger's next expiry: the linger timer is stopped here, so a
// writer left waiting would hold Wait for ever.
func TestEmitWriterEndsWithTheSession(t *testing.T) {
	for range 10 {
		p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
		if err := p.client.Emit(evPing, []byte(`1`)); err != nil {
			t.Fatal(err)
		}
		if got := p.srv.got.next(t); got != "ping:1" {
			t.Fatalf("got %q", got)
		}
		if !p.client.linger.Stop() {
			continue // the linger expired first: try with a new session
		}
		_ = p.client.Close(NoError, "")
		waited := make(chan error, 1)
		go func() { waited <- p.client.Wait() }()
		select {
		case <-waited:
		case <-time.After(5 * time.Second):
			t.Fatal("Wait did not return: the writer did not end with the session")
		}
		return
	}
	t.Fatal("in 10 sessions the linger always expired before it could be stopped")
}
