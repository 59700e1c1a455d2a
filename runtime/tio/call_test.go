package tio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

// rawCall opens a call stream from a raw peer and writes the request.
func (r *rawPeer) rawCall(id uint32, codec wire.Codec, req []byte, fin bool) (transport.Stream, *wire.Reader) {
	r.t.Helper()
	st, err := r.conn.OpenCall(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	b, err := wire.AppendFrame(nil, wire.FrameCallRequest, codec, id, req)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := st.Write(b); err != nil {
		r.t.Fatal(err)
	}
	if fin {
		_ = st.Close()
	}
	return st, wire.NewReader(st)
}

func mustNext(t *testing.T, rd *wire.Reader) wire.Frame {
	t.Helper()
	f, err := rd.Next()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return f
}

func wantCallError(t *testing.T, rd *wire.Reader, code Code, has string) {
	t.Helper()
	f := mustNext(t, rd)
	if f.Type != wire.FrameCallError {
		t.Fatalf("got %s, want CALL_ERROR", f.Type)
	}
	ce, err := wire.ParseCallError(f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if ce.Code != code || !strings.Contains(ce.Message, has) {
		t.Fatalf("CALL_ERROR %s %q, want %s containing %q", ce.Code, ce.Message, code, has)
	}
	if _, err := rd.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after CALL_ERROR: %v, want the stream closed", err)
	}
}

func TestSpec3_2_ReturnsCallRoundTrip(t *testing.T) {
	p := newPair(t, loopback.Options{SplitWrites: true}, ServerOptions{}, Options{})
	big := make([]byte, 2<<20) // above the emit cap: calls carry up to 16 MiB (§5.1)
	for i := range big {
		big[i] = byte(i)
	}
	resp, err := p.client.Call(context.Background(), evBlob, big)
	if err != nil || string(resp) != string(big) {
		t.Fatalf("blob: %d bytes, %v", len(resp), err)
	}
}

func TestSpec5_4_UnknownEventOnCallIsCallError(t *testing.T) {
	_, raw := handshaken(t)
	_, rd := raw.rawCall(4242, wire.CodecJSON, []byte(`1`), true)
	wantCallError(t, rd, wire.UnknownEvent, "event id 4242")
}

func TestSpec5_3_CodecMismatchOnCallNamesEventAndSlot(t *testing.T) {
	_, raw := handshaken(t)
	_, rd := raw.rawCall(evEcho, wire.CodecBytes, []byte(`1`), true)
	wantCallError(t, rd, wire.ProtocolError, "event 'echo' request slot is json")
}

func TestSpec5_2_CallStreamMustStartWithRequest(t *testing.T) {
	_, raw := handshaken(t)
	st, err := raw.conn.OpenCall(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := wire.AppendFrame(nil, wire.FrameCallCredit, wire.CodecJSON, 0, []byte(`{"credit":1}`))
	_, _ = st.Write(b)
	wantCallError(t, wire.NewReader(st), wire.ProtocolError, "not CALL_REQUEST")
}

func TestSpec6_4_CallErrorCarriesHandlersCode(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	_, err := p.client.Call(context.Background(), evFail, []byte(`boom`))
	wantCode(t, err, wire.HandlerError)
	if !strings.Contains(err.Error(), "boom") {
		t.Fatalf("message lost: %v", err)
	}
	// A *wire.Error keeps its code.
	for _, err := range p.client.Stream(context.Background(), evCount, []byte(`nonsense`)) {
		wantCode(t, err, wire.ValidationFailed)
	}
	var e *Error
	if !errors.As(err, &e) || e.Remedy == "" || !errors.Is(err, &Error{Code: HandlerError}) {
		t.Fatalf("error %#v is not a usable *Error", err)
	}
}

func TestSpec6_4_ErrorAfterElementsDeliversElementsFirst(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	var elems []string
	var last error
	for elem, err := range p.client.Stream(context.Background(), evCountThenFail, []byte(`{"n":40}`)) {
		if err != nil {
			last = err
			continue
		}
		if last != nil {
			t.Fatal("an element after the error")
		}
		elems = append(elems, string(elem))
	}
	if len(elems) != 40 || elems[39] != `{"i":39}` {
		t.Fatalf("got %d elements", len(elems))
	}
	wantCode(t, last, wire.HandlerError)
}

func TestSpec6_3_EmptyYieldsSequenceIsComplete(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	for _, err := range p.client.Stream(context.Background(), evCount, []byte(`{"n":0}`)) {
		t.Fatalf("an empty sequence yielded %v", err)
	}
}

func TestSpec6_6_ResponderStopsAtInitialWindow(t *testing.T) {
	ts, raw := handshaken(t)
	st, rd := raw.rawCall(evCount, wire.CodecJSON, []byte(`{"n":100}`), false)
	for i := range InitialCredit {
		if f := mustNext(t, rd); f.Type != wire.FrameCallResponse || string(f.Payload) != fmt.Sprintf(`{"i":%d}`, i) {
			t.Fatalf("element %d: %s %q", i, f.Type, f.Payload)
		}
	}
	for range InitialCredit {
		<-ts.streamed
	}
	select {
	case i := <-ts.streamed:
		t.Fatalf("the responder sent element %d with no credit left", i)
	case <-time.After(50 * time.Millisecond):
	}
	// One batch of credit releases exactly 16 more.
	b, _ := wire.AppendFrame(nil, wire.FrameCallCredit, wire.CodecJSON, 0, wire.AppendCredit(nil, CreditBatch))
	_, _ = st.Write(b)
	for i := range CreditBatch {
		if f := mustNext(t, rd); string(f.Payload) != fmt.Sprintf(`{"i":%d}`, InitialCredit+i) {
			t.Fatalf("refill element %d: %q", i, f.Payload)
		}
		<-ts.streamed
	}
	select {
	case i := <-ts.streamed:
		t.Fatalf("the responder sent element %d beyond the refill", i)
	case <-time.After(50 * time.Millisecond):
	}
	abandon(st)
}

func TestSpec6_6_NonPositiveOrNonNumericCreditIgnored(t *testing.T) {
	ts, raw := handshaken(t)
	st, rd := raw.rawCall(evCount, wire.CodecJSON, []byte(`{"n":100}`), false)
	for _, c := range []string{`{"credit":0}`, `{"credit":-5}`, `{"credit":"16"}`, `{"credit":1.5}`, `[]`} {
		b, _ := wire.AppendFrame(nil, wire.FrameCallCredit, wire.CodecJSON, 0, []byte(c))
		_, _ = st.Write(b)
	}
	for range InitialCredit {
		mustNext(t, rd)
		<-ts.streamed
	}
	select {
	case i := <-ts.streamed:
		t.Fatalf("ignored credit released element %d", i)
	case <-time.After(50 * time.Millisecond):
	}
	abandon(st)
}

func TestSpec6_6_ZeroCreditWaitsWithoutDeadlineAndIsAbortedAtSessionEnd(t *testing.T) {
	fake := clock.NewFake()
	ts, raw, served := serveRaw(t, loopback.Options{Clock: fake}, ServerOptions{Options: Options{Clock: fake}})
	raw.handshake(testContract)
	_, rd := raw.rawCall(evCount, wire.CodecJSON, []byte(`{"n":100}`), false)
	for range InitialCredit {
		mustNext(t, rd)
		<-ts.streamed
	}
	// Hours pass on the session's clock: the parked responder imposes no
	// deadline of its own.
	for range 10 {
		fake.Advance(time.Hour)
	}
	select {
	case i := <-ts.streamed:
		t.Fatalf("the parked responder moved: %d", i)
	case <-time.After(50 * time.Millisecond):
	}
	// The session's end aborts it: send fails and the handler returns.
	_ = raw.conn.Close(0, "bye")
	select {
	case i := <-ts.streamed:
		if i != -1 {
			t.Fatalf("got element %d, want the send to fail", i)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the parked responder outlived its session")
	}
	<-served
	served <- nil
}

func TestSpec6_2_FinCancelsStreamingCall(t *testing.T) {
	ts, raw := handshaken(t)
	st, rd := raw.rawCall(evCount, wire.CodecJSON, []byte(`{"n":100}`), false)
	for range InitialCredit {
		mustNext(t, rd)
		<-ts.streamed
	}
	_ = st.Close() // FIN: no further credit is coming
	select {
	case i := <-ts.streamed:
		if i != -1 {
			t.Fatalf("got element %d, want the send to fail", i)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("FIN did not cancel the streaming call")
	}
}

func TestSpec6_6_RefillNeverExceedsWindow(t *testing.T) {
	// A raw server answers a yields call and counts the credit the engine
	// client grants: batches of exactly 16, never more outstanding than 32.
	cconn, sconn, _ := loopback.Pair(loopback.Options{})
	raw := newRawPeer(t, sconn)
	raw.handshake(testContract)
	c, err := NewClient(context.Background(), cconn, testContract, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(NoError, ""); _ = c.Wait() }()
	const total = 200
	done := make(chan error, 1)
	go func() {
		st, err := sconn.AcceptCall(context.Background())
		if err != nil {
			done <- err
			return
		}
		rd := wire.NewReader(st)
		if f, err := rd.Next(); err != nil || f.Type != wire.FrameCallRequest {
			done <- fmt.Errorf("request: %v %v", f.Type, err)
			return
		}
		credit, sent := InitialCredit, 0
		for sent < total {
			for credit > 0 && sent < total {
				b, _ := wire.AppendFrame(nil, wire.FrameCallResponse, wire.CodecJSON, 0, fmt.Appendf(nil, "%d", sent))
				_, _ = st.Write(b)
				sent++
				credit--
			}
			if sent == total {
				break
			}
			f, err := rd.Next()
			if err != nil {
				done <- err
				return
			}
			n, ok := wire.ParseCredit(f.Payload)
			if f.Type != wire.FrameCallCredit || !ok || n != CreditBatch {
				done <- fmt.Errorf("credit frame %s %q", f.Type, f.Payload)
				return
			}
			if credit+n > InitialCredit {
				done <- fmt.Errorf("outstanding credit %d exceeds the window", credit+n)
				return
			}
			credit += n
		}
		_ = st.Close()
		done <- nil
	}()
	got := 0
	for elem, err := range c.Stream(context.Background(), evCount, []byte(`{"n":200}`)) {
		if err != nil {
			t.Fatal(err)
		}
		if string(elem) != fmt.Sprint(got) {
			t.Fatalf("element %q, want %d", elem, got)
		}
		got++
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got != total {
		t.Fatalf("got %d", got)
	}
}

// rawServer answers the next call with frames written by respond.
func rawServer(t *testing.T, respond func(st transport.Stream)) *Client {
	t.Helper()
	cconn, sconn, _ := loopback.Pair(loopback.Options{})
	raw := newRawPeer(t, sconn)
	raw.handshake(testContract)
	c, err := NewClient(context.Background(), cconn, testContract, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(NoError, ""); _ = c.Wait() })
	go func() {
		for {
			st, err := sconn.AcceptCall(context.Background())
			if err != nil {
				return
			}
			if _, err := wire.NewReader(st).Next(); err != nil {
				return
			}
			respond(st)
		}
	}()
	return c
}

func writeFrame(st transport.Stream, t wire.FrameType, c wire.Codec, payload []byte) {
	b, _ := wire.AppendFrame(nil, t, c, 0, payload)
	_, _ = st.Write(b)
}

func TestSpec3_2_ReceiverAcceptsAnyLengthSequence(t *testing.T) {
	c := rawServer(t, func(st transport.Stream) {
		writeFrame(st, wire.FrameCallResponse, wire.CodecJSON, []byte(`"first"`))
		writeFrame(st, wire.FrameCallResponse, wire.CodecJSON, []byte(`"second"`))
		_ = st.Close()
	})
	resp, err := c.Call(context.Background(), evEcho, []byte(`1`))
	if err != nil || string(resp) != `"first"` {
		t.Fatalf("returns with two responses: %q %v", resp, err)
	}
	n := 0
	for _, err := range c.Stream(context.Background(), evCount, []byte(`1`)) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("yields: %d elements", n)
	}
}

func TestSpec3_2_ReturnsWithNoResponseIsProtocolError(t *testing.T) {
	c := rawServer(t, func(st transport.Stream) { _ = st.Close() })
	_, err := c.Call(context.Background(), evEcho, []byte(`1`))
	wantCode(t, err, wire.ProtocolError)
}

func TestSpec5_1_OversizeResponseRejectsCallWithProtocolError(t *testing.T) {
	c := rawServer(t, func(st transport.Stream) {
		_, _ = st.Write(rawHeader(wire.MaxCallPayload+9, byte(wire.FrameCallResponse), 1, 0, 0))
	})
	_, err := c.Call(context.Background(), evEcho, []byte(`1`))
	wantCode(t, err, wire.ProtocolError)
	if !strings.Contains(err.Error(), "exceeds") {
		t.Fatalf("error %v", err)
	}
}

func TestSpec5_3_ResponseCodecMismatchNamesEventAndSlot(t *testing.T) {
	c := rawServer(t, func(st transport.Stream) {
		writeFrame(st, wire.FrameCallResponse, wire.CodecBytes, []byte(`x`))
		_ = st.Close()
	})
	_, err := c.Call(context.Background(), evEcho, []byte(`1`))
	wantCode(t, err, wire.ProtocolError)
	if !strings.Contains(err.Error(), "event 'echo' returns slot is json") {
		t.Fatalf("error %v", err)
	}
}

func TestSpec5_1_OversizeRequestAbandonsStream(t *testing.T) {
	ts, raw := handshaken(t)
	st, err := raw.conn.OpenCall(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = st.Write(rawHeader(wire.MaxCallPayload+9, byte(wire.FrameCallRequest), 1, 0, evEcho))
	_, err = wire.NewReader(st).Next()
	var se *transport.StreamError
	if !errors.As(err, &se) || se.Code != wire.ResetAborted {
		t.Fatalf("got %v, want the stream abandoned", err)
	}
	// The session stays up.
	raw.frame(wire.FrameEmit, wire.CodecJSON, evPing, []byte(`9`))
	if got := ts.got.next(t); got != "ping:9" {
		t.Fatalf("got %q", got)
	}
}

func TestSpec8_CancelResetsWithAborted(t *testing.T) {
	// A raw responder sees the cancelled call's stream stopped with
	// WT_ABORTED (1) and its request side finished.
	stopped := make(chan error, 1)
	answer := make(chan struct{})
	requested := make(chan struct{})
	c := rawServer(t, func(st transport.Stream) {
		close(requested)
		<-answer
		b, _ := wire.AppendFrame(nil, wire.FrameCallResponse, wire.CodecJSON, 0, []byte(`1`))
		_, err := st.Write(b)
		stopped <- err
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, evEcho, []byte(`1`))
		errc <- err
	}()
	<-requested
	cancel()
	err := <-errc
	wantCode(t, err, wire.Aborted)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%v does not wrap context.Canceled", err)
	}
	close(answer)
	var se *transport.StreamError
	if err := <-stopped; !errors.As(err, &se) || se.Code != wire.ResetAborted || !se.Remote {
		t.Fatalf("responder write after cancel: %v, want stopped with code 1", err)
	}
}

func TestSpec8_CancelledStreamingCallEndsResponder(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	for _, err := range p.client.Stream(ctx, evCount, []byte(`{"n":1000000}`)) {
		if n++; n == 3 {
			cancel()
		}
		if err != nil {
			wantCode(t, err, wire.Aborted)
			break
		}
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case i := <-p.srv.streamed:
			if i == -1 {
				return // the responder observed the reset and stopped
			}
		case <-deadline:
			t.Fatal("the responder kept producing after the reset")
		}
	}
}

func TestSpec8_BreakingAStreamCancelsIt(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	n := 0
	for _, err := range p.client.Stream(context.Background(), evCount, []byte(`{"n":1000000}`)) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 5 {
			break
		}
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case i := <-p.srv.streamed:
			if i == -1 {
				return // the responder's send failed: it stopped
			}
		case <-deadline:
			t.Fatal("the responder kept producing after break")
		}
	}
}

