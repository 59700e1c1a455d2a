package endpoint

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/tio"
)

// The TCP side's net/http timers (the HTTPS server of the WebSocket
// upgrades and the probes, and the development page's plain HTTP) are
// options whose defaults are what an operator of a Go HTTP service sets:
// a request header within 10 s, a keep-alive connection idle for at most
// 120 s. Each is shown with a short value over a real TCP connection; net/http
// runs them on the wall clock, so the tests set them short rather than
// wait out the defaults.

func TestHTTPSTimersDefaultToTenAndOneHundredTwentySeconds(t *testing.T) {
	srv, err := tio.NewServer(contract, tio.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	lim := listen(t, srv, Options{}).Limits()
	if lim.HTTPSReadHeaderTimeout != 10*time.Second || lim.HTTPSIdleTimeout != 120*time.Second {
		t.Fatalf("HTTPS timers %v (header), %v (idle); want 10s and 2m0s", lim.HTTPSReadHeaderTimeout, lim.HTTPSIdleTimeout)
	}
	lim = listen(t, srv, Options{HTTPSReadHeaderTimeout: time.Second, HTTPSIdleTimeout: 2 * time.Second}).Limits()
	if lim.HTTPSReadHeaderTimeout != time.Second || lim.HTTPSIdleTimeout != 2*time.Second {
		t.Fatalf("HTTPS timers %v (header), %v (idle); want the options' 1s and 2s", lim.HTTPSReadHeaderTimeout, lim.HTTPSIdleTimeout)
	}
}

// timerSides are the TCP servers a listener runs with its HTTPS timers:
// each dials a fresh connection to one.
func timerSides(t *testing.T, opts Options) map[string]func() net.Conn {
	t.Helper()
	srv, err := tio.NewServer(contract, tio.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	l := listen(t, srv, opts)
	page, err := l.ServeDevPage("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = page.Shutdown(testCtx(t)) })
	return map[string]func() net.Conn{
		"HTTPS": func() net.Conn {
			c, err := tls.Dial("tcp", l.TCPAddr().String(), pinnedTLS(t, "http/1.1"))
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		"development page": func() net.Conn {
			c, err := net.Dial("tcp", page.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
	}
}

// closedAfter waits, up to 5 s (half the shorter default), for the server
// to close c, reading and dropping what it sends, and returns how long that
// took from start.
func closedAfter(t *testing.T, c net.Conn, r io.Reader, start time.Time) time.Duration {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, r)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the server did not close the connection within 5 s")
	}
	return time.Since(start)
}

// A request header still arriving when HTTPSReadHeaderTimeout has passed
// (one byte every 50 ms, never the blank line) gets its connection closed:
// the deadline is the whole header's, which a trickle does not renew.
func TestHTTPSReadHeaderTimeoutClosesAHalfSentHeader(t *testing.T) {
	const deadline = 300 * time.Millisecond
	for side, dial := range timerSides(t, Options{HTTPSReadHeaderTimeout: deadline, HTTPSIdleTimeout: time.Minute}) {
		t.Run(side, func(t *testing.T) {
			// The server's header clock starts once it has the connection
			// (after the TLS handshake on HTTPS), which can be before the
			// dial returns here: start before dialling, so a lower bound of
			// the deadline holds however late this goroutine runs.
			start := time.Now()
			c := dial()
			defer c.Close()
			if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			trickled := make(chan struct{})
			go func() {
				defer close(trickled)
				for {
					select {
					case <-stop:
						return
					case <-time.After(50 * time.Millisecond):
					}
					if _, err := io.WriteString(c, "X"); err != nil {
						return
					}
				}
			}()
			took := closedAfter(t, c, c, start)
			close(stop)
			<-trickled
			if took < deadline {
				t.Fatalf("closed after %v, before the %v header deadline", took, deadline)
			}
			t.Logf("a trickling header closed after %v", took)
		})
	}
}

// A keep-alive connection that sends no next request within
// HTTPSIdleTimeout of its last answer is closed; the first request was
// answered, so the connection was kept alive, not refused.
func TestHTTPSIdleTimeoutClosesAnIdleKeepAliveConnection(t *testing.T) {
	const idle = 300 * time.Millisecond
	for side, dial := range timerSides(t, Options{HTTPSReadHeaderTimeout: time.Minute, HTTPSIdleTimeout: idle}) {
		t.Run(side, func(t *testing.T) {
			c := dial()
			defer c.Close()
			br := bufio.NewReader(c)
			// The idle wait starts once the server wrote its last answer, so
			// it cannot have started before the last request was sent: the
			// close comes at least idle after that, never after the answer
			// was read here (the two differ by the response's trip).
			var asked time.Time
			for i := range 2 { // the second request shows the connection is kept alive
				asked = time.Now()
				if _, err := io.WriteString(c, "GET /nothing-here HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
					t.Fatal(err)
				}
				rsp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("request %d: %v", i+1, err)
				}
				_, _ = io.Copy(io.Discard, rsp.Body)
				_ = rsp.Body.Close()
				if rsp.Close {
					t.Fatalf("request %d: the server closes the connection after answering, want keep-alive", i+1)
				}
			}
			took := closedAfter(t, c, br, asked)
			if took < idle {
				t.Fatalf("closed %v after the last request was sent, before the %v idle timeout", took, idle)
			}
			t.Logf("an idle keep-alive connection closed %v after its last request was sent", took)
		})
	}
}
