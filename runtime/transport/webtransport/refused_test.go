package webtransport

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// fullListener is a QUIC listener on 127.0.0.1 whose accept queue is full
// and which accepts nothing until serve is called: quic-go turns every new
// connection away with CONNECTION_REFUSED, as it does on a server too busy
// to accept (its queue holds 32). The HTTPS side of the same port answers
// the §10.3 probe with 200, so a client that probed would call the path
// WT_UDP_UNREACHABLE.
type fullListener struct {
	t        *testing.T
	cert     *devcert.Cert
	ln       *quic.EarlyListener
	url      string
	attempts atomic.Int64 // connections that reached the listener after the queue filled
}

func newFullListener(t *testing.T) *fullListener {
	t.Helper()
	f := &fullListener{t: t, cert: mintCert(t)}
	ports, err := bindPorts("127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	port := ports.udp.LocalAddr().(*net.UDPAddr).Port
	https := &http.Server{Handler: newSite(port, nil, "", nil), TLSConfig: &tls.Config{Certificates: []tls.Certificate{f.cert.TLS}}}
	go https.ServeTLS(ports.tcp, "", "")
	var filling atomic.Bool
	filling.Store(true)
	conf := &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true}
	counting := conf.Clone()
	counting.GetConfigForClient = func(*quic.ClientInfo) (*quic.Config, error) {
		if !filling.Load() {
			f.attempts.Add(1)
		}
		return conf, nil
	}
	tr := &quic.Transport{Conn: ports.udp}
	f.ln, err = tr.ListenEarly(&tls.Config{Certificates: []tls.Certificate{f.cert.TLS}, NextProtos: []string{http3.NextProtoH3}}, counting)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.ln.Close()
		tr.Close()
		https.Close()
	})
	f.url = "https://127.0.0.1:" + strconv.Itoa(port) + "/tio"

	// More connections than the queue holds: the first 32 fill it, the
	// rest are refused already.
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			qc, err := quic.DialAddr(ctx, "127.0.0.1:"+strconv.Itoa(port), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{http3.NextProtoH3}}, &quic.Config{EnableDatagrams: true})
			if err == nil {
				t.Cleanup(func() { qc.CloseWithError(0, "") })
			}
		})
	}
	wg.Wait()
	filling.Store(false)
	return f
}

// serve starts accepting: the queued connections, then every new one, each
// served a WebTransport session that it keeps until the test ends.
func (f *fullListener) serve() {
	wts := &wt.Server{CheckOrigin: func(*http.Request) bool { return true }}
	wts.H3 = &http3.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, err := wts.Upgrade(w, r)
		if err != nil {
			return
		}
		<-sess.Context().Done()
	})}
	f.t.Cleanup(func() { wts.Close() })
	go func() {
		for {
			qc, err := f.ln.Accept(context.Background())
			if err != nil {
				return
			}
			go wts.ServeQUICConn(qc)
		}
	}()
}

func wantRefusal(t *testing.T, err error) {
	t.Helper()
	var te *quic.TransportError
	if !errors.As(err, &te) || te.ErrorCode != quic.ConnectionRefused || !te.Remote {
		t.Fatalf("err = %v, want it to wrap the server's CONNECTION_REFUSED", err)
	}
}

// A connection the server refused (CONNECTION_REFUSED: here its accept
// queue is full, as on a server that many clients dial at once) is dialled
// again with backoff, and the session opens once the server has room: the
// dial is still waiting after three refused connections, then succeeds.
func TestDialRetriesAConnectionTheServerRefused(t *testing.T) {
	f := newFullListener(t)
	opts := DialOptions{CertHashes: [][32]byte{f.cert.SHA256}, DialTimeout: 10 * time.Second}
	type result struct {
		c   interface{ Close(uint32, string) error }
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := Dial(ctx5s(t), f.url, opts)
		done <- result{c, err}
	}()
	for f.attempts.Load() < 3 {
		select {
		case r := <-done:
			t.Fatalf("Dial returned (%v) before the server had room", r.err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	f.serve()
	r := <-done
	if r.err != nil {
		t.Fatalf("Dial: %v", r.err)
	}
	r.c.Close(0, "")
}

// §10.3: a server that refuses every connection until the dial times out
// answered over UDP, so the dial is WT_HANDSHAKE_FAILED saying it refused,
// wrapping transport.ErrRefused as a 503 does, never WT_UDP_UNREACHABLE (its
// HTTPS side answers the probe: a dial that probed would say UDP is blocked).
func TestSpec10_3_DialRefusedUntilItsTimeoutIsHandshakeFailedNotUDPUnreachable(t *testing.T) {
	f := newFullListener(t)
	opts := DialOptions{CertHashes: [][32]byte{f.cert.SHA256}, DialTimeout: 400 * time.Millisecond}
	start := time.Now()
	_, err := Dial(ctx5s(t), f.url+"?token=s3cret", opts)
	wantCode(t, err, wire.HandshakeFailed)
	wantRefusal(t, err)
	if !errors.Is(err, transport.ErrRefused) {
		t.Fatalf("err = %v, want transport.ErrRefused: the server answered, so no fallback", err)
	}
	if msg := err.Error(); !contains(msg, "refused") || contains(msg, "s3cret") {
		t.Fatalf("err = %v, want it to say the server refused, without the query", err)
	}
	if n := f.attempts.Load(); n < 2 {
		t.Fatalf("%d connections reached the server, want the dial retried", n)
	}
	if took := time.Since(start); took > opts.DialTimeout+time.Second {
		t.Fatalf("took %v, want about the dial timeout", took)
	}
}
