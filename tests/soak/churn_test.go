package soak

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	cws "github.com/coder/websocket"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/internal/leakcheck"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Churn: on each mapping, cycle after cycle, a client connects, handshakes
// and closes; then, cycle after cycle, a client connects, handshakes and
// vanishes without a close (its QUIC connection or TCP socket torn down
// under it), which the server must see as a lost session (§11). After a
// warm-up of each kind, the live heap after GC grows by less than 512 bytes
// per cycle, and every goroutine ends. TIO_CHURN sets the cycles of each
// kind per mapping (by default, as make test runs it, 300: fewer leave the
// per-cycle figure to the heap's noise of some tens of KiB).
func TestChurnLeavesNothingBehind(t *testing.T) {
	cycles := map[string]int{"webtransport": 300, "websocket": 300}
	if n, err := strconv.Atoi(os.Getenv("TIO_CHURN")); err == nil && n > 0 {
		cycles = map[string]int{"webtransport": n, "websocket": n}
	}
	leakcheck.Check(t, 10*time.Second)
	// Every session's start and end, so a cycle ends only once the server
	// is done with its session, and a drop is known to have reached it.
	started := make(chan struct{}, 1)
	ended := make(chan error, 1)
	srv, err := tio.NewServer(contract, tio.ServerOptions{
		OnSession:    func(*tio.Peer) { started <- struct{}{} },
		OnSessionEnd: func(_ *tio.Peer, err error) { ended <- err },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	l, pin, shutdown := listen(t, srv, endpoint.Options{Path: "/churn"})
	defer shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	handshake, err := wire.AppendFrame(nil, wire.FrameHandshake, wire.CodecJSON, 0,
		wire.AppendHandshake(nil, wire.Handshake{V: wire.ProtocolVersion, Events: contract.Table()}))
	if err != nil {
		t.Fatal(err)
	}
	serverEnd := func(what string) error {
		select {
		case err := <-ended:
			return err
		case <-ctx.Done():
			t.Fatalf("%s: the server never ended the session", what)
			return nil
		}
	}

	for _, mp := range []struct {
		name string
		dial func() (*tio.Client, error)
		// vanish opens a session whose client sends its handshake, waits
		// until the server accepted it, and tears its connection down
		// without a close.
		vanish func(established <-chan struct{}) error
	}{
		{"webtransport",
			func() (*tio.Client, error) { return endpoint.Dial(ctx, l.URL(), contract, pin) },
			func(established <-chan struct{}) error {
				return vanishWebTransport(ctx, l.URL(), pin.CertHashes[0], handshake, established)
			}},
		{"websocket",
			func() (*tio.Client, error) { return endpoint.DialWebSocket(ctx, l.WebSocketURL(), contract, pin) },
			func(established <-chan struct{}) error {
				return vanishWebSocket(ctx, l.WebSocketURL(), pin.CertHashes[0], handshake, established)
			}},
	} {
		closeCycle := func() {
			c, err := mp.dial()
			if err != nil {
				t.Fatalf("%s: %v", mp.name, err)
			}
			<-started
			if err := c.Close(tio.NoError, "churn"); err != nil {
				t.Fatal(err)
			}
			var end *tio.SessionEnd
			if err := c.Wait(); !errors.As(err, &end) || !end.Normal() {
				t.Fatalf("%s: a session ended %v", mp.name, err)
			}
			if err := serverEnd(mp.name); !errors.As(err, &end) || !end.Normal() || !end.ByPeer {
				t.Fatalf("%s: the server saw a closed session end %v, want the client's WT_NO_ERROR", mp.name, err)
			}
		}
		dropCycle := func() {
			if err := mp.vanish(started); err != nil {
				t.Fatalf("%s, drop: %v", mp.name, err)
			}
			var end *tio.SessionEnd
			if err := serverEnd(mp.name + ", drop"); !errors.As(err, &end) || !end.Lost {
				t.Fatalf("%s: the server saw a vanished client's session end %v, want it lost (§11)", mp.name, err)
			}
		}
		for _, kind := range []struct {
			name  string
			cycle func()
		}{{"close", closeCycle}, {"drop", dropCycle}} {
			for range 50 {
				kind.cycle()
			}
			before := read(time.Now())
			began := time.Now()
			n := cycles[mp.name]
			for range n {
				kind.cycle()
			}
			took := time.Since(began)
			after, perCycle := grownPer(before, n, 512)
			t.Logf("%s, %s: %d cycles in %v (%v each); live heap %+.0f B per cycle; goroutines %d before, %d after",
				mp.name, kind.name, n, took.Round(time.Millisecond), (took / time.Duration(n)).Round(time.Microsecond), perCycle, before.goroutines, after.goroutines)
			if perCycle >= 512 {
				t.Errorf("%s, %s: the live heap grew %.0f B per cycle, want under 512", mp.name, kind.name, perCycle)
			}
			if after.goroutines > before.goroutines {
				t.Errorf("%s, %s: %d goroutines after the cycles, %d before", mp.name, kind.name, after.goroutines, before.goroutines)
			}
		}
	}
}

// vanishWebTransport is a client that dies without a close: it opens a
// session with webtransport-go directly, writes its handshake on its emit
// stream, and once the server accepted it closes the QUIC connection, so
// no WT_CLOSE_SESSION capsule is ever sent.
func vanishWebTransport(ctx context.Context, rawURL string, pin [32]byte, handshake []byte, established <-chan struct{}) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	tlsConf := webtransport.PinnedTLSConfig([][32]byte{pin}, nil)
	tlsConf.NextProtos = []string{http3.NextProtoH3}
	qc, err := quic.DialAddr(ctx, u.Host, tlsConf, &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true})
	if err != nil {
		return err
	}
	defer qc.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "")
	cc, err := (&wt.Transport{}).NewClientConn(qc)
	if err != nil {
		return err
	}
	_, sess, err := cc.Dial(ctx, rawURL, nil)
	if err != nil {
		return err
	}
	st, err := sess.OpenUniStreamSync(ctx)
	if err != nil {
		return err
	}
	if _, err := st.Write(handshake); err != nil {
		return err
	}
	return awaitEstablished(ctx, established)
}

// vanishWebSocket is the same over the WebSocket mapping: once the server
// accepted its handshake it resets its TCP connection (SO_LINGER 0), so no
// close frame is ever sent.
func vanishWebSocket(ctx context.Context, rawURL string, pin [32]byte, handshake []byte, established <-chan struct{}) error {
	var tcp *net.TCPConn
	hc := &http.Client{Transport: &http.Transport{
		TLSClientConfig: webtransport.PinnedTLSConfig([][32]byte{pin}, nil),
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err == nil {
				tcp = c.(*net.TCPConn)
			}
			return c, err
		},
	}}
	defer hc.CloseIdleConnections()
	c, _, err := cws.Dial(ctx, rawURL, &cws.DialOptions{HTTPClient: hc})
	if err != nil {
		return err
	}
	defer c.CloseNow()
	if err := c.Write(ctx, cws.MessageBinary, handshake); err != nil {
		return err
	}
	if err := awaitEstablished(ctx, established); err != nil {
		return err
	}
	if tcp == nil {
		return errors.New("no TCP connection was dialled")
	}
	if err := tcp.SetLinger(0); err != nil {
		return err
	}
	return tcp.Close()
}

func awaitEstablished(ctx context.Context, established <-chan struct{}) error {
	select {
	case <-established:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the server never accepted the handshake: %w", ctx.Err())
	}
}
