package webtransport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"
	"unsafe"

	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/internal/leakcheck"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

func TestSpec3_1_EmitStreamsBothWays(t *testing.T) {
	h := startServer(t, Options{})
	client, server := h.pair()
	if client.Mapping() != transport.WebTransport || server.Mapping() != transport.WebTransport {
		t.Fatal("mapping is not WebTransport")
	}
	ctx := ctx5s(t)

	cs, err := client.OpenEmit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := server.OpenEmit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Write([]byte("client frames")); err != nil {
		t.Fatal(err)
	}
	if _, err := ss.Write([]byte("server frames")); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	ss.Close()

	sr, err := server.AcceptEmit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := client.AcceptEmit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, sr); got != "client frames" {
		t.Errorf("server read %q", got)
	}
	if got := readAll(t, cr); got != "server frames" {
		t.Errorf("client read %q", got)
	}
}

func TestSpec3_2_CallStreamRequestResponse(t *testing.T) {
	h := startServer(t, Options{})
	client, server := h.pair()
	ctx := ctx5s(t)

	call, err := client.OpenCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	call.Write([]byte("request"))
	call.Close()

	in, err := server.AcceptCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, in); got != "request" {
		t.Fatalf("responder read %q", got)
	}
	in.Write([]byte("response"))
	in.Close()
	if got := readAll(t, call); got != "response" {
		t.Fatalf("initiator read %q", got)
	}
}

// §3.2: calls are the client's to make. The client's connection grants the
// server no bidirectional stream: the server's open waits for credit that
// never comes, and the client has nothing to accept (no goroutine of its
// engine waits for a call).
func TestSpec3_2_ClientGrantsTheServerNoCallStream(t *testing.T) {
	h := startServer(t, Options{})
	client, server := h.pair()
	short, cancel := context.WithTimeout(ctx5s(t), 100*time.Millisecond)
	defer cancel()
	if st, err := server.OpenCall(short); err == nil {
		st.Reset(wire.ResetAborted)
		t.Fatal("the server opened a call stream to the client")
	}
	if _, err := client.AcceptCall(ctx5s(t)); !errors.Is(err, transport.ErrNoInboundCalls) {
		t.Fatalf("client AcceptCall: %v, want ErrNoInboundCalls", err)
	}
}

// §8, §10.1: reset codes are one byte and arrive as sent, both ways, on
// RESET_STREAM and on STOP_SENDING.
func TestSpec8_ResetCodesBothWays(t *testing.T) {
	h := startServer(t, Options{})
	client, server := h.pair()
	ctx := ctx5s(t)

	for _, code := range []uint8{wire.ResetAborted, wire.ResetTooManyStreams, 0, 255} {
		// Initiator resets its send side (cancel, §8): the responder's read
		// fails with the code.
		call, err := client.OpenCall(ctx)
		if err != nil {
			t.Fatal(err)
		}
		call.Write([]byte("x"))
		in, err := server.AcceptCall(ctx)
		if err != nil {
			t.Fatal(err)
		}
		call.Reset(code)
		buf := make([]byte, 16)
		var rerr error
		for rerr == nil {
			_, rerr = in.Read(buf)
		}
		wantStreamError(t, rerr, code, true)

		// The responder resets its send side: the initiator's read fails.
		in.Reset(code)
		_, rerr = call.Read(buf)
		wantStreamError(t, rerr, code, true)

		// Writing after a local reset reports the local code.
		_, werr := call.Write([]byte("y"))
		wantStreamError(t, werr, code, false)
	}

	// STOP_SENDING from the responder (the 257th call, §10.1): the
	// initiator's writes fail with code 9.
	call, err := client.OpenCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	call.Write([]byte("x"))
	in, err := server.AcceptCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	in.Stop(wire.ResetTooManyStreams)
	in.Reset(wire.ResetTooManyStreams)
	deadline := time.Now().Add(5 * time.Second)
	var werr error
	for werr == nil && time.Now().Before(deadline) {
		_, werr = call.Write([]byte("more"))
		time.Sleep(5 * time.Millisecond)
	}
	wantStreamError(t, werr, wire.ResetTooManyStreams, true)

	// And the other direction on the emit stream: the server stops the
	// client's emit stream with code 1.
	es, err := client.OpenEmit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	es.Write([]byte("x"))
	er, err := server.AcceptEmit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	er.Stop(wire.ResetAborted)
	werr = nil
	for werr == nil && time.Now().Before(deadline) {
		_, werr = es.Write([]byte("more"))
		time.Sleep(5 * time.Millisecond)
	}
	wantStreamError(t, werr, wire.ResetAborted, true)
}