func TestSpec10_1_TooManyStreamsResetsThe257th(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	errc := make(chan error, DefaultMaxCalls)
	for range DefaultMaxCalls {
		go func() {
			_, err := p.client.Call(context.Background(), evHang, []byte(`1`))
			errc <- err
		}()
	}
	for range DefaultMaxCalls {
		<-p.srv.hangs
	}
	_, err := p.client.Call(context.Background(), evEcho, []byte(`1`))
	wantCode(t, err, wire.TooManyStreams)
	close(p.srv.release)
	for range DefaultMaxCalls {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	// The session stayed open, and the slots are free again.
	waitFor(t, "the call slots to free", func() bool { return p.peer.activeCallsNow() == 0 })
	if _, err := p.client.Call(context.Background(), evEcho, []byte(`1`)); err != nil {
		t.Fatal(err)
	}
}

func TestSpec11_PendingCallsRejectSessionClosed(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	errc := make(chan error, 1)
	go func() {
		_, err := p.client.Call(context.Background(), evHang, []byte(`1`))
		errc <- err
	}()
	hctx := <-p.srv.hangs
	_ = p.peer.Close(NoError, "server done")
	wantCode(t, <-errc, wire.SessionClosed)
	<-hctx.Done()
	for _, err := range p.client.Stream(context.Background(), evCount, []byte(`{"n":1}`)) {
		wantCode(t, err, wire.SessionClosed)
	}
}

// §11: a lost connection carries no code: the pending call rejects
// WT_SESSION_CLOSED, and the session's end reports WT_NO_ERROR ("since no
// code was received") on both sides, worded as a lost connection, its
// SessionEnd Lost and not Normal, so nothing takes it for a close.
func TestSpec11_LostConnectionReportsNoErrorAsLost(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	errc := make(chan error, 1)
	go func() {
		_, err := p.client.Call(context.Background(), evHang, []byte(`1`))
		errc <- err
	}()
	<-p.srv.hangs
	p.link.Lose()
	wantCode(t, <-errc, wire.SessionClosed)
	waitDone(t, p.client.Done())
	err := <-p.served
	p.served <- err
	for side, err := range map[string]error{"client": p.client.Err(), "server": err} {
		wantCode(t, err, wire.NoError)
		var end *SessionEnd
		if !errors.As(err, &end) || !end.Lost || end.Normal() || end.Code != "" {
			t.Fatalf("%s: %v wraps %+v, want a lost SessionEnd", side, err, end)
		}
		if msg := err.Error(); !strings.Contains(msg, "the connection was lost") {
			t.Fatalf("%s: %q, want it worded as a lost connection", side, msg)
		}
	}
}

// §10.2: a WT_NO_ERROR close from the server is a normal end for the
// client, with the server's reason.
func TestSpec10_2_ServerShutdownIsNormalEnd(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	if err := p.srv.Close(); err != nil {
		t.Fatal(err)
	}
	waitDone(t, p.client.Done())
	var end *SessionEnd
	if err := p.client.Err(); !errors.As(err, &end) || !end.Normal() || !end.ByPeer || end.Reason != ShutdownReason {
		t.Fatalf("client ended with %v (%+v), want a normal close by the peer with %q", err, end, ShutdownReason)
	}
}

func TestSpec11_CloseCodeAndReasonReported(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	if err := p.peer.Close(wire.Unauthorized, "expired"); err != nil {
		t.Fatal(err)
	}
	waitDone(t, p.client.Done())
	err := p.client.Err()
	wantCode(t, err, wire.Unauthorized)
	if !strings.Contains(err.Error(), "expired") || !strings.Contains(err.Error(), "the peer") {
		t.Fatalf("err %v", err)
	}
	wantCode(t, p.client.Emit(evPing, []byte(`1`)), wire.SessionClosed)
	wantCode(t, p.peer.Close(wire.UnknownEvent, ""), wire.ProtocolError) // not a §10.2 code
}

func TestSpec5_1_MalformedRequestHeaderIsCallError(t *testing.T) {
	ts, raw := handshaken(t)
	st, err := raw.conn.OpenCall(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = st.Write(append(rawHeader(9, byte(wire.FrameCallRequest), 1, 7, evEcho), '1'))
	f := mustNext(t, wire.NewReader(st))
	ce, err := wire.ParseCallError(f.Payload)
	if f.Type != wire.FrameCallError || err != nil || ce.Code != wire.ProtocolError || !strings.Contains(ce.Message, "reserved bits") {
		t.Fatalf("%s %q %v", f.Type, f.Payload, err)
	}
	raw.frame(wire.FrameEmit, wire.CodecJSON, evPing, []byte(`5`)) // the session stays up
	if got := ts.got.next(t); got != "ping:5" {
		t.Fatalf("got %q", got)
	}
}

func TestSpecDirectionCallFromServerRefusedAndCounted(t *testing.T) {
	// Calls are the client's to make: a server-opened call is answered with
	// CALL_ERROR and counted, and the session stays up.
	cconn, sconn, _ := loopback.Pair(loopback.Options{})
	raw := newRawPeer(t, sconn)
	raw.handshake(testContract)
	c, err := NewClient(context.Background(), cconn, testContract, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(NoError, ""); _ = c.Wait() }()
	_, rd := raw.rawCall(evEcho, wire.CodecJSON, []byte(`1`), true)
	wantCallError(t, rd, wire.ProtocolError, "only the client makes")
	if s := c.Stats(); s.DirectionDropped != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestSpec6_6_ConcurrentSendsShareTheWindow(t *testing.T) {
	// A handler that sends from several goroutines still writes whole
	// frames and never more than the credit.
	ts, raw := handshaken(t)
	sent := make(chan struct{}, 1024)
	ts.HandleStream(evCountThenFail, func(ctx context.Context, p *Peer, req []byte, send func([]byte) error) error {
		done := make(chan struct{})
		for g := range 4 {
			go func() {
				defer func() { done <- struct{}{} }()
				for i := 0; ; i++ {
					if send(fmt.Appendf(nil, `{"g":%d,"i":%d}`, g, i)) != nil {
						return
					}
					sent <- struct{}{}
				}
			}()
		}
		for range 4 {
			<-done
		}
		return nil
	})
	st, rd := raw.rawCall(evCountThenFail, wire.CodecJSON, []byte(`{}`), false)
	for range InitialCredit {
		if f := mustNext(t, rd); f.Type != wire.FrameCallResponse || !strings.HasPrefix(string(f.Payload), `{"g":`) {
			t.Fatalf("frame %s %q", f.Type, f.Payload)
		}
		<-sent
	}
	select {
	case <-sent:
		t.Fatal("a send went past the window")
	case <-time.After(50 * time.Millisecond):
	}
	abandon(st)
}
