package webtransport

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"
	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/runtime/clock"
	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/transport"
)

// The figures compare this package's Conn with plain webtransport-go on the
// same bytes, in one process over loopback QUIC:
//
//	go test -run '^$' -bench . -benchtime 2s ./runtime/transport/webtransport/
//
// Emit throughput writes length-prefixed messages on one unidirectional
// stream, one Write per message, and reads them back on the other side.

// rawServer serves plain webtransport-go sessions on 127.0.0.1 and hands each
// to sessions.
func rawServer(b testing.TB, cert *devcert.Cert, sessions chan<- *wt.Session) string {
	b.Helper()
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	s := &wt.Server{
		H3:          &http3.Server{TLSConfig: http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert.TLS}})},
		CheckOrigin: func(*http.Request) bool { return true },
	}
	s.H3.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, err := s.Upgrade(w, r)
		if err != nil {
			return
		}
		sessions <- sess
	})
	go s.Serve(udp)
	b.Cleanup(func() { s.Close(); udp.Close() })
	return "https://" + udp.LocalAddr().String() + "/raw"
}

func rawDial(b testing.TB, url string, cert *devcert.Cert) *wt.Session {
	b.Helper()
	tr := &wt.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true,
		VerifyConnection:   verifyPinned([][32]byte{cert.SHA256}, clock.Real, new(pinRefusal)),
	}}
	_, sess, err := tr.Dial(context.Background(), url, nil)
	if err != nil {
		b.Fatal(err)
	}
	return sess
}

// pumpMessages writes n length-prefixed messages of size bytes, one Write
// each, and returns once the reader has read them all.
func pumpMessages(b *testing.B, w io.WriteCloser, r io.Reader, size, n int) {
	msg := make([]byte, 4+size)
	binary.BigEndian.PutUint32(msg, uint32(size))
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 64<<10)
		want := int64(n) * int64(len(msg))
		var got int64
		for got < want {
			k, err := r.Read(buf)
			got += int64(k)
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range n {
		if _, err := w.Write(msg); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

func BenchmarkEmitThroughput(b *testing.B) {
	cert, err := devcert.Mint(time.Now(), 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{64, 1024} {
		b.Run("raw/"+strconv.Itoa(size)+"B", func(b *testing.B) {
			sessions := make(chan *wt.Session, 1)
			client := rawDial(b, rawServer(b, cert, sessions), cert)
			server := <-sessions
			w, err := client.OpenUniStreamSync(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			w.Write([]byte{0}) // make the stream known to the server
			r, err := server.AcceptUniStream(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			io.ReadFull(r, make([]byte, 1))
			b.SetBytes(int64(4 + size))
			b.ResetTimer()
			pumpMessages(b, w, r, size, b.N)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
			client.CloseWithError(0, "")
		})
		b.Run("conn/"+strconv.Itoa(size)+"B", func(b *testing.B) {
			sessions := make(chan transport.Conn, 1)
			srv, err := Listen(Options{Addr: "127.0.0.1:0", Path: "/tio", Dev: cert,
				Handler: func(c transport.Conn, _ *transport.Request, _ any) { sessions <- c; <-c.Done() }})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			client, err := Dial(context.Background(), srv.URL(), DialOptions{CertHashes: [][32]byte{cert.SHA256}})
			if err != nil {
				b.Fatal(err)
			}
			server := <-sessions
			w, err := client.OpenEmit(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			w.Write([]byte{0})
			r, err := server.AcceptEmit(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			io.ReadFull(r, make([]byte, 1))
			b.SetBytes(int64(4 + size))
			b.ResetTimer()
			pumpMessages(b, w, r, size, b.N)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
			client.Close(0, "")
		})
	}
}

// heapAndStacks is what a Go process holds for its objects and goroutines.
func heapAndStacks() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// BenchmarkIdleSessions opens 1,000 idle sessions (client and server side
// in this one process) and reports bytes and goroutines per session, both
// sides together. Run with -benchtime 1x.
func BenchmarkIdleSessions(b *testing.B) {
	const n = 1000
	cert, err := devcert.Mint(time.Now(), 0)
	if err != nil {
		b.Fatal(err)
	}
	measure := func(b *testing.B, open func() func()) {
		for range b.N {
			g0, m0 := runtime.NumGoroutine(), heapAndStacks()
			closers := make([]func(), 0, n)
			for range n {
				closers = append(closers, open())
			}
			time.Sleep(500 * time.Millisecond) // let handshakes settle
			g1, m1 := runtime.NumGoroutine(), heapAndStacks()
			b.ReportMetric(float64(m1-m0)/n, "B/session")
			b.ReportMetric(float64(g1-g0)/n, "goroutines/session")
			for _, c := range closers {
				c()
			}
		}
	}
	b.Run("raw", func(b *testing.B) {
		sessions := make(chan *wt.Session, n)
		url := rawServer(b, cert, sessions)
		measure(b, func() func() {
			c := rawDial(b, url, cert)
			s := <-sessions
			return func() { c.CloseWithError(0, ""); s.CloseWithError(0, "") }
		})
	})
	b.Run("conn", func(b *testing.B) {
		sessions := make(chan transport.Conn, n)
		srv, err := Listen(Options{Addr: "127.0.0.1:0", Path: "/tio", Dev: cert,
			Handler: func(c transport.Conn, _ *transport.Request, _ any) { sessions <- c; <-c.Done() }})
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Close()
		opts := DialOptions{CertHashes: [][32]byte{cert.SHA256}, CloseGrace: 10 * time.Millisecond}
		measure(b, func() func() {
			c, err := Dial(context.Background(), srv.URL(), opts)
			if err != nil {
				b.Fatal(err)
			}
			<-sessions
			return func() { c.Close(0, "") }
		})
	})
}
