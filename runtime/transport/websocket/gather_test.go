package websocket

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"

	cws "github.com/coder/websocket"

	"github.com/transport-io/tiogen/internal/leakcheck"
	"github.com/transport-io/tiogen/internal/syncbuf"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// writeLog is a net.Conn that records its writes, and makes them on the
// connection under it when it has one.
type writeLog struct {
	net.Conn
	mu     sync.Mutex
	writes [][]byte
}

func (w *writeLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.writes = append(w.writes, bytes.Clone(p))
	w.mu.Unlock()
	if w.Conn == nil {
		return len(p), nil
	}
	return w.Conn.Write(p)
}

func (w *writeLog) write(i int) []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes[i]
}

func (w *writeLog) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.writes)
}

func (w *writeLog) all() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Join(w.writes, nil)
}

func TestGatherWritesAMessageOnce(t *testing.T) {
	log := &writeLog{}
	g := &gatherConn{Conn: log}
	payload := streamBytes(10_000, 1)
	g.gather(len(payload), true)
	msg := append(make([]byte, headerLen(len(payload), true)), payload...)
	for rest := msg; len(rest) > 0; {
		k := min(len(rest), 4096)
		if n, err := g.Write(rest[:k]); n != k || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
		rest = rest[k:]
		if len(rest) > 0 && log.count() != 0 {
			t.Fatalf("%d writes before the message was whole", log.count())
		}
	}
	if err := g.gatherEnd(); err != nil {
		t.Fatal(err)
	}
	if log.count() != 1 || !bytes.Equal(log.all(), msg) {
		t.Fatalf("%d writes of the message, want one of the same bytes", log.count())
	}
	// Outside a message every write goes straight through.
	_, _ = g.Write([]byte("pong"))
	if log.count() != 2 {
		t.Fatalf("%d writes, want the control frame's own", log.count())
	}
}