func TestSpec7_4_DatagramsAndMaxSize(t *testing.T) {
	h := startServer(t, Options{})
	client, server := h.pair()
	ctx := ctx5s(t)

	for _, c := range []transport.Conn{client, server} {
		if n := c.MaxDatagramSize(); n < 1000 || n > 1500 {
			t.Fatalf("MaxDatagramSize = %d, want a loopback QUIC figure between 1000 and 1500", n)
		}
	}
	max := client.MaxDatagramSize()
	payload := bytes.Repeat([]byte{0xab}, max)

	// Datagrams may be lost; loopback rarely loses, so retry a few times.
	got := make(chan []byte, 1)
	go func() {
		b, err := server.ReceiveDatagram(ctx)
		if err == nil {
			got <- b
		}
	}()
	var b []byte
	for i := 0; b == nil && i < 50; i++ {
		if err := client.SendDatagram(payload); err != nil {
			t.Fatalf("SendDatagram of MaxDatagramSize bytes: %v", err)
		}
		select {
		case b = <-got:
		case <-time.After(100 * time.Millisecond):
		}
	}
	if !bytes.Equal(b, payload) {
		t.Fatalf("server received %d bytes, want the %d sent", len(b), len(payload))
	}

	err := client.SendDatagram(append(payload, 0))
	wantCode(t, err, wire.DatagramTooLarge)

	// And back from the server.
	go func() {
		for i := 0; i < 50; i++ {
			if server.SendDatagram([]byte("pong")) != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	b, err = client.ReceiveDatagram(ctx)
	if err != nil || string(b) != "pong" {
		t.Fatalf("client received %q, %v", b, err)
	}
}

// §10.2: a server close reaches the client with its code and reason, and
// each side reports who closed.
func TestSpec10_2_ServerCloseCodeAndReasonReachClient(t *testing.T) {
	h := startServer(t, Options{})
	client, server := h.pair()
	reason := "event 'move' is 'unreliable' here and 'reliable' at the peer"
	if err := server.Close(wire.CloseContractMismatch, reason); err != nil {
		t.Fatal(err)
	}
	server.Close(wire.CloseProtocolError, "second close is ignored")

	got := waitDone(t, client)
	if got != (transport.CloseInfo{Code: wire.CloseContractMismatch, Reason: reason, Remote: true}) {
		t.Fatalf("client CloseInfo = %+v", got)
	}
	if got := waitDone(t, server); got != (transport.CloseInfo{Code: wire.CloseContractMismatch, Reason: reason}) {
		t.Fatalf("server CloseInfo = %+v", got)
	}
	if _, err := client.OpenCall(ctx5s(t)); wire.CodeOf(err) != wire.SessionClosed {
		t.Fatalf("OpenCall after close: %v, want WT_SESSION_CLOSED", err)
	}
}

// §10.2: a client close reaches the server: the connection stays open until
// the close capsule was read (closing it at once loses the capsule).
func TestSpec10_2_ClientCloseCodeAndReasonReachServer(t *testing.T) {
	h := startServer(t, Options{})
	client, server := h.pair()
	if err := client.Close(wire.CloseProtocolError, "zero-length frame"); err != nil {
		t.Fatal(err)
	}
	if got := waitDone(t, server); got != (transport.CloseInfo{Code: wire.CloseProtocolError, Reason: "zero-length frame", Remote: true}) {
		t.Fatalf("server CloseInfo = %+v", got)
	}
	if got := waitDone(t, client); got != (transport.CloseInfo{Code: wire.CloseProtocolError, Reason: "zero-length frame"}) {
		t.Fatalf("client CloseInfo = %+v", got)
	}
}

func TestSpec10_2_LargestCodeAndReasonCutTo1024Bytes(t *testing.T) {
	h := startServer(t, Options{})
	client, server := h.pair()
	// 1023 ASCII bytes then a 3-byte character: the cut falls inside it.
	reason := strings.Repeat("r", 1023) + "€tail"
	server.Close(1<<32-1, reason)
	got := waitDone(t, client)
	if got.Code != 1<<32-1 || got.Reason != strings.Repeat("r", 1023) {
		t.Fatalf("client got code %d and a %d-byte reason", got.Code, len(got.Reason))
	}
}

// §11: a connection that dies without a close is Lost with WT_NO_ERROR.
func TestSpec11_LostConnectionOnServer(t *testing.T) {
	h := startServer(t, Options{})
	client, server := h.pair()
	// Kill the client's QUIC connection without a session close.
	client.(*conn).qconn.CloseWithError(0x42, "killed")
	if got := waitDone(t, server); got != (transport.CloseInfo{Lost: true}) {
		t.Fatalf("server CloseInfo = %+v, want Lost", got)
	}
	if got := waitDone(t, client); got != (transport.CloseInfo{Lost: true}) {
		t.Fatalf("client CloseInfo = %+v, want Lost", got)
	}
}

func TestSpec11_LostConnectionOnClient(t *testing.T) {
	h := startServer(t, Options{})
	opts := h.dialOptions()
	opts.IdleTimeout = 300 * time.Millisecond // QUIC's own timer, not a spec deadline
	client, err := Dial(ctx5s(t), h.srv.URL(), opts)
	if err != nil {
		t.Fatal(err)
	}
	h.accept()
	// The server's socket goes away: no close of any kind is sent.
	h.srv.ports.udp.Close()
	if got := waitDone(t, client); got != (transport.CloseInfo{Lost: true}) {
		t.Fatalf("client CloseInfo = %+v, want Lost", got)
	}
	if _, err := client.AcceptEmit(ctx5s(t)); wire.CodeOf(err) != wire.SessionClosed {
		t.Fatalf("AcceptEmit after loss: %v, want WT_SESSION_CLOSED", err)
	}
}

// Done always fires and every blocked call returns once it has.
func TestDoneUnblocksPendingCalls(t *testing.T) {
	h := startServer(t, Options{})
	client, server := h.pair()
	ctx := ctx5s(t)
	errs := make(chan error, 3)
	go func() { _, err := server.AcceptCall(ctx); errs <- err }()
	go func() { _, err := client.AcceptEmit(ctx); errs <- err }()
	go func() { _, err := client.ReceiveDatagram(ctx); errs <- err }()
	time.Sleep(50 * time.Millisecond)
	server.Close(wire.CloseNoError, "")
	for range 3 {
		select {
		case err := <-errs:
			if wire.CodeOf(err) != wire.SessionClosed {
				t.Fatalf("blocked call returned %v, want WT_SESSION_CLOSED", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a blocked call did not return after close")
		}
	}
}

// A function registered with AfterDone runs after Done is closed, once,
// on either side; one registered after the end runs at once. The engine's
// close watcher relies on it instead of a goroutine per session.
func TestAfterDoneRunsOnceTheSessionEnds(t *testing.T) {
	h := startServer(t, Options{})
	client, server := h.pair()
	ran := make(chan string, 4)
	for name, c := range map[string]transport.Conn{"client": client, "server": server} {
		n, ok := c.(transport.DoneNotifier)
		if !ok {
			t.Fatalf("the %s conn offers no AfterDone", name)
		}
		n.AfterDone(func() {
			select {
			case <-c.Done():
				ran <- name
			default:
				ran <- name + " before Done"
			}
		})
	}
	select {
	case got := <-ran:
		t.Fatalf("AfterDone's function ran before the session ended (%s)", got)
	case <-time.After(20 * time.Millisecond):
	}
	_ = client.Close(wire.CloseNoError, "")
	seen := map[string]bool{}
	for range 2 {
		select {
		case got := <-ran:
			seen[got] = true
		case <-time.After(5 * time.Second):
			t.Fatal("an AfterDone function did not run after the close")
		}
	}
	if !seen["client"] || !seen["server"] {
		t.Fatalf("ran %v, want client and server, each after Done", seen)
	}
	server.(transport.DoneNotifier).AfterDone(func() { ran <- "late" })
	if got := <-ran; got != "late" {
		t.Fatalf("ran %q, want the late registration", got)
	}
	select {
	case got := <-ran:
		t.Fatalf("a function ran twice (%s)", got)
	case <-time.After(20 * time.Millisecond):
	}
}

func TestGoroutinesEndAfterClose(t *testing.T) {
	leakcheck.Check(t, 10*time.Second)
	func() {
		h := startServer(t, Options{})
		for i := range 3 {
			client, server := h.pair()
			ctx := ctx5s(t)
			s, _ := client.OpenCall(ctx)
			s.Write([]byte("x"))
			s.Close()
			if in, err := server.AcceptCall(ctx); err == nil {
				readAll(t, in)
			}
			if i%2 == 0 {
				client.Close(0, "")
			} else {
				server.Close(0, "")
			}
			waitDone(t, client)
			waitDone(t, server)
		}
		if err := h.srv.Shutdown(ctx5s(t)); err != nil {
			t.Fatal(err)
		}
	}()
}

func TestStreamErrorMapsOutOfRangeCodes(t *testing.T) {
	c := &conn{}
	if err := c.streamError(nil); err != nil {
		t.Fatal(err)
	}
	if err := c.streamError(os.ErrDeadlineExceeded); err != os.ErrDeadlineExceeded {
		t.Fatalf("a deadline changed: %v", err)
	}
	if err := c.streamError(&wt.StreamError{ErrorCode: 300, Remote: true}); !errors.Is(err, errOutOfRangeReset) {
		t.Fatalf("code 300: %v, want errOutOfRangeReset", err)
	}
	wantStreamError(t, c.streamError(&wt.StreamError{ErrorCode: 9, Remote: true}), 9, true)
	wantCode(t, c.streamError(errors.New("connection gone")), wire.SessionClosed)
}

// A stream that fails because the session ended reports WT_SESSION_CLOSED
// only once Done has fired, so the caller can read how the session ended
// (the peer's code, not a fault of its own).
func TestSessionEndErrorsFollowDone(t *testing.T) {
	h := startServer(t, Options{})
	for i := range 10 {
		client, server := h.pair()
		ctx := ctx5s(t)
		call, err := client.OpenCall(ctx)
		if err != nil {
			t.Fatal(err)
		}
		call.Write([]byte("x"))
		in, err := server.AcceptCall(ctx)
		if err != nil {
			t.Fatal(err)
		}
		readErr := make(chan error, 1)
		go func() {
			_, err := call.Read(make([]byte, 8))
			readErr <- err
		}()
		local := i%2 == 1
		if local {
			client.Close(wire.CloseNoError, "bye")
		} else {
			server.Close(wire.CloseContractMismatch, "x")
		}
		err = <-readErr
		wantCode(t, err, wire.SessionClosed)
		select {
		case <-client.Done():
		default:
			t.Fatalf("round %d: the read failed before Done", i)
		}
		want := transport.CloseInfo{Code: wire.CloseContractMismatch, Reason: "x", Remote: true}
		if local {
			want = transport.CloseInfo{Code: wire.CloseNoError, Reason: "bye"}
		}
		if got := client.CloseInfo(); got != want {
			t.Fatalf("round %d: CloseInfo = %+v, want %+v", i, got, want)
		}
		_, err = in.Read(make([]byte, 8))
		for err == nil {
			_, err = in.Read(make([]byte, 8))
		}
		waitDone(t, server)
	}
}

// §10.1: QUIC admits more concurrent call streams than the per-session cap,
// so the engine sees the 257th call and resets it with code 9 instead of the
// peer stalling at QUIC's stream limit.
func TestSpec10_1_QUICAdmitsCallsBeyondTheCap(t *testing.T) {
	h := startServer(t, Options{})
	client, server := h.pair()
	ctx := ctx5s(t)
	const n = DefaultMaxCalls + 44
	accepted := make(chan int, 1)
	go func() {
		got := 0
		for got < n {
			if _, err := server.AcceptCall(ctx); err != nil {
				break
			}
			got++
		}
		accepted <- got
	}()
	for i := range n {
		s, err := client.OpenCall(ctx)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if _, err := s.Write([]byte{1}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if got := <-accepted; got != n {
		t.Fatalf("server accepted %d of %d open calls", got, n)
	}
}

// An open beyond the peer's stream limit waits for credit instead of
// failing, and goes through once an earlier call stream is done: the open
// that does not wait is tried first, and only a refusal for the limit falls
// back to waiting.
func TestOpenCallAtTheStreamLimitWaitsForCredit(t *testing.T) {
	h := startServer(t, Options{MaxCalls: 2}) // QUIC admits 5 bidirectional streams, the CONNECT stream one of them
	client, server := h.pair()
	ctx := ctx5s(t)
	var open []transport.Stream
	for i := range 4 {
		s, err := client.OpenCall(ctx)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if _, err := s.Write([]byte{byte(i)}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		open = append(open, s)
	}
	opened := make(chan error, 1)
	go func() {
		s, err := client.OpenCall(ctx)
		if err == nil {
			_, err = s.Write([]byte{4})
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		t.Fatalf("the fifth open returned (%v) before the server gave credit", err)
	case <-time.After(100 * time.Millisecond):
	}
	// Calls done both ways give the credit back.
	for _, s := range open {
		_ = s.Close()
	}
	for range open {
		in, err := server.AcceptCall(ctx)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, in)
		_ = in.Close()
	}
	for _, s := range open {
		readAll(t, s)
	}
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("the fifth open: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the fifth open did not go through once a call was done")
	}
}

// The emit streams the engine is handed are the conn itself (emitSend,
// emitReceive), which stays in its 240 B size class: each stream costs an
// idle session no allocation of its own.
func TestEmitStreamsAreTheConn(t *testing.T) {
	if n := unsafe.Sizeof(conn{}); n > 240 {
		t.Errorf("conn is %d B, over its 240 B size class", n)
	}
	h := startServer(t, Options{})
	client, server := h.pair()
	out, err := client.OpenEmit(ctx5s(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := out.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	in, err := server.AcceptEmit(ctx5s(t))
	if err != nil {
		t.Fatal(err)
	}
	if (*conn)(out.(*emitSend)) != client.(*conn) || (*conn)(in.(*emitReceive)) != server.(*conn) {
		t.Fatal("the emit streams are not their conns")
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(in, b); err != nil || b[0] != 'x' {
		t.Fatalf("read %q, %v", b, err)
	}
}

// The engine's session-long waits are bounded by the session's own context,
// which the conn does not hand webtransport-go (waitContext): they still
// get what arrives, and still return once the session ends, whichever way
// it ends.
func TestWaitsOnTheSessionsOwnContextEndWithTheSession(t *testing.T) {
	for _, end := range []string{"client closes", "server closes", "connection lost"} {
		t.Run(end, func(t *testing.T) {
			h := startServer(t, Options{})
			client, server := h.pair()
			own := func(c transport.Conn) context.Context { return c.(transport.ContextConn).Context() }

			if err := client.SendDatagram([]byte("datagram")); err != nil {
				t.Fatal(err)
			}
			if b, err := server.ReceiveDatagram(own(server)); err != nil || string(b) != "datagram" {
				t.Fatalf("ReceiveDatagram = %q, %v", b, err)
			}

			errs := make(chan error, 5)
			go func() { _, err := server.AcceptCall(own(server)); errs <- err }()
			go func() { _, err := server.ReceiveDatagram(own(server)); errs <- err }()
			go func() { _, err := server.AcceptEmit(own(server)); errs <- err }()
			go func() { _, err := client.ReceiveDatagram(own(client)); errs <- err }()
			go func() { _, err := client.AcceptEmit(own(client)); errs <- err }()
			select {
			case err := <-errs:
				t.Fatalf("a wait returned before the session ended: %v", err)
			case <-time.After(50 * time.Millisecond):
			}
			switch end {
			case "client closes":
				client.Close(wire.CloseNoError, "")
			case "server closes":
				server.Close(wire.CloseNoError, "")
			case "connection lost":
				h.srv.ports.udp.Close() // nothing more reaches the client
				client.(*conn).qconn.CloseWithError(0, "")
			}
			for range 5 {
				select {
				case err := <-errs:
					if wire.CodeOf(err) != wire.SessionClosed && !errors.Is(err, context.Canceled) {
						t.Fatalf("a wait returned %v, want WT_SESSION_CLOSED or its context's end", err)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("a wait did not return once the session ended")
				}
			}
		})
	}
}
