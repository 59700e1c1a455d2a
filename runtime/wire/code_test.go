package wire

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

var allCodes = []Code{
	NoError, Aborted, TooManyStreams, ProtocolVersionMismatch, ContractMismatch, HandshakeTimeout,
	PeerTooSlow, ProtocolError, IdleTimeout, ReliabilityRefused, Unauthorized,
	NoSupport, LaneUnavailable, DatagramTooLarge, RoomNotJoined, SessionClosed, HandshakeFailed,
	UDPUnreachable, CertExpired, DevOnly, PortInUse,
	PayloadTooLarge, UnsupportedCodec, UnknownEvent, ValidationFailed, HandlerError,
}

func TestSpec10_2_SessionCloseCodes(t *testing.T) {
	want := map[Code]uint32{
		NoError: 0, ProtocolVersionMismatch: 1000, ContractMismatch: 1001, HandshakeTimeout: 1002,
		PeerTooSlow: 1003, ProtocolError: 1004, IdleTimeout: 1005, ReliabilityRefused: 1006, Unauthorized: 1007,
	}
	for _, c := range allCodes {
		n, ok := c.SessionCode()
		w, isSession := want[c]
		if ok != isSession || n != w {
			t.Errorf("%s.SessionCode() = %d, %v", c, n, ok)
		}
		if isSession && SessionCodeName(w) != c {
			t.Errorf("SessionCodeName(%d) = %q, want %s", w, SessionCodeName(w), c)
		}
	}
	for _, n := range []uint32{1, 9, 999, 1008, 4000, 0xffffffff} {
		if name := SessionCodeName(n); name != "" {
			t.Errorf("SessionCodeName(%d) = %q, want none", n, name)
		}
	}
}

func TestSpec10_1_ResetCodesAreOneByteAndOnlyThree(t *testing.T) {
	want := map[Code]uint8{NoError: 0, Aborted: 1, TooManyStreams: 9}
	for _, c := range allCodes {
		n, ok := c.ResetCode()
		w, isReset := want[c]
		if ok != isReset || n != w {
			t.Errorf("%s.ResetCode() = %d, %v", c, n, ok)
		}
	}
	for v := range 256 {
		name := ResetCodeName(uint8(v))
		if _, defined := want[name]; (v == 0 || v == 1 || v == 9) != defined || (name == "") == defined {
			t.Errorf("ResetCodeName(%d) = %q", v, name)
		}
	}
}

func TestSpec10_EveryCodeHasARemedy(t *testing.T) {
	seen := map[Code]bool{}
	for _, c := range allCodes {
		if !strings.HasPrefix(string(c), "WT_") || seen[c] {
			t.Errorf("bad or repeated code %q", c)
		}
		seen[c] = true
		r := c.Remedy()
		if r == "" || !strings.HasSuffix(r, ".") || strings.Count(r, ". ") > 0 {
			t.Errorf("%s: remedy %q is not one sentence", c, r)
		}
	}
	if Code("WT_APP_SPECIFIC").Remedy() != "" {
		t.Error("an unknown code has a remedy")
	}
}

func TestSpec3_3_WebSocketCloseCodeMapping(t *testing.T) {
	for _, c := range []struct {
		session uint32
		ws      uint16
	}{{0, 1000}, {1000, 4000}, {1004, 4004}, {1007, 4007}, {1, 3001}, {1999, 4999}, {2000, 1011}, {0xffffffff, 1011}} {
		if got := WebSocketCloseCode(c.session); got != c.ws {
			t.Errorf("WebSocketCloseCode(%d) = %d, want %d", c.session, got, c.ws)
		}
	}
}

