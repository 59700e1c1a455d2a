package browser

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
	"github.com/transport-io/tiogen/runtime/wire"
)

type closedResult struct {
	Ready       bool            `json:"ready"`
	CloseCode   *uint32         `json:"closeCode"`
	Reason      string          `json:"reason"`
	ReadyError  json.RawMessage `json:"readyError"`
	ClosedError json.RawMessage `json:"closedError"`
}

const mismatchReason = "event 'move' is 'unreliable' here and 'reliable' at the peer"

// §4, §4.3, §10.2 in Chromium: transport.closed resolves with the server's
// code and reason, for a refusal at the door (1007 with the application's
// reason) and for a contract mismatch found by the engine (1001 naming the
// event). This is the close path webtransport-go alone does not deliver
// (see runtime/transport/webtransport).
func TestSpec4_Spec10_2_ChromiumReceivesServerCloseCodes(t *testing.T) {
	requireBrowser(t, chromium)
	cert, err := devcert.Mint(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	contract, err := tio.NewContract("browser",
		tio.Event{Name: "move", Lane: wire.Unreliable, Kind: tio.Emit, Payload: wire.CodecJSON},
		tio.Event{Name: "say", Lane: wire.Reliable, Kind: tio.Emit, Payload: wire.CodecJSON},
	)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := tio.NewServer(contract, tio.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	srv, err := webtransport.Listen(webtransport.Options{
		Addr: "127.0.0.1:0",
		Path: "/tio",
		Dev:  cert,
		Authorize: func(_ context.Context, r *transport.Request) (any, error) {
			if r.Query.Get("token") != "good" {
				return nil, transport.Refuse("bad-token")
			}
			return nil, nil
		},
		Handler: func(c transport.Conn, _ *transport.Request, data any) {
			_ = engine.Serve(c, data)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	// The page declares 'move' reliable; the server's contract says
	// unreliable. Several of each, since the failure this guards against
	// was a race.
	pageEvents := []any{[][2]string{{"move", "reliable"}, {"say", "reliable"}}}
	var scenarios []scenario
	for range 10 {
		scenarios = append(scenarios,
			scenario{Name: "closed", URL: srv.URL() + "?token=bad", SHA256: pin(cert)},
			scenario{Name: "mismatch", URL: srv.URL() + "?token=good", SHA256: pin(cert), Args: pageEvents})
	}
	out := runChromium(t, scenarios)
	for i, raw := range out.Results {
		var r closedResult
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		wantCode, wantReason := wire.CloseUnauthorized, "bad-token"
		if i%2 == 1 {
			wantCode, wantReason = wire.CloseContractMismatch, mismatchReason
		}
		if !r.Ready || r.CloseCode == nil || *r.CloseCode != wantCode || r.Reason != wantReason {
			t.Errorf("scenario %d: %s, want ready then closed {closeCode: %d, reason: %q}\nlogs: %v", i, raw, wantCode, wantReason, out.Logs)
		}
	}
}

type lanesResult struct {
	MaxDatagramSize int    `json:"maxDatagramSize"`
	Echo            string `json:"echo"`
	Datagram        string `json:"datagram"`
	ResetByServer   *struct {
		StreamErrorCode *int `json:"streamErrorCode"`
	} `json:"resetByServer"`
	Closed struct {
		CloseCode *uint32 `json:"closeCode"`
		Reason    string  `json:"reason"`
	} `json:"closed"`
}

// The transport's lanes with Chromium as the peer: a call stream echoed, a
// datagram echoed, reset code 9 both ways (§8: one byte, mapped onto
// WebTransport stream error codes), and the page's close code reaching the
// server (§10.2).
func TestSpec8_Spec10_2_ChromiumLanesResetsAndClientClose(t *testing.T) {
	requireBrowser(t, chromium)
	cert, err := devcert.Mint(time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		abortCode *transport.StreamError
		info      transport.CloseInfo
	}
	report := make(chan seen, 1)
	srv, err := webtransport.Listen(webtransport.Options{
		Addr: "127.0.0.1:0",
		Path: "/tio",
		Dev:  cert,
		Handler: func(c transport.Conn, r *transport.Request, _ any) {
			var s seen
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			go func() { // echo datagrams
				for {
					b, err := c.ReceiveDatagram(ctx)
					if err != nil {
						return
					}
					c.SendDatagram(b)
				}
			}()
			if call, err := c.AcceptCall(ctx); err == nil {
				b, _ := io.ReadAll(call)
				call.Write(b)
				call.Close()
			}
			if call, err := c.AcceptCall(ctx); err == nil {
				b := make([]byte, 1)
				io.ReadFull(call, b)
				call.Write([]byte("k")) // the page aborts once it read this
				_, err := io.ReadAll(call)
				errors.As(err, &s.abortCode)
				call.Reset(wire.ResetTooManyStreams)
			}
			<-c.Done()
			s.info = c.CloseInfo()
			report <- s
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	out := runChromium(t, []scenario{{Name: "lanes", URL: srv.URL(), SHA256: pin(cert)}})
	var r lanesResult
	if err := json.Unmarshal(out.Results[0], &r); err != nil {
		t.Fatal(err)
	}
	if r.Echo != "hello from chromium" {
		t.Errorf("echo = %q", r.Echo)
	}
	if r.Datagram != "ping" {
		t.Errorf("datagram echo = %q", r.Datagram)
	}
	if r.MaxDatagramSize <= 0 {
		t.Errorf("maxDatagramSize = %d", r.MaxDatagramSize)
	}
	if r.ResetByServer == nil || r.ResetByServer.StreamErrorCode == nil || *r.ResetByServer.StreamErrorCode != int(wire.ResetTooManyStreams) {
		t.Errorf("the page saw the server's reset as %s, want streamErrorCode 9", out.Results[0])
	}
	if r.Closed.CloseCode == nil || *r.Closed.CloseCode != wire.CloseProtocolError {
		t.Errorf("page's own closed = %+v", r.Closed)
	}

	select {
	case s := <-report:
		if s.abortCode == nil || s.abortCode.Code != wire.ResetTooManyStreams || !s.abortCode.Remote {
			t.Errorf("the server saw the page's abort as %+v, want remote code 9", s.abortCode)
		}
		want := transport.CloseInfo{Code: wire.CloseProtocolError, Reason: "page closes: zero-length frame", Remote: true}
		if s.info != want {
			t.Errorf("server CloseInfo = %+v, want %+v", s.info, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not finish")
	}
}
