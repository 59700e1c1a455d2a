package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/transport-io/tiogen/cmd/tio-conformance/conformance"
	"github.com/transport-io/tiogen/internal/leakcheck"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/wire"
	"github.com/transport-io/tiogen/tests/internal/conformancetest"
)

// §3.2, §6.2, §6.3: echo returns its request over a real call stream.
func TestConformanceEchoReturnsRequest(t *testing.T) {
	leakcheck.Check(t, wait)
	cl := startServer(t, "").client(t)
	for _, s := range []string{"", "hello", "ünïcødé ✓", string(make([]byte, 70_000))} {
		req := text(s)
		resp, err := cl.Call(conformancetest.Context(t), conformancetest.Echo, req)
		if err != nil || !bytes.Equal(resp, req) {
			t.Fatalf("echo %.40q: %.60q, %v", s, resp, err)
		}
	}
}

// §6.4: fail answers CALL_ERROR WT_HANDLER_ERROR with the request's text;
// the session stays up.
func TestConformanceFailIsCallError(t *testing.T) {
	cl := startServer(t, "").client(t)
	_, err := cl.Call(conformancetest.Context(t), conformancetest.Fail, text("as asked"))
	if e := wantCode(t, err, wire.HandlerError); e.Message != "as asked" {
		t.Fatalf("message %q, want the request's text", e.Message)
	}
	if _, err := cl.Call(conformancetest.Context(t), conformancetest.Echo, text("still up")); err != nil {
		t.Fatalf("after a CALL_ERROR: %v", err)
	}
}

// §6.4: a request the server cannot decode is a per-call
// WT_VALIDATION_FAILED, not a session fault.
func TestConformanceInvalidRequestIsValidationFailed(t *testing.T) {
	cl := startServer(t, "").client(t)
	for _, req := range []string{`{"txt":"x"}`, `{"text":1}`, `[]`} {
		_, err := cl.Call(conformancetest.Context(t), conformancetest.Echo, []byte(req))
		wantCode(t, err, wire.ValidationFailed)
	}
	_, err := collect(conformancetest.Context(t), cl, conformancetest.Count, []byte(`{"n":1000001}`))
	wantCode(t, err, wire.ValidationFailed)
}

// §3.2, §6.3, §6.6: count yields {i:0}…{i:n-1} then closes, through the
// credit window (32, refilled by 16) many times over; zero elements is a
// complete sequence.
func TestSpec6_6_ConformanceCountThroughCreditWindow(t *testing.T) {
	leakcheck.Check(t, wait)
	cl := startServer(t, "").client(t)
	for _, n := range []int{0, 1, 32, 33, 100, 5000} {
		got, err := collect(conformancetest.Context(t), cl, conformancetest.Count, jsonOf(map[string]int{"n": n}))
		if err != nil || !slices.Equal(got, items(n)) {
			t.Fatalf("count %d: %d elements, %v", n, len(got), err)
		}
	}
}

// §6.4: countThenFail yields n elements, then CALL_ERROR WT_HANDLER_ERROR;
// the elements before it are delivered.
func TestSpec6_4_ConformanceCountThenFail(t *testing.T) {
	cl := startServer(t, "").client(t)
	for _, n := range []int{0, 5, 40} {
		got, err := collect(conformancetest.Context(t), cl, conformancetest.CountThenFail, jsonOf(map[string]int{"n": n}))
		wantCode(t, err, wire.HandlerError)
		if !slices.Equal(got, items(n)) {
			t.Fatalf("countThenFail %d: %v before the error", n, got)
		}
	}
}

// §8: hang answers nothing; cancelling the call resets it WT_ABORTED, and
// the session ending rejects a pending call WT_SESSION_CLOSED (§11).
func TestSpec8_ConformanceHangCancelledAndSessionEnd(t *testing.T) {
	leakcheck.Check(t, wait)
	srv := startServer(t, "")
	cl := srv.client(t)
	// hang does not answer within the caller's deadline, which cancels it
	// (§8: the stream is reset WT_ABORTED).
	ctx, cancel := context.WithTimeout(conformancetest.Context(t), 300*time.Millisecond)
	defer cancel()
	errc := make(chan error, 1)
	_, err := cl.Call(ctx, conformancetest.Hang, text("wait"))
	if e := wantCode(t, err, wire.Aborted); !errors.Is(e, context.DeadlineExceeded) {
		t.Fatalf("hang ended with %v, want its deadline", err)
	}
	if _, err := cl.Call(conformancetest.Context(t), conformancetest.Echo, text("up")); err != nil {
		t.Fatalf("after a cancelled call: %v", err)
	}

	other := srv.client(t)
	go func() {
		_, err := other.Call(conformancetest.Context(t), conformancetest.Hang, text("wait"))
		errc <- err
	}()
	// A call made before the close is pending or refused: either way it
	// reports the session's end.
	_ = other.Close(tio.NoError, "done")
	wantCode(t, <-errc, wire.SessionClosed)
}