// §3.3: close codes outside the table are the socket's own (1006 a lost
// connection, 1001 a page going away), never §10.2 codes.
func TestSpec3_3_SocketOwnCloseCodesAreNotSessionCodes(t *testing.T) {
	for _, ws := range []uint16{0, 999, 1001, 1002, 1005, 1006, 1011, 1015, 2999, 5000, 65535} {
		if code, ok := SessionCodeFromWebSocket(ws); ok {
			t.Errorf("SessionCodeFromWebSocket(%d) = %d, true", ws, code)
		}
	}
	for ws, want := range map[uint16]uint32{1000: 0, 4006: 1006, 3000: 0, 4999: 1999} {
		if code, ok := SessionCodeFromWebSocket(ws); !ok || code != want {
			t.Errorf("SessionCodeFromWebSocket(%d) = %d, %v; want %d", ws, code, ok, want)
		}
	}
}

func TestErrorIsMatchesOnCode(t *testing.T) {
	cause := io.ErrUnexpectedEOF
	err := fmt.Errorf("call: %w", Errorf(SessionClosed, "session ended: %w", cause))
	if !errors.Is(err, &Error{Code: SessionClosed}) {
		t.Error("errors.Is does not match on the code")
	}
	if errors.Is(err, &Error{Code: Aborted}) {
		t.Error("errors.Is matches another code")
	}
	if !errors.Is(err, cause) {
		t.Error("the cause is not reachable with errors.Is")
	}
	var e *Error
	if !errors.As(err, &e) || e.Remedy != SessionClosed.Remedy() || e.Message != "session ended: unexpected EOF" {
		t.Errorf("errors.As: %+v", e)
	}
	if CodeOf(err) != SessionClosed || CodeOf(cause) != "" || CodeOf(nil) != "" {
		t.Error("CodeOf")
	}
}

func TestErrorTextIsReadable(t *testing.T) {
	e := Errorf(RoomNotJoined, "broadcast to room %q", "lobby")
	if got := e.Error(); got != `WT_ROOM_NOT_JOINED: broadcast to room "lobby" (Join the room first.)` {
		t.Fatalf("got %s", got)
	}
	if got := (&Error{Code: "WT_APP"}).Error(); got != "WT_APP" {
		t.Fatalf("got %s", got)
	}
	if got := (&Error{Code: NoSupport, Err: io.EOF}).Error(); got != "WT_NO_SUPPORT: EOF" {
		t.Fatalf("got %s", got)
	}
}

// COMMON rule and §4.3: query strings carry tokens and never reach an error text.
func TestErrorTextNeverPrintsQueryStrings(t *testing.T) {
	for _, msg := range []string{
		"dial https://example.com:4433/tio?token=s3cret failed",
		`Get "wss://h/p?a=1&token=s3cret#frag": EOF`,
		"two https://a/?token=s3cret and http://b/x?token=s3cret",
	} {
		got := Errorf(HandshakeFailed, "%s", msg).Error()
		if strings.Contains(got, "s3cret") || !strings.Contains(got, "://") {
			t.Errorf("%s", got)
		}
		got = (&Error{Code: HandshakeFailed, Err: errors.New(msg)}).Error()
		if strings.Contains(got, "s3cret") {
			t.Errorf("from the cause: %s", got)
		}
	}
	if got := Errorf(ValidationFailed, "field 'q' must match ?x").Error(); !strings.Contains(got, "?x") {
		t.Errorf("a question mark outside a URL was cut: %s", got)
	}
}

// Log lines quote request lines, whose paths carry queries too.
func TestRedactQueries(t *testing.T) {
	for in, want := range map[string]string{
		`bogus greeting "GET /conformance?token=s"`: `bogus greeting "GET /conformance?…"`,
		"GET /a?x=1&y=2 HTTP/1.1":                   "GET /a?… HTTP/1.1",
		"wss://h:1/p?t=1 and /q?u=2":                "wss://h:1/p?… and /q?…",
		"what? no query, must match ?x":             "what? no query, must match ?x",
		"trailing /p?":                              "trailing /p?",
		"no mark":                                   "no mark",
	} {
		if got := RedactQueries(in); got != want {
			t.Errorf("RedactQueries(%q) = %q, want %q", in, got, want)
		}
	}
}
