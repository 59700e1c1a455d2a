package endpoint

import (
	"bytes"
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/quicvarint"
	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/wire"
)

// A peer may reset its side of a stream with WT_SESSION_GONE and keep the
// session open. webtransport-go (v0.13.0) then holds a Read of the stream
// until the session ends, its read deadline passes or the session closes,
// and CancelRead does not wake it: a call stream this side stops would
// keep its reader, its goroutine and the request's bytes for the
// session's life.

// §6.2, §10.1: a call request cut off by the peer's reset with
// WT_SESSION_GONE is still given up at RequestTimeout: the stream is
// stopped, the read ends and the peer reads CALL_ERROR WT_ABORTED. The
// deadline passes on the fake clock.
func TestSpec6_2_RequestDeadlineEndsACallResetWithSessionGone(t *testing.T) {
	fake := clock.NewFake()
	reg := serveMetrics(t)
	srv, err := tio.NewServer(metricsContract, tio.ServerOptions{Metrics: reg.Metrics, Options: tio.Options{Clock: fake}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.HandleCall(evEcho, func(_ context.Context, _ *tio.Peer, req []byte) ([]byte, error) { return req, nil })
	l := listen(t, srv, Options{})
	p := dialQUICPeer(t, l, metricsContract)

	armed := fake.Pending()
	st := p.openRawCall(t)
	req := make([]byte, wire.HeaderLen, wire.HeaderLen+100)
	wire.PutHeader(req, wire.FrameCallRequest, wire.CodecBytes, evEcho, 1024)
	if _, err := st.Write(append(req, make([]byte, 100)...)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the request deadline to be armed", func() bool { return fake.Pending() > armed })
	st.CancelWrite(wt.WTSessionGoneErrorCode)
	waitFor(t, "the server's read to wait for the session's end", readsWaitingForTheSession)
	fake.Advance(tio.DefaultRequestTimeout + time.Millisecond)

	_ = st.SetReadDeadline(time.Now().Add(5 * time.Second))
	f, err := wire.NewReader(st).Next()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("no answer 5 s after the request deadline: the server's read of the stream is still blocked")
	}
	if err != nil || f.Type != wire.FrameCallError {
		t.Fatalf("after the deadline the call stream gave %v, %v; want CALL_ERROR", f.Type, err)
	}
	if ce, err := wire.ParseCallError(f.Payload); err != nil || ce.Code != wire.Aborted || !strings.Contains(ce.Message, "did not arrive whole") {
		t.Fatalf("CALL_ERROR %+v, %v; want WT_ABORTED \"did not arrive whole\"", ce, err)
	}
	if got := value(t, reg, "tio_limit_hits_total", "limit", "request_timeout"); got != 1 {
		t.Fatalf("request_timeout hits %v, want 1", got)
	}
}

// §8, §10.1: an answered call whose initiator never finishes its side, or
// resets it with WT_SESSION_GONE (whose read webtransport-go holds until
// the session ends), no longer counts against MaxCalls once its slot is
// given back. At most MaxCalls of them may still wait for the initiator;
// beyond that the server stops reading an answered call at once, so a
// peer cannot hold a goroutine and a stream reader per call it ever made.
func TestSpec8_AnsweredCallsLeftOpenAreBoundedByMaxCalls(t *testing.T) {
	const maxCalls, calls = 2, 20
	srv, err := tio.NewServer(metricsContract, tio.ServerOptions{Options: tio.Options{MaxCalls: maxCalls}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.HandleCall(evEcho, func(_ context.Context, _ *tio.Peer, req []byte) ([]byte, error) { return req, nil })
	l := listen(t, srv, Options{})
	p := dialQUICPeer(t, l, metricsContract)

	for i := range calls {
		st := p.openRawCall(t)
		req := make([]byte, wire.HeaderLen+4)
		wire.PutHeader(req, wire.FrameCallRequest, wire.CodecBytes, evEcho, 4)
		if _, err := st.Write(req); err != nil { // no FIN
			t.Fatal(err)
		}
		_ = st.SetReadDeadline(time.Now().Add(5 * time.Second))
		if f, err := wire.NewReader(st).Next(); err != nil || f.Type != wire.FrameCallResponse {
			t.Fatalf("call %d: %v, %v; want CALL_RESPONSE", i, f.Type, err)
		}
		st.CancelWrite(wt.WTSessionGoneErrorCode)
	}
	// Every reset has reached the server once a later call was answered
	// on the same connection; the stopped reads end promptly.
	waitFor(t, "at most MaxCalls answered calls to wait for their initiator", func() bool {
		return readsWaitingForTheSessionCount() <= maxCalls
	})
}

// quicPeer is a WebTransport session on a QUIC connection the test holds,
// so it can open a stream of the session on QUIC directly and reset it
// with a code webtransport-go's API does not give (WT_SESSION_GONE).
type quicPeer struct {
	qconn *quic.Conn
	sess  *wt.Session
}

// dialQUICPeer opens a session to l, sends contract's handshake and
// returns once the server's first §7.2 probe says it accepted it.
func dialQUICPeer(t *testing.T, l *Listener, contract *tio.Contract) *quicPeer {
	t.Helper()
	ctx := testCtx(t)
	qconn, err := quic.DialAddr(ctx, l.UDPAddr().String(), pinnedTLS(t, http3.NextProtoH3),
		&quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = qconn.CloseWithError(0, "") })
	cc, err := (&wt.Transport{}).NewClientConn(qconn)
	if err != nil {
		t.Fatal(err)
	}
	_, sess, err := cc.Dial(ctx, l.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.CloseWithError(0, "") })
	emit, err := sess.OpenUniStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	greetAndAwaitProbe(t, ctx, emit, sess.ReceiveDatagram, contract)
	return &quicPeer{qconn: qconn, sess: sess}
}

// openRawCall opens a bidirectional stream of the session on QUIC: the
// WebTransport stream header (type 0x41, the session's id, which is its
// CONNECT stream's: the client's first bidirectional stream, 0).
func (p *quicPeer) openRawCall(t *testing.T) *quic.Stream {
	t.Helper()
	st, err := p.qconn.OpenStreamSync(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Write(quicvarint.Append(quicvarint.Append(nil, 0x41), 0)); err != nil {
		t.Fatal(err)
	}
	return st
}

// readsWaitingForTheSession reports whether a Read of this process waits in
// webtransport-go for the end of a session a stream reset said was gone.
func readsWaitingForTheSession() bool { return readsWaitingForTheSessionCount() > 0 }

// readsWaitingForTheSessionCount is how many Reads of this process wait so.
func readsWaitingForTheSessionCount() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte("webtransport-go.(*ReceiveStream).handleSessionGoneError"))
		}
		buf = make([]byte, 2*len(buf))
	}
}