// §5.3, §5.1: blob returns the same bytes, codec 0x02, any bytes at all,
// and a large payload within the call frames' 16 MiB cap.
func TestSpec5_1_ConformanceBlobSameBytes(t *testing.T) {
	cl := startServer(t, "").client(t)
	for _, n := range []int{1, 255, 64 << 10, 3 << 20} {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		resp, err := cl.Call(conformancetest.Context(t), conformancetest.Blob, b)
		if err != nil || !bytes.Equal(resp, b) {
			t.Fatalf("blob of %d bytes: %d bytes back, %v", n, len(resp), err)
		}
	}
}

// shout makes the server emit heard to the sender only (§6.1), on both
// mappings.
func TestConformanceShoutHeardBySenderOnly(t *testing.T) {
	for _, m := range mappings {
		t.Run(m.name, func(t *testing.T) {
			srv := startServer(t, "")
			a, err := m.dial(srv, t, conformance.Contract, "")
			if err != nil {
				t.Fatal(err)
			}
			b, err := m.dial(srv, t, conformance.Contract, "")
			if err != nil {
				t.Fatal(err)
			}
			heardA, heardB := listen(a, conformancetest.Heard), listen(b, conformancetest.Heard)
			if err := a.Emit(conformancetest.Shout, text("from a")); err != nil {
				t.Fatal(err)
			}
			heardA.want(t, string(text("from a")))
			// Had the server sent a's heard to b too, it would be queued
			// ahead of b's own: b's first heard must be its own.
			if err := b.Emit(conformancetest.Shout, text("from b")); err != nil {
				t.Fatal(err)
			}
			heardB.want(t, string(text("from b")))
		})
	}
}

// §6.5: enter and exit join and leave the named room, return it, and the
// JOIN and LEAVE frames keep the client's view of its rooms; say reaches
// every member of every room the sender is in, the sender included, and no
// one else.
func TestSpec6_5_ConformanceRoomsAndSay(t *testing.T) {
	leakcheck.Check(t, wait)
	srv := startServer(t, "")
	a, b, c, d := srv.client(t), srv.client(t), srv.client(t), srv.client(t)
	saidA, saidB, saidC, saidD := listen(a, conformancetest.Said), listen(b, conformancetest.Said), listen(c, conformancetest.Said), listen(d, conformancetest.Said)
	enter := func(cl *tio.Client, name string) {
		t.Helper()
		resp, err := cl.Call(conformancetest.Context(t), conformancetest.Enter, room(name))
		if err != nil || string(resp) != string(room(name)) {
			t.Fatalf("enter %s: %s, %v", name, resp, err)
		}
	}
	enter(a, "r1")
	enter(a, "r3")
	enter(b, "r1")
	enter(c, "r2")
	enter(d, "r3")

	if err := a.Emit(conformancetest.Say, text("hello")); err != nil {
		t.Fatal(err)
	}
	// a is in r1 and r3: it hears itself once per room.
	saidA.want(t, string(text("hello")))
	saidA.want(t, string(text("hello")))
	saidB.want(t, string(text("hello")))
	saidD.want(t, string(text("hello")))
	// c is in r2 alone; its first said is its own.
	if err := c.Emit(conformancetest.Say, text("c")); err != nil {
		t.Fatal(err)
	}
	saidC.want(t, string(text("c")))
	// The JOIN frames came before the said on the emit lane.
	if got := a.Rooms(); !slices.Equal(got, []string{"r1", "r3"}) {
		t.Fatalf("a's rooms %v", got)
	}

	resp, err := a.Call(conformancetest.Context(t), conformancetest.Exit, room("r3"))
	if err != nil || string(resp) != string(room("r3")) {
		t.Fatalf("exit: %s, %v", resp, err)
	}
	if err := a.Emit(conformancetest.Say, text("again")); err != nil {
		t.Fatal(err)
	}
	saidA.want(t, string(text("again")))
	saidB.want(t, string(text("again")))
	if got := a.Rooms(); !slices.Equal(got, []string{"r1"}) {
		t.Fatalf("a's rooms after exit %v", got)
	}
	// d left no room but a left r3: d's next said is its own.
	if err := d.Emit(conformancetest.Say, text("d")); err != nil {
		t.Fatal(err)
	}
	saidD.want(t, string(text("d")))
	_, err = a.Call(conformancetest.Context(t), conformancetest.Enter, room(""))
	wantCode(t, err, wire.ValidationFailed)
}