func TestGatherKeepsOrderWhateverTheLength(t *testing.T) {
	log := &writeLog{}
	g := &gatherConn{Conn: log}
	// A control frame written while the message is gathered, and a
	// header of another length than expected: every byte still reaches
	// TCP once, in order, by the end of the message.
	g.gather(100, false)
	var sent []byte
	for _, p := range [][]byte{[]byte("ctrl"), make([]byte, 50), streamBytes(60, 2)} {
		_, _ = g.Write(p)
		sent = append(sent, p...)
	}
	if err := g.gatherEnd(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(log.all(), sent) {
		t.Fatal("the bytes written differ from the bytes gathered, or their order")
	}
	// A message that failed before its first byte, while a session
	// closing meanwhile wrote its close frame: the close frame is sent.
	g.gather(100, false)
	_, _ = g.Write([]byte("close"))
	_ = g.gatherEnd()
	if !bytes.HasSuffix(log.all(), []byte("close")) {
		t.Fatal("a frame gathered during a failed message was not written")
	}
}

func TestGatherLeavesLongMessagesToCoderWebsocket(t *testing.T) {
	log := &writeLog{}
	g := &gatherConn{Conn: log}
	g.gather(maxGather, true)
	_, _ = g.Write(make([]byte, 4096))
	if log.count() != 1 {
		t.Fatal("a message over maxGather was gathered")
	}
	_ = g.gatherEnd()
}

func TestGatherHeaderLengthIsCoderWebsocketsFrame(t *testing.T) {
	// The lengths at each of RFC 6455's three payload-length forms, as
	// coder/websocket writes them: each gathered message arrives in one
	// write on both sides.
	// Each write goes on to the socket, and each side reads the other's:
	// a message cut or framed wrongly would end the session.
	leakcheck.Check(t, leakGrace)
	srv := startServer(t, &Handler{})
	c := dialConn(t, srv.url, Options{})
	sc := srv.session(t)
	sides := []transport.Conn{c, sc}
	logs := make([]*writeLog, len(sides))
	for i, side := range sides {
		// Before anything is written or read: the keepalive's first
		// write is 15 s away.
		logs[i] = &writeLog{Conn: side.(*conn).out.Conn}
		side.(*conn).out.Conn = logs[i]
	}
	for _, side := range sides {
		drain(t, side)
	}
	for i, side := range sides {
		log, client := logs[i], side.(*conn).client
		ss, _ := side.OpenEmit(context.Background())
		for _, n := range []int{1, 125, 126, 65535, 65536, 100_000} {
			before := log.count()
			if _, err := ss.Write(make([]byte, n)); err != nil {
				t.Fatal(err)
			}
			if got := log.count() - before; got != 1 {
				t.Fatalf("a %d-byte message took %d writes (client %v), want 1", n, got, client)
			}
			if got, want := len(log.write(before)), headerLen(n, client)+n; got != want {
				t.Fatalf("a %d-byte message was written as %d bytes, want %d", n, got, want)
			}
		}
	}
	for _, side := range sides {
		if err := side.(*conn).endedErr(); err != nil {
			t.Fatalf("the session ended under the gathered messages: %v", err)
		}
	}
	_ = c.Close(wire.CloseNoError, "")
	waitFinished(t, c)
}

// TestSpec3_3_NoDataFrameAfterTheCloseFrame: the server writes its data
// messages past coder/websocket, which writes the close frame; once a
// close frame went out, a data message fails and writes nothing (RFC 6455
// §5.5.1), as coder/websocket's own Write would.
func TestSpec3_3_NoDataFrameAfterTheCloseFrame(t *testing.T) {
	log := &writeLog{}
	g := &gatherConn{Conn: log, framed: true}
	if err := g.writeBinary([]byte("data")); err != nil {
		t.Fatal(err)
	}
	if got := log.write(0); !bytes.Equal(got, []byte("\x82\x04data")) {
		t.Fatalf("wrote %x, want one final binary frame of 4 bytes", got)
	}
	_, _ = g.Write([]byte{0x88, 0x02, 0x03, 0xe8}) // close, 1000
	if err := g.writeBinary([]byte("late")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("a data message after the close frame: %v, want net.ErrClosed", err)
	}
	if log.count() != 2 {
		t.Fatalf("%d writes, want the message's and the close frame's", log.count())
	}

	// The close frame coder/websocket writes for a session is seen as
	// one.
	leakcheck.Check(t, leakGrace)
	srv := startServer(t, &Handler{})
	ws := rawDial(t, srv.url)
	sc := srv.session(t).(*conn)
	answerClose(ws)
	_ = sc.Close(wire.CloseNoError, "")
	waitFinished(t, sc)
	sc.out.mu.Lock()
	sent := sc.out.closeSent
	sc.out.mu.Unlock()
	if !sent {
		t.Fatal("the session's close frame was not seen as one")
	}
}

func TestWriteAllocatesNothing(t *testing.T) {
	// The emit writer's Write of a 64 KiB batch: the gathered message, the
	// masking and the system call allocate nothing (0 per emit). The
	// server's reads run meanwhile and are counted too; then the client's
	// reads, with the server's Writes.
	if raceEnabled {
		t.Skip("the race detector drops sync.Pool's Puts at random; make test-runtime runs this without -race")
	}
	leakcheck.Check(t, leakGrace)
	srv := startServer(t, &Handler{})
	c := dialConn(t, srv.url, Options{})
	sc := srv.session(t)
	drain(t, sc)
	ss, _ := c.OpenEmit(context.Background())
	batch := make([]byte, 64<<10)
	_, _ = ss.Write(batch)
	if allocs := testing.AllocsPerRun(200, func() {
		if _, err := ss.Write(batch); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Fatalf("%.1f allocations per 64 KiB Write, want 0", allocs)
	}
	// The server's Writes, past coder/websocket, allocate nothing either.
	drain(t, c)
	sss, _ := sc.OpenEmit(context.Background())
	for _, n := range []int{100, 64 << 10} {
		_, _ = sss.Write(batch[:n])
		if allocs := testing.AllocsPerRun(200, func() {
			if _, err := sss.Write(batch[:n]); err != nil {
				t.Fatal(err)
			}
		}); allocs != 0 {
			t.Fatalf("%.1f allocations per %d B Write of the server, want 0", allocs, n)
		}
	}
	_ = c.Close(wire.CloseNoError, "")
	waitFinished(t, c)
}

func TestHandlerRecoversAPanickingSessionHandler(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	logged := &syncbuf.Buffer{}
	panicked := make(chan struct{})
	srv := startServer(t, &Handler{
		Logger: slog.New(slog.NewTextHandler(logged, nil)),
		OnSession: func(transport.Conn, *transport.Request, any) {
			defer close(panicked)
			panic("handler bug")
		},
	})
	ws := rawDial(t, srv.url)
	<-panicked
	// The door closed the session on the way out (WT_NO_ERROR), and the
	// process lives on to log it.
	_, ce := readUntilClose(t, ws)
	if ce.Code != cws.StatusNormalClosure {
		t.Fatalf("close %d, want 1000", ce.Code)
	}
	waitFor(t, "the panic to be logged", func() bool { return strings.Contains(logged.String(), "handler bug") })
}
