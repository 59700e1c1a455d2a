package browser

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The TypeScript runtime (runtime/ts/src, bundled by esbuild as an
// application would) in each browser against cmd/tio-conformance built
// from this tree: one scenario file, runtime/scenarios.ts, one browser
// launch per test. Where the browsers genuinely differ, the check says so
// per browser: Firefox mostly reports stream errors without a code, sends
// a cancelled reader's STOP_SENDING only with the session's close, and its
// close capsule reaches webtransport-go only some of the time (it sends
// CONNECTION_CLOSE right behind it).

func TestSpec2_Spec3_Spec4_Spec6_Spec7_Spec8_Spec10_RuntimeInChromium(t *testing.T) {
	runRuntimeScenarios(t, chromium)
}

func TestSpec2_Spec3_Spec4_Spec6_Spec7_Spec8_Spec10_RuntimeInFirefox(t *testing.T) {
	runRuntimeScenarios(t, firefox)
}

// pageError is how the page reports a rejection (describe in scenarios.ts).
type pageError struct {
	TransportError bool    `json:"transportError"`
	Refused        bool    `json:"refused"`
	Name           string  `json:"name"`
	Code           string  `json:"code"`
	Number         *int    `json:"number"`
	Message        string  `json:"message"`
	Remedy         string  `json:"remedy"`
	Reason         *string `json:"reason"`
}

// settled is a promise's outcome on the page: ok or error.
type settled[T any] struct {
	OK    *T         `json:"ok"`
	Error *pageError `json:"error"`
}

type text struct {
	Text string `json:"text"`
}

type roomName struct {
	Room string `json:"room"`
}

// wantError fails unless e is a TransportError with the code.
func wantError(t *testing.T, what string, e *pageError, code string) {
	t.Helper()
	switch {
	case e == nil:
		t.Errorf("%s: resolved, want a rejection %s", what, code)
	case !e.TransportError || e.Code != code:
		t.Errorf("%s: rejected with %+v, want a TransportError %s", what, *e, code)
	case e.Remedy == "":
		t.Errorf("%s: %s without a remedy", what, code)
	}
}

// runtimeCase is one scenario of scenarios.ts and its check.
type runtimeCase struct {
	title string // the subtest: the clause and the scenario
	scenario
	check func(t *testing.T, raw json.RawMessage)
}

func decode(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
}

// hangWaitMs bounds how long the hang scenario keeps its session open for
// the server to see the cancellation: Chromium's arrives at once; Firefox's
// comes only with the close, so waiting longer there shows nothing more.
func hangWaitMs(b browser) int {
	if b == firefox {
		return 1000
	}
	return 10000
}

// closeTimes is how many closes the page sends in each browser: enough
// that Firefox's frequent loss of the capsule (a fifth to a half of them
// on this host) cannot hide a close path that never works.
func closeTimes(b browser) int {
	if b == firefox {
		return 24
	}
	return 12
}

func runRuntimeScenarios(t *testing.T, b browser) {
	requireBrowser(t, b)
	devDir := t.TempDir()
	srv := startConformance(t, "--dev", "--dev-dir", devDir)
	page := bundlePage(t, filepath.Join("runtime", "scenarios.ts"), map[string]http.Handler{"/logged": srv.loggedHandler()})
	const token = "open-sesame"
	guarded := startConformance(t, "--dev", "--dev-dir", devDir, "--authorize-token", token)
	wsOnly := startConformance(t, "--ws-only")
	// A UDP port held open that never answers: the WebTransport handshake
	// to it can only time out.
	dead, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	deadURL := "https://" + dead.LocalAddr().String() + "/conformance"
	url, sha := srv.URL, srv.pin(t)
	tag := func(s string) string { return s + " from " + b.name }

	cases := []runtimeCase{
		{title: "§3.2 §6.2 §6.3 echo", scenario: scenario{Name: "echo", Args: []any{tag("hello")}}, check: func(t *testing.T, raw json.RawMessage) {
			var r struct {
				Before, Status, Transport string
				FallbackReason            *string
				Result                    settled[text]
			}
			decode(t, raw, &r)
			if r.Before != "idle" || r.Status != "connected" || r.Transport != "webtransport" || r.FallbackReason != nil {
				t.Errorf("snapshot before connect %q, after: status %q transport %q fallbackReason %v; want idle, connected, webtransport, null", r.Before, r.Status, r.Transport, r.FallbackReason)
			}
			if r.Result.OK == nil || r.Result.OK.Text != tag("hello") {
				t.Errorf("echo = %s", raw)
			}
		}},
		{title: "§6.4 fail", scenario: scenario{Name: "fail", Args: []any{tag("failed on purpose")}}, check: func(t *testing.T, raw json.RawMessage) {
			var r struct{ Result, After settled[text] }
			decode(t, raw, &r)
			wantError(t, "fail", r.Result.Error, "WT_HANDLER_ERROR")
			if e := r.Result.Error; e != nil && e.Message != tag("failed on purpose") {
				t.Errorf("fail's message = %q, want the server's %q", e.Message, tag("failed on purpose"))
			}
			if r.After.OK == nil {
				t.Errorf("a call after the CALL_ERROR: %s (the session must stay up)", raw)
			}
		}},
		{title: "§6.6 count 1000 under credit", scenario: scenario{Name: "count", Args: []any{1000}}, check: func(t *testing.T, raw json.RawMessage) {
			var r struct {
				Received int
				InOrder  bool
				Error    *pageError
			}
			decode(t, raw, &r)
			if r.Received != 1000 || !r.InOrder || r.Error != nil {
				t.Errorf("count 1000: %s", raw)
			}
		}},
		{title: "§6.4 countThenFail", scenario: scenario{Name: "countThenFail", Args: []any{5}}, check: func(t *testing.T, raw json.RawMessage) {
			var r struct {
				Items []int
				Error *pageError
			}
			decode(t, raw, &r)
			if !reflect.DeepEqual(r.Items, []int{0, 1, 2, 3, 4}) {
				t.Errorf("items = %v, want 0…4 before the error", r.Items)
			}
			wantError(t, "countThenFail", r.Error, "WT_HANDLER_ERROR")
			if want := "countThenFail failed as asked after 5 items"; r.Error != nil && r.Error.Message != want {
				t.Errorf("message = %q, want %q", r.Error.Message, want)
			}
		}},
		{title: "§8 hang aborted by a signal", scenario: scenario{Name: "hang", Args: []any{tag("hang"), hangWaitMs(b)}}, check: func(t *testing.T, raw json.RawMessage) {
			var r struct {
				Result    settled[text]
				SettledMs float64
				After     settled[text]
				Logged    bool
			}
			decode(t, raw, &r)
			wantError(t, "the aborted hang", r.Result.Error, "WT_ABORTED")
			if r.SettledMs > 1000 {
				t.Errorf("the aborted call settled %.0f ms after abort(), want at once", r.SettledMs)
			}
			if r.After.OK == nil {
				t.Errorf("a call after the abort: %s (the session must stay up)", raw)
			}
			line := srv.logLine("hang cancelled", 5*time.Second, "text="+quoteIfNeeded(tag("hang")))
			if line == "" {
				t.Fatalf("the server never logged the cancellation of %q; log:\n%s", tag("hang"), srv.logs)
			}
			switch b {
			case chromium:
				// The page resets its send side and stops reading with
				// WT_ABORTED (§8): the server's handler is cancelled by the
				// STOP_SENDING while the session is open.
				if !r.Logged || !strings.Contains(line, "stopped reading") {
					t.Errorf("Chromium: the server logged %q (while the session was open: %v), want the page's STOP_SENDING before the session ends", line, r.Logged)
				}
			case firefox:
				// Firefox sends the STOP_SENDING of a cancelled reader only
				// with the session's close (a raw page's reader.cancel()
				// too), so the server's handler runs until then; it must
				// still be cancelled, by the stop or by the session's end.
				if !strings.Contains(line, "stopped reading") && !strings.Contains(line, "context canceled") {
					t.Errorf("Firefox: the server logged %q, want the stop or the session's end", line)
				}
				t.Logf("Firefox: the server saw the cancellation while the session was open: %v", r.Logged)
			}
			t.Logf("server: %s", line)
		}},
		{title: "§10.1 the call streams past 256 are reset WT_TOO_MANY_STREAMS", scenario: scenario{Name: "tooManyStreams", Args: []any{300}, TimeoutMs: 40000}, check: func(t *testing.T, raw json.RawMessage) {
			var r struct {
				Waited             bool
				Refusals           map[string]int
				PendingBeforeAbort int
				Aborted            int
				After              settled[text]
				Attempts           int
				RetryMs            float64
			}
			decode(t, raw, &r)
			if !r.Waited || r.PendingBeforeAbort != 256 || r.Aborted != 256 {
				t.Errorf("300 concurrent hangs: %d refused in time %v, %d pending before the abort, %d aborted; want 44, 256, 256: %s", 300-r.PendingBeforeAbort, r.Waited, r.PendingBeforeAbort, r.Aborted, raw)
			}
			// The server resets the excess streams with code 9 (§10.1).
			// Chromium reports the code on the stream's readable side (a
			// write it stopped may fail with a codeless NetworkError first,
			// and the runtime then waits for the readable's code), except
			// that now and then it never reports one of the 44 resets: that
			// stream's writer fails without a code and its readable never
			// settles. This is Chromium's, reproduced with a raw page against
			// a raw webtransport-go server whose resets a Go client all sees
			// (TestSpec10_1_ChromiumSometimesNeverReportsAStreamReset,
			// docs/browsers.md); the runtime then says "code unknown" rather
			// than invent the 9. So in Chromium the check tolerates exactly
			// that: every refused call rejects with one of the two answers,
			// and at least one with the code, so the mapping of a delivered
			// 9 is checked in the browser on every run (the Node tests pin
			// it exactly). How many lose it is not Chromium's constant (0 to
			// 8 of 44 here, and in the raw test up to 40 of 264 in one run),
			// so no larger share is required. Firefox mostly reports a reset with no
			// code (a TypeError), which the runtime names as a reset with an
			// unknown code, and now and then the code.
			tooMany := "WT_TOO_MANY_STREAMS: 'hang': over 256 calls"
			unknown := "WT_PROTOCOL_ERROR: 'hang': reset, code ?"
			t.Logf("the 44 refused calls rejected as %v", r.Refusals)
			switch b {
			case chromium:
				if r.Refusals[tooMany]+r.Refusals[unknown] != 44 || r.Refusals[tooMany] == 0 {
					t.Errorf("Chromium: the refused calls rejected as %v, want 44 of %q or %q (Chromium's lost resets), at least one with the code", r.Refusals, tooMany, unknown)
				}
			case firefox:
				if r.Refusals[tooMany]+r.Refusals[unknown] != 44 {
					t.Errorf("Firefox: the refused calls rejected as %v, want 44 of %q or %q", r.Refusals, tooMany, unknown)
				}
			}
			// Once the 256 are aborted, a call succeeds again in Chromium.
			// Firefox sends the cancelled readers' STOP_SENDING only with the
			// session's close (see §8 above; a raw page does the same), so
			// the server still holds the 256 and refuses the next calls
			// until then; the session stays up there too.
			switch {
			case r.After.OK != nil:
			case b == chromium:
				t.Errorf("a call after the aborts: %s, want it answered (the session stays up)", raw)
			case r.After.Error == nil || r.After.Error.Code == "WT_SESSION_CLOSED":
				t.Errorf("Firefox: a call after the aborts: %s, want the session up", raw)
			default:
				t.Logf("Firefox: calls after the aborts were still refused for %.0f ms (%d attempts), as expected: %s", r.RetryMs, r.Attempts, r.After.Error.Message)
			}
		}},
		{title: "§5 blob 1 MiB", scenario: scenario{Name: "blob", Args: []any{1 << 20}}, check: func(t *testing.T, raw json.RawMessage) {
			var r struct {
				IsBytes         bool
				Length          int
				FirstDifference int
			}
			decode(t, raw, &r)
			if !r.IsBytes || r.Length != 1<<20 || r.FirstDifference != -1 {
				t.Errorf("blob round trip: %s", raw)
			}
		}},
		{title: "§6.1 shout heard", scenario: scenario{Name: "shoutHeard", Args: []any{tag("shout")}}, check: func(t *testing.T, raw json.RawMessage) {
			var r struct{ Result settled[text] }
			decode(t, raw, &r)
			if r.Result.OK == nil || r.Result.OK.Text != tag("shout") {
				t.Errorf("heard: %s", raw)
			}
		}},
		{title: "§5 §9 shout bursts written from the engine's reused buffer", scenario: scenario{Name: "shoutBursts", Args: []any{2000, 400}}, check: func(t *testing.T, raw json.RawMessage) {
			var r struct{ Count, FirstDifference int }
			decode(t, raw, &r)
			if r.Count != 2000 || r.FirstDifference != -1 {
				t.Errorf("heard of 2,000 shouts: %s, want every one, in order, as shouted", raw)
			}
		}},
		{title: "§7 move datagrams", scenario: scenario{Name: "move"}, check: func(t *testing.T, raw json.RawMessage) {
			var r struct {
				Sent int
				Got  []struct{ X, Y float64 }
			}
			decode(t, raw, &r)
			if len(r.Got) == 0 {
				t.Fatalf("no move came back after %d sent: %s", r.Sent, raw)
			}
			// The server echoes each accepted datagram: every value is one
			// the page sent, the newest first to arrive or later (§7.3).
			for _, p := range r.Got {
				k := -2 - p.Y
				if p.X != 1.5 || k < 0 || k >= float64(r.Sent) || k != float64(int(k)) {
					t.Errorf("move echoed %+v, which the page never sent: %s", p, raw)
				}
			}
		}},
		{title: "§6.5 enter say said exit rooms", scenario: scenario{Name: "rooms", Args: []any{"lobby-" + b.name, tag("said")}}, check: func(t *testing.T, raw json.RawMessage) {
			var r struct {
				InitialRooms    []string
				Entered         settled[roomName]
				RoomsAfterJoin  []string
				Stable, Frozen  bool
				Said            settled[text]
				Exited          settled[roomName]
				RoomsAfterLeave []string
				IdentityChanged bool
			}
			decode(t, raw, &r)
			room := "lobby-" + b.name
			if len(r.InitialRooms) != 0 || r.Entered.OK == nil || r.Entered.OK.Room != room {
				t.Errorf("enter: %s", raw)
			}
			if !reflect.DeepEqual(r.RoomsAfterJoin, []string{room}) {
				t.Errorf("rooms after JOIN = %v, want [%s]: %s", r.RoomsAfterJoin, room, raw)
			}
			if !r.Stable || !r.Frozen {
				t.Errorf("getSnapshot: same object while unchanged %v, frozen %v; want both", r.Stable, r.Frozen)
			}
			if r.Said.OK == nil || r.Said.OK.Text != tag("said") {
				t.Errorf("said: %s", raw)
			}
			if r.Exited.OK == nil || r.RoomsAfterLeave == nil || len(r.RoomsAfterLeave) != 0 || !r.IdentityChanged {
				t.Errorf("exit: rooms after LEAVE %v (a new snapshot: %v): %s", r.RoomsAfterLeave, r.IdentityChanged, raw)
			}
		}},
		{title: "§4 §10.2 refused 1007", scenario: scenario{Name: "refused", URL: guarded.URL + "?token=wrong", SHA256: guarded.pin(t)}, check: func(t *testing.T, raw json.RawMessage) {
			var r struct {
				Result  settled[struct{}]
				Status  string
				Refused *struct{ Reason string }
			}
			decode(t, raw, &r)
			e := r.Result.Error
			wantError(t, "connect without the token", e, "WT_UNAUTHORIZED")
			if e == nil || !e.Refused || e.Reason == nil || *e.Reason != "bad-token" || e.Number == nil || *e.Number != 1007 {
				t.Errorf("connect: %s, want a RefusedError {reason: 'bad-token'}, number 1007", raw)
			}
			if r.Status != "closed" || r.Refused == nil || r.Refused.Reason != "bad-token" {
				t.Errorf("snapshot after the refusal: status %q refused %+v", r.Status, r.Refused)
			}
		}},
		{title: "§4.3 §10.2 contract mismatch 1001", scenario: scenario{Name: "mismatch", Args: []any{"move"}}, check: func(t *testing.T, raw json.RawMessage) {
			var r struct {
				Result settled[struct{}]
				Status string
			}
			decode(t, raw, &r)
			e := r.Result.Error
			wantError(t, "connect with 'move' reliable", e, "WT_CONTRACT_MISMATCH")
			if e == nil || e.Number == nil || *e.Number != 1001 {
				t.Fatalf("connect: %s, want number 1001", raw)
			}
			// Both sides compare the tables (§4.3); whichever closes first,
			// the reason names the event and both declarations.
			server := "event 'move' is 'unreliable' here and 'reliable' at the peer"
			client := "event 'move' is 'reliable' here and 'unreliable' at the peer"
			if !strings.Contains(e.Message, server) && !strings.Contains(e.Message, client) {
				t.Errorf("mismatch message %q does not name the event as §4.3 says", e.Message)
			}
			if r.Status != "closed" {
				t.Errorf("status after the mismatch = %q", r.Status)
			}
		}},
		{title: "§2 §3.3 fallback to WebSocket", scenario: scenario{Name: "fallback", URL: deadURL, Args: []any{wsOnly.WS, 1500, tag("over websocket")}, TimeoutMs: 20000}, check: func(t *testing.T, raw json.RawMessage) {
			var r struct {
				ConnectResult  settled[struct{}]
				ConnectMs      float64
				Status         string
				Transport      string
				FallbackReason *string
				Call           settled[text]
				Heard          settled[text]
			}
			decode(t, raw, &r)
			if r.ConnectResult.Error != nil || r.Status != "connected" || r.Transport != "websocket" {
				t.Fatalf("withFallback: %s, want connected over websocket", raw)
			}
			if r.FallbackReason == nil || !strings.Contains(*r.FallbackReason, "WT_HANDSHAKE_") {
				t.Errorf("fallbackReason = %v, want why WebTransport failed (WT_HANDSHAKE_TIMEOUT or WT_HANDSHAKE_FAILED)", r.FallbackReason)
			}
			if r.ConnectMs > 1500+2000+2000 {
				t.Errorf("fallback took %.0f ms: the connect deadline (1500 ms) and the §10.3 probe (2000 ms) bound it", r.ConnectMs)
			}
			wantError(t, "a call over the WebSocket mapping", r.Call.Error, "WT_LANE_UNAVAILABLE")
			if r.Heard.OK == nil || r.Heard.OK.Text != tag("over websocket") {
				t.Errorf("shout/heard over the fallback: %s", raw)
			}
			t.Logf("fallback after %.0f ms: %s", r.ConnectMs, *r.FallbackReason)
		}},
	}
	// The page's closes (§10.2), each a session of its own with a code and
	// a reason the server must log as received.
	type pageClose struct{ code, reason string }
	var closes []pageClose
	for i := range closeTimes(b) {
		code, codeName := 0, "WT_NO_ERROR"
		if i%2 == 1 {
			code, codeName = 1004, "WT_PROTOCOL_ERROR"
		}
		reason := fmt.Sprintf("%s closes %d", b.name, i)
		closes = append(closes, pageClose{codeName, reason})
		cases = append(cases, runtimeCase{title: fmt.Sprintf("§10.2 close %d from the page", i), scenario: scenario{Name: "close", Args: []any{code, reason}}, check: func(t *testing.T, raw json.RawMessage) {
			var r struct {
				Status string
				After  settled[text]
			}
			decode(t, raw, &r)
			wantError(t, "a call after close()", r.After.Error, "WT_SESSION_CLOSED")
			if r.Status != "closed" {
				t.Errorf("status after close() = %q", r.Status)
			}
		}})
	}

	scenarios := make([]scenario, len(cases))
	for i, c := range cases {
		scenarios[i] = c.scenario
		if scenarios[i].URL == "" {
			scenarios[i].URL = url
		}
		if scenarios[i].SHA256 == nil {
			scenarios[i].SHA256 = sha
		}
	}
	out := runIn(t, b, page, scenarios, 5*time.Minute)
	for i, c := range cases {
		t.Run(c.title, func(t *testing.T) {
			c.check(t, out.Results[i])
			if t.Failed() {
				t.Logf("page log: %v", out.Logs)
			}
		})
	}

	t.Run("§10.2 the page's close codes at the server", func(t *testing.T) {
		exact := 0
		// One deadline for all: a lost capsule (Firefox) never shows up.
		deadline := time.Now().Add(3 * time.Second)
		for _, c := range closes {
			line := srv.logLine("session ended", max(0, time.Until(deadline)), "message="+quoteIfNeeded("session closed by the peer: "+c.reason))
			switch {
			case line == "":
				if b == chromium {
					t.Errorf("the server never logged the page's close {%s, %q}", c.code, c.reason)
				}
			case !strings.Contains(line, "code="+c.code+" "):
				t.Errorf("the server logged the page's close %q as %q, want code %s", c.reason, line, c.code)
			default:
				exact++
			}
		}
		switch b {
		case chromium:
			// Chromium delivers the close capsule every time (10/10).
			if exact != len(closes) {
				t.Errorf("%d of %d closes reached the server with their code and reason, want all", exact, len(closes))
			}
		case firefox:
			// Firefox follows the capsule 2.7 ms later with CONNECTION_CLOSE,
			// and webtransport-go then sometimes loses the capsule (a raw
			// page's transport.close arrived 10 of 14 times on a quiet host,
			// about half under load): such a session ends as lost (§11),
			// never with another code. Of 24 closes at least one must
			// arrive, so a close path that never delivers fails here.
			// A lost session is logged WT_NO_ERROR with a message that
			// starts "the connection was lost" (§11: no code arrived).
			lost := strings.Count(srv.logs.String(), `code=WT_NO_ERROR message="the connection was lost`)
			if exact == 0 || exact+lost < len(closes) {
				t.Errorf("%d of %d closes arrived exact and %d sessions ended lost; want at least one exact and the rest lost", exact, len(closes), lost)
			}
		}
		t.Logf("%s: %d of %d page closes reached the server with their code and reason", b.display, exact, len(closes))
		if t.Failed() {
			t.Logf("server log:\n%s", srv.logs)
		}
	})
}

// quoteIfNeeded renders a value as slog's text handler does for the
// strings used here: quoted when it has a space or a quote.
func quoteIfNeeded(s string) string {
	if strings.ContainsAny(s, " \"=") {
		return strconv.Quote(s)
	}
	return s
}
