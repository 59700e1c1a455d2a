package websocket

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	cws "github.com/coder/websocket"

	"github.com/transport-io/tiogen/internal/leakcheck"
	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

func streamBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// readN reads exactly n bytes from the receive stream, with Reads of
// assorted sizes.
func readN(t *testing.T, rs transport.ReceiveStream, n int) []byte {
	t.Helper()
	got := make([]byte, 0, n)
	sizes := []int{1, 7, 100, 4096, 65536}
	for i := 0; len(got) < n; i++ {
		buf := make([]byte, min(sizes[i%len(sizes)], n-len(got)))
		k, err := rs.Read(buf)
		if err != nil {
			t.Fatalf("Read after %d of %d bytes: %v", len(got), n, err)
		}
		got = append(got, buf[:k]...)
	}
	return got
}

func TestSpec3_3_MessageBoundariesCarryNoMeaning(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	srv := startServer(t, &Handler{})
	ws := rawDial(t, srv.url)
	c := srv.session(t)
	rs, err := c.AcceptEmit(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	// The peer's stream, cut into messages at arbitrary points, with empty
	// messages (keepalives) in between: the engine reads the stream alone.
	want := streamBytes(300_000, 1)
	r := rand.New(rand.NewPCG(2, 2))
	go func() {
		ctx := context.Background()
		for rest := want; len(rest) > 0; {
			k := min(len(rest), r.IntN(9000))
			if err := ws.Write(ctx, cws.MessageBinary, rest[:k]); err != nil {
				return
			}
			rest = rest[k:]
		}
	}()
	if got := readN(t, rs, len(want)); !bytes.Equal(got, want) {
		t.Fatal("the bytes read differ from the bytes sent")
	}

	// This side's stream: Writes of any size arrive as the same bytes, a
	// Write longer than one maximum frame in several messages; the
	// lengths take each of RFC 6455's three length forms, and the server
	// writes one over maxGather as a header and a payload.
	ss, err := c.OpenEmit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := streamBytes(2*maxSendMessage+5000, 3)
	go func() {
		_, _ = ss.Write(out[:10])
		_, _ = ss.Write(out[10:300])
		_, _ = ss.Write(out[300 : 300+maxSendMessage+1])
		_, _ = ss.Write(out[300+maxSendMessage+1:])
	}()
	var got []byte
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for len(got) < len(out) {
		typ, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("peer read: %v", err)
		}
		if typ != cws.MessageBinary {
			t.Fatalf("message type %v, want binary", typ)
		}
		if len(b) > maxSendMessage {
			t.Fatalf("a %d-byte message; this side sends at most %d", len(b), maxSendMessage)
		}
		got = append(got, b...)
	}
	if !bytes.Equal(got, out) {
		t.Fatal("the peer received other bytes than were written")
	}
	answerClose(ws)
	_ = c.Close(wire.CloseNoError, "")
	waitFinished(t, c)
}

func TestSpec3_3_TextMessageIsProtocolError(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	srv := startServer(t, &Handler{})
	ws := rawDial(t, srv.url)
	c := srv.session(t)
	drain(t, c)
	if err := ws.Write(context.Background(), cws.MessageText, []byte(`{"v":0}`)); err != nil {
		t.Fatal(err)
	}
	_, ce := readUntilClose(t, ws)
	if ce.Code != 3000+1004 || !strings.Contains(ce.Reason, "text message") {
		t.Fatalf("peer saw close %d %q, want 4004 naming the text message", ce.Code, ce.Reason)
	}
	waitDone(t, c)
	if info := c.CloseInfo(); info.Code != wire.CloseProtocolError || info.Remote || info.Lost {
		t.Fatalf("CloseInfo %+v, want a local WT_PROTOCOL_ERROR", info)
	}
	waitFinished(t, c)
}