// §7: a move datagram the server's gate accepts comes straight back as a
// move datagram with the same payload, on both mappings (§3.3: a DATAGRAM
// frame on the WebSocket). Datagrams may be lost (§7.5), so the WebTransport
// case sends until one returns.
func TestSpec7_ConformanceMoveRoundTrip(t *testing.T) {
	for _, m := range mappings {
		t.Run(m.name, func(t *testing.T) {
			leakcheck.Check(t, wait)
			srv := startServer(t, "")
			cl, err := m.dial(srv, t, conformance.Contract, "")
			if err != nil {
				t.Fatal(err)
			}
			moves := listen(cl, conformancetest.Move)
			ctx := conformancetest.Context(t)
			for i := 0; ; i++ {
				p := jsonOf(map[string]float64{"x": float64(i), "y": 0.5})
				if err := cl.SendDatagram(conformancetest.Move, p); err != nil {
					t.Fatal(err)
				}
				select {
				case got := <-moves.ch:
					var pt struct{ X, Y float64 }
					if err := json.Unmarshal([]byte(got), &pt); err != nil || pt.Y != 0.5 || pt.X > float64(i) {
						t.Fatalf("move came back as %s", got)
					}
					return
				case <-ctx.Done():
					t.Fatal("no move came back")
				case <-time.After(100 * time.Millisecond):
				}
			}
		})
	}
}

// counters returns the caller's own counters (§9, §7.3, §5.4): an emit with
// an invalid payload counts as validationDropped and one for an event the
// server does not know as unknownDropped.
func TestConformanceStatsAreTheCallersCounters(t *testing.T) {
	srv := startServer(t, "")
	// This client knows one event more than the server: sending it is a
	// per-message WT_UNKNOWN_EVENT at the server, not a session fault
	// (§4.3).
	wider := tio.MustContract("conformance", append(conformance.Contract.Events(),
		tio.Event{Name: "ghost", Lane: wire.Reliable, From: tio.FromClient, Kind: tio.Emit, Payload: wire.CodecJSON})...)
	cl, err := srv.dialWT(t, wider, "")
	if err != nil {
		t.Fatal(err)
	}
	bystander := srv.client(t)
	heard := listen(cl, conformancetest.Heard)
	for _, step := range []struct {
		event   uint32
		payload string
	}{
		{conformancetest.Shout, `{"nope":1}`},
		{conformancetest.Shout, `not json`},
		{wire.EventID("ghost"), `{}`},
		{conformancetest.Shout, string(text("marker"))},
	} {
		if err := cl.Emit(step.event, []byte(step.payload)); err != nil {
			t.Fatal(err)
		}
	}
	// The marker's heard means the server read everything before it.
	heard.want(t, string(text("marker")))
	resp, err := cl.Call(conformancetest.Context(t), conformancetest.Counters, text(""))
	if err != nil {
		t.Fatal(err)
	}
	// The generated type reads the counters, int64 as decimal strings
	// (docs/contract-language.md), and validates them.
	var st conformance.Stats
	if err := json.Unmarshal(resp, &st); err != nil {
		t.Fatalf("counters %s: %v", resp, err)
	}
	if want := (conformance.Stats{UnknownDropped: 1, ValidationDropped: 2}); st != want {
		t.Fatalf("counters %s, want %+v", resp, want)
	}
	resp, err = bystander.Call(conformancetest.Context(t), conformancetest.Counters, text(""))
	if err != nil || string(resp) != `{"overflowDropped":"0","staleDropped":"0","staleReceived":"0","unknownDropped":"0","validationDropped":"0"}` {
		t.Fatalf("another session's counters %s, %v", resp, err)
	}
}

// §6.6, §8: count accepts n up to 1,000,000; the responder only runs as far
// as credit lets it, and breaking out of the sequence resets the stream
// WT_ABORTED (§8) with the session still up.
func TestSpec8_ConformanceCountMillionStoppedEarly(t *testing.T) {
	leakcheck.Check(t, wait)
	cl := startServer(t, "").client(t)
	got := 0
	for elem, err := range cl.Stream(conformancetest.Context(t), conformancetest.Count, []byte(`{"n":1000000}`)) {
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`{"i":%d}`, got); string(elem) != want {
			t.Fatalf("element %d is %s", got, elem)
		}
		if got++; got == 100 {
			break
		}
	}
	if _, err := cl.Call(conformancetest.Context(t), conformancetest.Echo, text("after")); err != nil {
		t.Fatalf("after breaking out of a stream: %v", err)
	}
}
