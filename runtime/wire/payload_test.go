package wire

import (
	"math"
	"strings"
	"testing"
)

func TestSpec6_6_CreditPayload(t *testing.T) {
	if got := string(AppendCredit(nil, 16)); got != `{"credit":16}` {
		t.Fatalf("got %s", got)
	}
	for in, want := range map[string]int{
		`{"credit":16}`:             16,
		`{"credit":1}`:              1,
		`{ "credit" : 32 }`:         32,
		`{"credit":16.0}`:           16,
		`{"credit":1e2}`:            100,
		`{"other":true,"credit":5}`: 5,
		`{"credit":2147483647}`:     math.MaxInt32,
		`{"credit":99999999999999}`: math.MaxInt32,
		`{"credit":1e400}`:          math.MaxInt32,
	} {
		if n, ok := ParseCredit([]byte(in)); !ok || n != want {
			t.Errorf("%s: got %d, %v; want %d", in, n, ok, want)
		}
	}
}

func TestSpec6_6_NonPositiveOrNonNumericCreditIsIgnored(t *testing.T) {
	for _, in := range []string{
		`{"credit":0}`, `{"credit":-16}`, `{"credit":-0}`, `{"credit":0.5}`, `{"credit":16.5}`,
		`{"credit":1e-400}`, `{"credit":"16"}`, `{"credit":null}`, `{"credit":true}`, `{"credit":[16]}`,
		`{"credit":{}}`, `{}`, `[]`, `16`, `not json`, ``, `{"credit":016}`, `{"credit":16}x`,
		`{"credit":1,"credit":2}`,
	} {
		if n, ok := ParseCredit([]byte(in)); ok {
			t.Errorf("%s: accepted as %d", in, n)
		}
	}
}

func TestSpec6_6_ParseCreditFastPathDoesNotAllocate(t *testing.T) {
	b := AppendCredit(nil, 16)
	if n := testing.AllocsPerRun(100, func() {
		if n, ok := ParseCredit(b); !ok || n != 16 {
			t.Fatal(n, ok)
		}
	}); n != 0 {
		t.Fatalf("%v allocs", n)
	}
}

func TestSpec6_4_CallErrorPayload(t *testing.T) {
	e := CallError{Code: ValidationFailed, Message: "field 'body' must be a string"}
	b := AppendCallError(nil, e)
	if string(b) != `{"code":"WT_VALIDATION_FAILED","message":"field 'body' must be a string"}` {
		t.Fatalf("got %s", b)
	}
	got, err := ParseCallError(b)
	if err != nil || got != e {
		t.Fatalf("got %+v, %v", got, err)
	}
	// Unknown codes are opaque; unknown fields are tolerated.
	got, err = ParseCallError([]byte(`{"message":"m","code":"WT_APP_SPECIFIC","trace":1}`))
	if err != nil || got.Code != "WT_APP_SPECIFIC" || got.Message != "m" {
		t.Fatalf("got %+v, %v", got, err)
	}
	for _, in := range []string{
		`{"code":"WT_X"}`, `{"message":"m"}`, `{"code":"OOPS","message":"m"}`, `{"code":1,"message":"m"}`,
		`{"code":"WT_X","message":null}`, `{"code":"WT_X","message":"m"} 1`, `[]`, `x`,
		`{"code":"WT_X","code":"WT_Y","message":"m"}`,
	} {
		if _, err := ParseCallError([]byte(in)); CodeOf(err) != ProtocolError {
			t.Errorf("%s: got %v", in, err)
		}
	}
}

func TestSpec6_5_RoomPayload(t *testing.T) {
	b := AppendRoom(nil, "lobby")
	if string(b) != `{"room":"lobby"}` {
		t.Fatalf("got %s", b)
	}
	if room, err := ParseRoom(b); err != nil || room != "lobby" {
		t.Fatalf("got %q, %v", room, err)
	}
	if room, err := ParseRoom(AppendRoom(nil, "a \"b\"\n")); err != nil || room != "a \"b\"\n" {
		t.Fatalf("got %q, %v", room, err)
	}
	for _, in := range []string{`{"room":""}`, `{}`, `{"room":1}`, `{"room":null}`, `{"rooms":"x"}`, `"lobby"`, ``} {
		if _, err := ParseRoom([]byte(in)); CodeOf(err) != ProtocolError {
			t.Errorf("%s: got %v", in, err)
		}
	}
}

// §5.3: a control payload escaping a surrogate that pairs with none is
// refused wherever the escape stands, as the TypeScript runtime refuses
// it: encoding/json would read it as U+FFFD, JSON.parse keeps it, and two
// runtimes would read two rooms. A pair, and an escaped backslash before
// "ud800", are text.
func TestSpec5_3_UnpairedSurrogateEscapesAreRefused(t *testing.T) {
	for _, in := range []string{`{"room":"\ud800"}`, `{"room":"a\udc00"}`, `{"room":"\ude00\ud83d"}`, `{"room":"\ud800\u0041"}`, `{"room":"x","\ud800":1}`, `{"room":"x","y":["\udbff"]}`} {
		if _, err := ParseRoom([]byte(in)); CodeOf(err) != ProtocolError || !strings.Contains(err.Error(), "unpaired surrogate") {
			t.Errorf("room %s: got %v", in, err)
		}
	}
	if _, err := ParseCallError([]byte(`{"code":"WT_X","message":"\udfff"}`)); CodeOf(err) != ProtocolError {
		t.Errorf("call error: got %v", err)
	}
	if n, ok := ParseCredit([]byte(`{"credit":1,"\ud800\ue000":1}`)); ok {
		t.Errorf("credit %d read beside an unpaired surrogate", n)
	}
	for in, want := range map[string]string{`{"room":"\ud83d\ude00"}`: "😀", `{"room":"\\ud800"}`: `\ud800`, `{"room":"\uFFFD"}`: "\ufffd"} {
		if room, err := ParseRoom([]byte(in)); err != nil || room != want {
			t.Errorf("room %s: got %q, %v; want %q", in, room, err, want)
		}
	}
}