func TestSpec3_3_CloseCodeSentAsWebSocketCode(t *testing.T) {
	for _, tc := range []struct {
		code uint32
		ws   cws.StatusCode
	}{
		{wire.CloseNoError, 1000},
		{wire.ClosePeerTooSlow, 4003},
		{wire.CloseIdleTimeout, 4005},
		{wire.CloseReliabilityRefused, 4006},
		{wire.CloseUnauthorized, 4007},
	} {
		t.Run(tc.ws.String(), func(t *testing.T) {
			leakcheck.Check(t, leakGrace)
			url, sockets := rawServer(t)
			c := dialConn(t, url, Options{})
			ws := nextSocket(t, sockets)
			_ = c.Close(tc.code, "bye")
			// Closed at once, before the closing handshake (§3.3).
			select {
			case <-c.Done():
			default:
				t.Fatal("Done did not fire when Close returned")
			}
			if info := c.CloseInfo(); info != (transport.CloseInfo{Code: tc.code, Reason: "bye"}) {
				t.Fatalf("CloseInfo %+v", info)
			}
			if _, ce := readUntilClose(t, ws); ce.Code != tc.ws || ce.Reason != "bye" {
				t.Fatalf("peer saw close %d %q, want %d %q", ce.Code, ce.Reason, tc.ws, "bye")
			}
			waitFinished(t, c)
		})
	}
}

func TestSpec3_3_WebSocketCodeReceivedAsSessionCode(t *testing.T) {
	for _, tc := range []struct {
		ws   cws.StatusCode
		code uint32
	}{
		{1000, wire.CloseNoError},
		{4000, wire.CloseProtocolVersionMismatch},
		{4004, wire.CloseProtocolError},
		{4007, wire.CloseUnauthorized},
		{4999, 1999}, // a code §10.2 does not name is reported as it is
	} {
		t.Run(tc.ws.String(), func(t *testing.T) {
			leakcheck.Check(t, leakGrace)
			srv := startServer(t, &Handler{})
			ws := rawDial(t, srv.url)
			c := srv.session(t)
			drain(t, c)
			go func() { _ = ws.Close(tc.ws, "because") }()
			waitDone(t, c)
			want := transport.CloseInfo{Code: tc.code, Reason: "because", Remote: true}
			if info := c.CloseInfo(); info != want {
				t.Fatalf("CloseInfo %+v, want %+v", info, want)
			}
			waitFinished(t, c)
		})
	}
}

func TestSpec3_3_ReasonCutOnCharacterBoundary(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	// A 4-byte character straddles byte 123: it is dropped whole.
	reason := strings.Repeat("r", 121) + "😀" + "tail"
	url, sockets := rawServer(t)
	c := dialConn(t, url, Options{})
	ws := nextSocket(t, sockets)
	_ = c.Close(wire.CloseContractMismatch, reason)
	want := strings.Repeat("r", 121)
	_, ce := readUntilClose(t, ws)
	if ce.Code != 4001 || ce.Reason != want || !utf8.ValidString(ce.Reason) {
		t.Fatalf("peer saw close %d %q (%d bytes), want 4001 and the first 121 bytes", ce.Code, ce.Reason, len(ce.Reason))
	}
	if info := c.CloseInfo(); info.Reason != want {
		t.Fatalf("local CloseInfo reason %q, want the reason as sent", info.Reason)
	}
	// A reason that fits whole is sent whole: 119 bytes and the character.
	c2 := dialConn(t, url, Options{})
	ws2 := nextSocket(t, sockets)
	fits := strings.Repeat("r", 119) + "😀"
	_ = c2.Close(wire.CloseContractMismatch, fits)
	if _, ce := readUntilClose(t, ws2); ce.Reason != fits {
		t.Fatalf("a 123-byte reason arrived as %q", ce.Reason)
	}
	// Invalid UTF-8 would make a browser fail the connection and lose the
	// code: it is replaced, then cut.
	c3 := dialConn(t, url, Options{})
	ws3 := nextSocket(t, sockets)
	_ = c3.Close(wire.CloseContractMismatch, "bad \xff byte")
	if _, ce := readUntilClose(t, ws3); ce.Reason != "bad \uFFFD byte" {
		t.Fatalf("a reason with invalid UTF-8 arrived as %q", ce.Reason)
	}
	waitFinished(t, c)
	waitFinished(t, c2)
	waitFinished(t, c3)
}

func TestSpec11_ClientSeesLostConnection(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	url, sockets := rawServer(t)
	c := dialConn(t, url, Options{})
	ws := nextSocket(t, sockets)
	rs, _ := c.AcceptEmit(context.Background())
	_ = ws.CloseNow() // the server process dies: no close frame
	if _, err := rs.Read(make([]byte, 1)); wire.CodeOf(err) != wire.SessionClosed {
		t.Fatalf("Read: %v, want WT_SESSION_CLOSED", err)
	}
	waitDone(t, c)
	if info := c.CloseInfo(); info != (transport.CloseInfo{Lost: true}) {
		t.Fatalf("CloseInfo %+v, want a lost connection with no code", info)
	}
	waitFinished(t, c)
}

