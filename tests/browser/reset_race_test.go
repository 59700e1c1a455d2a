package browser

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/runtime/devcert"
)

// refusedCalls is how a §10.1 refusal looks on the wire in the tests
// below: of the calls a client opens at once, the server holds the first
// heldStreams (read to the end, never answered) and resets every later one
// with code 9 without reading it, STOP_SENDING then RESET_STREAM, as the
// engine does past its 256 concurrent calls.
const (
	heldStreams    = 256
	refusedStreams = 44
	resetCode      = 9
)

// rawRefusingServer serves plain webtransport-go sessions, no tiogen code
// on the path, that treat the bidirectional streams of each session as
// refusedCalls says. resets counts the streams it reset.
func rawRefusingServer(t *testing.T, cert *devcert.Cert, resets *atomic.Int64) string {
	t.Helper()
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
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
		for held := 0; ; held++ {
			st, err := sess.AcceptStream(sess.Context())
			if err != nil {
				return
			}
			if held < heldStreams {
				go io.Copy(io.Discard, st)
				continue
			}
			st.CancelRead(resetCode)
			st.CancelWrite(resetCode)
			resets.Add(1)
		}
	})
	// As the engine's listener: room for twice the concurrent calls.
	tlsConf := http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{cert.TLS}})
	ln, err := (&quic.Transport{Conn: udp}).ListenEarly(tlsConf, &quic.Config{
		EnableDatagrams:                  true,
		EnableStreamResetPartialDelivery: true,
		MaxIncomingStreams:               2 * heldStreams,
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			go s.ServeQUICConn(c)
		}
	}()
	t.Cleanup(func() { s.Close(); ln.Close(); udp.Close() })
	return "https://" + udp.LocalAddr().String() + "/refuse"
}

// §10.1 in Chromium, with no tiogen code on the path (a raw page, a raw
// webtransport-go server): of 44 call streams a server resets with code 9
// while it holds 256 others, Chromium now and then never reports one reset
// to the page. That stream's writer fails with a NetworkError without a
// code ("The stream was aborted by the remote server") and its readable
// never settles, neither with the code nor otherwise, until the page gives
// up on it. The server did send the reset: a webtransport-go client
// opening the same streams sees all 44 codes. The runtime can then only say
// "code unknown" (the §10.1 browser scenario tolerates exactly this;
// docs/browsers.md). The check per round: 256 streams held (writer closed,
// readable silent), and each of the 44 reset streams either reports code 9
// on its readable or is Chromium's loss (readable silent, writer failed:
// without a code, or with the STOP_SENDING's code 9, which says nothing of
// the readable); nothing else. How many were lost is logged.
func TestSpec10_1_ChromiumSometimesNeverReportsAStreamReset(t *testing.T) {
	requireBrowser(t, chromium)
	cert, err := devcert.Mint(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var resets atomic.Int64
	url := rawRefusingServer(t, cert, &resets)
	const calls = heldStreams + refusedStreams

	// The control: a Go client sees every reset with its code.
	if got := goClientResetCodes(t, url, cert, calls); got != refusedStreams {
		t.Fatalf("a webtransport-go client saw %d of the %d resets with code %d", got, refusedStreams, resetCode)
	}
	resets.Store(0)

	const rounds, waitMs = 6, 3000
	var scenarios []scenario
	for range rounds {
		scenarios = append(scenarios, scenario{Name: "refused", URL: url, SHA256: pin(cert), Args: []any{calls, waitMs}, TimeoutMs: 30000})
	}
	out := runChromium(t, scenarios)
	lost := 0
	for i, raw := range out.Results {
		var counts map[string]int
		if err := json.Unmarshal(raw, &counts); err != nil {
			t.Fatalf("round %d: %s", i, raw)
		}
		t.Logf("round %d: %v", i, counts)
		withCode := 0
		for k, n := range counts {
			if strings.HasPrefix(k, "code 9, ") {
				withCode += n
			}
		}
		missing := counts["silent, w NetworkError"] + counts["silent, w code 9"]
		if counts["silent, closed"] != heldStreams || withCode+missing != refusedStreams {
			t.Errorf("round %d: the streams ended as %v; want %d \"silent, closed\" (held) and %d reset: \"code 9, …\", or \"silent, w NetworkError\" or \"silent, w code 9\" where Chromium lost the reset",
				i, counts, heldStreams, refusedStreams)
		}
		lost += missing
	}
	if got := resets.Load(); got != int64(len(scenarios)*refusedStreams) {
		t.Errorf("the server reset %d streams, want %d", got, len(scenarios)*refusedStreams)
	}
	t.Logf("Chromium never reported %d of the %d resets it received", lost, rounds*refusedStreams)
}

// goClientResetCodes opens n streams at once with webtransport-go, each
// writing a few bytes and FIN, and returns how many were reset with
// resetCode within a few seconds.
func goClientResetCodes(t *testing.T, url string, cert *devcert.Cert, n int) int {
	t.Helper()
	tr := &wt.Transport{
		// Pinned by hash, as the page pins it.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || sha256.Sum256(raw[0]) != cert.SHA256 {
				return errors.New("not the pinned certificate")
			}
			return nil
		}},
		QUICConfig: &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, sess, err := tr.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	defer sess.CloseWithError(0, "")
	var coded atomic.Int64
	var wg sync.WaitGroup
	for range n {
		st, err := sess.OpenStreamSync(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			st.Write([]byte{1, 2, 3})
			st.Close()
			st.SetReadDeadline(time.Now().Add(3 * time.Second))
			_, err := io.ReadAll(st)
			var se *wt.StreamError
			if errors.As(err, &se) && se.ErrorCode == resetCode && se.Remote {
				coded.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(coded.Load())
}