func TestSpec3_3_SocketCloseCodeIsNoSessionCode(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(ws *cws.Conn)
	}{
		{"1001 going away", func(ws *cws.Conn) { _ = ws.Close(cws.StatusGoingAway, "page left") }},
		{"1011 internal error", func(ws *cws.Conn) { _ = ws.Close(cws.StatusInternalError, "oops") }},
		// An empty close frame is read as 1005, which must not be taken
		// for WT_IDLE_TIMEOUT.
		{"close without a code", func(ws *cws.Conn) { _ = ws.Close(cws.StatusNoStatusRcvd, "") }},
		// 1006: the TCP connection ends without a close frame.
		{"connection dropped", func(ws *cws.Conn) { _ = ws.CloseNow() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leakcheck.Check(t, leakGrace)
			srv := startServer(t, &Handler{})
			ws := rawDial(t, srv.url)
			c := srv.session(t)
			drain(t, c)
			go tc.end(ws)
			waitDone(t, c)
			if info := c.CloseInfo(); info != (transport.CloseInfo{Lost: true}) {
				t.Fatalf("CloseInfo %+v, want a session ended with no code (§11)", info)
			}
			rs, _ := c.AcceptEmit(context.Background())
			if rs != nil {
				t.Fatal("AcceptEmit succeeded on an ended session")
			}
			waitFinished(t, c)
		})
	}
}

func TestSpec3_3_NoCallStreamsNoDatagrams(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	srv := startServer(t, &Handler{})
	c := dialConn(t, srv.url, Options{})
	sc := srv.session(t)
	ctx := context.Background()
	if c.Mapping() != transport.WebSocket {
		t.Fatalf("Mapping %v", c.Mapping())
	}
	if _, err := c.OpenCall(ctx); !errors.Is(err, transport.ErrNoStreams) {
		t.Fatalf("OpenCall: %v", err)
	}
	if _, err := sc.AcceptCall(ctx); !errors.Is(err, transport.ErrNoStreams) {
		t.Fatalf("AcceptCall: %v", err)
	}
	if err := c.SendDatagram([]byte{1}); !errors.Is(err, transport.ErrNoDatagrams) {
		t.Fatalf("SendDatagram: %v", err)
	}
	if _, err := sc.ReceiveDatagram(ctx); !errors.Is(err, transport.ErrNoDatagrams) {
		t.Fatalf("ReceiveDatagram: %v", err)
	}
	if c.MaxDatagramSize() != 0 {
		t.Fatal("MaxDatagramSize is not 0")
	}
	// The session is still up: a call failing leaves it alone (§10.3).
	ss, _ := c.OpenEmit(ctx)
	rs, _ := sc.AcceptEmit(ctx)
	if _, err := ss.Write([]byte("after")); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, rs, 5); string(got) != "after" {
		t.Fatalf("read %q", got)
	}
	drain(t, sc)
	_ = c.Close(0, "")
	waitFinished(t, c)
	waitDone(t, sc)
	waitFinished(t, sc)
}

func TestSpec3_3_EmitBothWaysAndCloseEndToEnd(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	srv := startServer(t, &Handler{})
	c := dialConn(t, srv.url, Options{})
	sc := srv.session(t)
	ctx := context.Background()
	cs, _ := c.OpenEmit(ctx)
	cr, _ := c.AcceptEmit(ctx)
	ss, _ := sc.OpenEmit(ctx)
	sr, _ := sc.AcceptEmit(ctx)
	up, down := streamBytes(100_000, 4), streamBytes(100_000, 5)
	go func() { _, _ = cs.Write(up) }()
	go func() { _, _ = ss.Write(down) }()
	if !bytes.Equal(readN(t, sr, len(up)), up) || !bytes.Equal(readN(t, cr, len(down)), down) {
		t.Fatal("emit bytes differ")
	}
	// Bytes sent just before the close are read, then the close ends the
	// session.
	if _, err := ss.Write([]byte("last")); err != nil {
		t.Fatal(err)
	}
	_ = sc.Close(wire.CloseContractMismatch, "event chat differs")
	if got := readN(t, cr, 4); string(got) != "last" {
		t.Fatalf("read %q before the close", got)
	}
	if _, err := cr.Read(make([]byte, 1)); wire.CodeOf(err) != wire.SessionClosed {
		t.Fatalf("Read at the close: %v, want WT_SESSION_CLOSED", err)
	}
	waitDone(t, c)
	want := transport.CloseInfo{Code: wire.CloseContractMismatch, Reason: "event chat differs", Remote: true}
	if info := c.CloseInfo(); info != want {
		t.Fatalf("client CloseInfo %+v, want %+v", info, want)
	}
	if _, err := cs.Write([]byte("x")); wire.CodeOf(err) != wire.SessionClosed {
		t.Fatalf("Write after the close: %v, want WT_SESSION_CLOSED", err)
	}
	// A second Close does nothing: the first close wins.
	_ = c.Close(wire.CloseProtocolError, "late")
	if c.CloseInfo() != want {
		t.Fatal("a later Close changed CloseInfo")
	}
	waitFinished(t, c)
	waitFinished(t, sc)
}

func TestLocalCloseDiscardsUnreadBytes(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	srv := startServer(t, &Handler{})
	ws := rawDial(t, srv.url)
	c := srv.session(t)
	rs, _ := c.AcceptEmit(context.Background())
	if err := ws.Write(context.Background(), cws.MessageBinary, []byte("unread")); err != nil {
		t.Fatal(err)
	}
	answerClose(ws)
	_ = c.Close(0, "")
	if _, err := rs.Read(make([]byte, 16)); wire.CodeOf(err) != wire.SessionClosed {
		t.Fatalf("Read after a local close: %v, want WT_SESSION_CLOSED at once", err)
	}
	waitFinished(t, c)
}

func TestLocalCloseWakesBlockedReadAndCompletesHandshake(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	// On the fake clock the close grace never passes: the session finishes
	// only if the closing handshake completes.
	clk := clock.NewFake()
	srv := startServer(t, &Handler{Options: Options{Clock: clk}})
	ws := rawDial(t, srv.url)
	c := srv.session(t)
	rs, _ := c.AcceptEmit(context.Background())
	readErr := make(chan error, 1)
	go func() {
		_, err := rs.Read(make([]byte, 16))
		readErr <- err
	}()
	waitFor(t, "the Read to wait on the socket", func() bool { return c.(*conn).reading.Load() })
	_ = c.Close(wire.CloseContractMismatch, "bye")
	select {
	case err := <-readErr:
		if wire.CodeOf(err) != wire.SessionClosed {
			t.Fatalf("the blocked Read returned %v, want WT_SESSION_CLOSED", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the blocked Read did not return at the local close")
	}
	if _, ce := readUntilClose(t, ws); ce.Code != 4001 || ce.Reason != "bye" {
		t.Fatalf("peer saw close %d %q, want 4001 \"bye\"", ce.Code, ce.Reason)
	}
	waitFinished(t, c)
}

// A local close's grace is the peer's: it starts once this side holds the
// socket. Here the session's reader has not given the socket up yet (on a
// starved host waking it can take longer than the grace) when a whole
// grace passes on the injected clock; the close frame is still written and
// the peer reads the code and reason rather than a dropped connection.
func TestCloseGraceStartsOnceTheSocketIsTaken(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	clk := clock.NewFake()
	srv := startServer(t, &Handler{Options: Options{Clock: clk}})
	ws := rawDial(t, srv.url)
	c := srv.session(t).(*conn)
	c.readMu.Lock()                                          // the reader, not yet scheduled
	_ = c.Close(wire.CloseNoError, transport.ShutdownReason) // stops the session's timers
	time.Sleep(20 * time.Millisecond)                        // the closing goroutine reaches the socket
	if n := clk.Pending(); n != 0 {
		c.readMu.Unlock()
		t.Fatalf("%d timers pending while the socket is not taken: the grace started before", n)
	}
	clk.Advance(DefaultCloseGrace)
	c.readMu.Unlock()
	// readUntilClose answers the close frame as it reads it; a second
	// reader (answerClose) would race it for the close frame.
	if _, ce := readUntilClose(t, ws); ce.Code != cws.StatusNormalClosure || ce.Reason != transport.ShutdownReason {
		t.Fatalf("the peer saw close %d %q, want 1000 %q", ce.Code, ce.Reason, transport.ShutdownReason)
	}
	waitFinished(t, c)
}

func TestStopDropsBytesAndStillSeesClose(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	srv := startServer(t, &Handler{})
	ws := rawDial(t, srv.url)
	c := srv.session(t)
	rs, _ := c.AcceptEmit(context.Background())
	rs.Stop(wire.ResetAborted)
	var se *transport.StreamError
	if _, err := rs.Read(make([]byte, 1)); !errors.As(err, &se) || se.Code != wire.ResetAborted || se.Remote {
		t.Fatalf("Read after Stop: %v", err)
	}
	for range 10 {
		if err := ws.Write(context.Background(), cws.MessageBinary, make([]byte, 100_000)); err != nil {
			t.Fatal(err)
		}
	}
	_ = ws.Close(4000+4, "done")
	waitDone(t, c)
	if info := c.CloseInfo(); info.Code != wire.CloseProtocolError || !info.Remote {
		t.Fatalf("CloseInfo %+v", info)
	}
	waitFinished(t, c)
}

func TestSpec3_3_KeepaliveAfterSilence(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	clk := clock.NewFake()
	srv := startServer(t, &Handler{Options: Options{Clock: clk, IdleTimeout: time.Hour}})
	ws := rawDial(t, srv.url)
	c := srv.session(t).(*conn)
	ss, _ := c.OpenEmit(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// advance moves the fake clock and waits until the keepalive timer,
	// if it fired, has rearmed (both liveness timers pending again).
	advance := func(d time.Duration) {
		t.Helper()
		clk.Advance(d)
		waitFor(t, "the liveness timers (keepalive, idle, message) to rearm", func() bool { return clk.Pending() == 3 })
	}
	// expect reads the peer's next message. A marker written after the
	// timers settled shows that no keepalive came before it.
	expect := func(keepalive bool) {
		t.Helper()
		if !keepalive {
			if _, err := ss.Write([]byte("M")); err != nil {
				t.Fatal(err)
			}
		}
		typ, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case keepalive && (typ != cws.MessageBinary || len(b) != 0):
			t.Fatalf("got a %v message of %d bytes, want an empty binary keepalive", typ, len(b))
		case !keepalive && string(b) != "M":
			t.Fatalf("got a %d-byte message before the marker: a keepalive too early", len(b))
		}
	}

	advance(14999 * time.Millisecond)
	expect(false) // the marker is a send: the silence starts again
	advance(14999 * time.Millisecond)
	expect(false)
	advance(15000 * time.Millisecond)
	expect(true)
	advance(10000 * time.Millisecond)
	expect(false)
	advance(10000 * time.Millisecond) // 10 s after the marker: nothing due
	expect(false)
	advance(15000 * time.Millisecond)
	expect(true)
	advance(15000 * time.Millisecond) // silence goes on: another keepalive
	expect(true)

	closeAndDrop(t, clk, c)
}

func TestSpec3_3_IdleTimeoutAfterSilence(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	clk := clock.NewFake()
	srv := startServer(t, &Handler{Options: Options{Clock: clk, KeepaliveInterval: time.Hour}})
	ws := rawDial(t, srv.url)
	c := srv.session(t).(*conn)
	settle := func() {
		t.Helper()
		waitFor(t, "the liveness timers (keepalive, idle, message) to rearm", func() bool { return clk.Pending() == 3 || c.endedErr() != nil })
	}
	// receive sends a message from the peer and waits until the reader
	// took it in.
	receive := func(b []byte) {
		t.Helper()
		before := c.lastRecv.Load()
		if err := ws.Write(context.Background(), cws.MessageBinary, b); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the message to be received", func() bool { return c.lastRecv.Load() != before })
	}
	go func() { _, _ = io.Copy(io.Discard, cws.NetConn(context.Background(), ws, cws.MessageBinary)) }()
	drain(t, c)

	clk.Advance(30 * time.Second)
	settle()
	receive(nil) // a keepalive counts as something received (§3.3)
	clk.Advance(44999 * time.Millisecond)
	settle()
	if c.endedErr() != nil {
		t.Fatalf("closed %v after 44999 ms of silence", c.CloseInfo())
	}
	clk.Advance(time.Millisecond)
	waitDone(t, c)
	if info := c.CloseInfo(); info.Code != wire.CloseIdleTimeout || info.Remote || info.Lost {
		t.Fatalf("CloseInfo %+v, want a local WT_IDLE_TIMEOUT", info)
	}
	waitFinished(t, c)
}

func TestSpec3_3_IdleCloseReachesPeerAs4005(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	clk := clock.NewFake()
	srv := startServer(t, &Handler{Options: Options{Clock: clk, KeepaliveInterval: time.Hour}})
	ws := rawDial(t, srv.url)
	c := srv.session(t)
	drain(t, c)
	clk.Advance(DefaultIdleTimeout)
	_, ce := readUntilClose(t, ws)
	if ce.Code != 4005 || !strings.Contains(ce.Reason, "45000 ms") {
		t.Fatalf("peer saw close %d %q, want 4005", ce.Code, ce.Reason)
	}
	waitFinished(t, c)
}

func TestSpec3_3_MessageSizeLimit(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	srv := startServer(t, &Handler{Options: Options{MaxMessageSize: 1000}})
	ws := rawDial(t, srv.url)
	c := srv.session(t)
	rs, _ := c.AcceptEmit(context.Background())
	if err := ws.Write(context.Background(), cws.MessageBinary, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	readN(t, rs, 1000) // exactly the limit passes
	drain(t, c)
	if err := ws.Write(context.Background(), cws.MessageBinary, make([]byte, 1001)); err != nil {
		t.Fatal(err)
	}
	_, ce := readUntilClose(t, ws)
	if ce.Code != 4004 || !strings.Contains(ce.Reason, "over 1000 bytes") {
		t.Fatalf("peer saw close %d %q, want 4004 naming the limit", ce.Code, ce.Reason)
	}
	if info := c.CloseInfo(); info.Code != wire.CloseProtocolError {
		t.Fatalf("CloseInfo %+v", info)
	}
	waitFinished(t, c)
}

func TestDefaultMessageSizeFitsMaximumFrame(t *testing.T) {
	if DefaultMaxMessageSize < wire.HeaderLen+wire.MaxPayload {
		t.Fatalf("DefaultMaxMessageSize %d cannot carry a maximum EMIT frame of %d bytes", DefaultMaxMessageSize, wire.HeaderLen+wire.MaxPayload)
	}
	leakcheck.Check(t, leakGrace)
	srv := startServer(t, &Handler{})
	ws := rawDial(t, srv.url)
	c := srv.session(t)
	rs, _ := c.AcceptEmit(context.Background())
	frame := streamBytes(wire.HeaderLen+wire.MaxPayload, 6)
	go func() { _ = ws.Write(context.Background(), cws.MessageBinary, frame) }()
	if !bytes.Equal(readN(t, rs, len(frame)), frame) {
		t.Fatal("a maximum frame in one message did not arrive whole")
	}
	answerClose(ws)
	_ = c.Close(0, "")
	waitFinished(t, c)
}

// closeAndDrop closes a session on a fake clock whose peer does not answer
// the close, and lets the close grace pass.
func closeAndDrop(t *testing.T, clk *clock.Fake, c transport.Conn) {
	t.Helper()
	_ = c.Close(0, "")
	waitFor(t, "the close grace timer", func() bool { return clk.Pending() == 1 })
	clk.Advance(DefaultCloseGrace)
	waitFinished(t, c)
}

// A message that never ends, dribbled under the size cap, keeps the idle
// deadline satisfied; it must arrive whole within MessageTimeout of the
// time this side spends reading it, or the session closes WT_PROTOCOL_ERROR
// (4004 on the wire, §3.3). Time the engine does not read is not counted.
func TestSpec3_3_MessageMustArriveWholeWithinItsDeadline(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	clk := clock.NewFake()
	srv := startServer(t, &Handler{Options: Options{Clock: clk, KeepaliveInterval: time.Hour, IdleTimeout: time.Hour}})
	ws := rawDial(t, srv.url)
	c := srv.session(t).(*conn)
	rs, _ := c.AcceptEmit(context.Background())
	w, err := ws.Writer(context.Background(), cws.MessageBinary)
	if err != nil {
		t.Fatal(err)
	}
	// Frames that fill coder/websocket's write buffer go out; the message
	// never gets its final frame.
	dribble := func() {
		t.Helper()
		if _, err := w.Write(make([]byte, 8<<10)); err != nil {
			t.Fatal(err)
		}
	}
	dribble()
	readN(t, rs, 100)
	if !c.msgOpen.Load() {
		t.Fatal("the message's first bytes were read but it is not open")
	}
	// An hour of not reading is not the peer's fault.
	waitFor(t, "the reader to pause", func() bool { return !c.reading.Load() })
	clk.Advance(time.Hour)
	if c.endedErr() != nil {
		t.Fatalf("closed %+v while this side was not reading", c.CloseInfo())
	}
	var read atomic.Int64
	go func() { // the engine reads on, as fast as bytes come
		buf := make([]byte, 4096)
		for {
			n, err := rs.Read(buf)
			if err != nil {
				return
			}
			read.Add(int64(n))
		}
	}()
	// blocked waits until the reader has taken every byte that arrived
	// and waits in Read for more: the clock then runs on reading time.
	blocked := func() {
		t.Helper()
		last, still := int64(-1), 0
		waitFor(t, "the reader to wait for more", func() bool {
			if n := read.Load(); n != last || !c.reading.Load() {
				last, still = n, 0
				return false
			}
			still++
			return still >= 50
		})
	}
	blocked()
	clk.Advance(DefaultMessageTimeout / 2)
	dribble() // progress does not extend the deadline: it is per message
	blocked()
	clk.Advance(DefaultMessageTimeout/2 - 10*time.Millisecond)
	waitFor(t, "the liveness timers (keepalive, idle, message) to rearm", func() bool { return clk.Pending() == 3 })
	if c.endedErr() != nil {
		t.Fatalf("closed %+v before the message deadline", c.CloseInfo())
	}
	clk.Advance(10 * time.Millisecond)
	waitDone(t, c)
	if info := c.CloseInfo(); info.Code != wire.CloseProtocolError || !strings.Contains(info.Reason, "whole within 30000 ms") {
		t.Fatalf("CloseInfo %+v, want WT_PROTOCOL_ERROR naming the message deadline", info)
	}
	closeAndDrop(t, clk, c)
}

// Messages that end reset the deadline: a stream of whole messages over a
// longer time than MessageTimeout never meets it.
func TestSpec3_3_WholeMessagesNeverMeetTheMessageDeadline(t *testing.T) {
	leakcheck.Check(t, leakGrace)
	clk := clock.NewFake()
	srv := startServer(t, &Handler{Options: Options{Clock: clk, KeepaliveInterval: time.Hour, IdleTimeout: time.Hour, MessageTimeout: time.Second}})
	ws := rawDial(t, srv.url)
	c := srv.session(t).(*conn)
	rs, _ := c.AcceptEmit(context.Background())
	for i := range 10 {
		if err := ws.Write(context.Background(), cws.MessageBinary, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		readN(t, rs, 1)
		clk.Advance(600 * time.Millisecond)
	}
	if c.endedErr() != nil {
		t.Fatalf("closed %+v though every message arrived whole", c.CloseInfo())
	}
	closeAndDrop(t, clk, c)
}

// TestAfterDoneRunsOnceTheSessionEnds: a function registered with
// AfterDone runs after Done is closed, once; one registered after the end
// runs at once. The engine's close watcher relies on it instead of a
// goroutine per session.
func TestAfterDoneRunsOnceTheSessionEnds(t *testing.T) {
	srv := startServer(t, &Handler{})
	c := dialConn(t, srv.url, Options{})
	srv.session(t)
	n, ok := c.(transport.DoneNotifier)
	if !ok {
		t.Fatal("the WebSocket conn offers no AfterDone")
	}
	ran := make(chan bool, 2)
	n.AfterDone(func() {
		select {
		case <-c.Done():
			ran <- true
		default:
			ran <- false
		}
	})
	select {
	case <-ran:
		t.Fatal("AfterDone's function ran before the session ended")
	case <-time.After(20 * time.Millisecond):
	}
	_ = c.Close(0, "")
	if done := <-ran; !done {
		t.Fatal("AfterDone's function ran before Done was closed")
	}
	n.AfterDone(func() { ran <- true })
	<-ran
	select {
	case <-ran:
		t.Fatal("a function ran twice")
	case <-time.After(20 * time.Millisecond):
	}
}
