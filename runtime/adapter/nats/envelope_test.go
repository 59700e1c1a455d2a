package nats

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/adapter/adaptertest"
	"github.com/transport-io/tiogen/runtime/adapter/nats/natstest"
	"github.com/transport-io/tiogen/runtime/wire"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	e := envelope{lane: wire.Unreliable, origin: 0x00400001, stream: 0xfeedface, seq: 1<<40 + 3, node: "host-a", room: "lobby\x00.*>",
		except: []string{"p/1", "", strings.Repeat("x", 300)}, frame: []byte{1, 2, 3}}
	b := appendEnvelope(nil, &e)
	if len(b) != envelopeLen(&e) {
		t.Fatalf("envelopeLen %d, encoded %d bytes", envelopeLen(&e), len(b))
	}
	got, err := parseEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.lane != e.lane || got.origin != e.origin || got.stream != e.stream || got.seq != e.seq || string(got.nodeB) != e.node || string(got.roomB) != e.room ||
		!slices.Equal(got.except, e.except) || !bytes.Equal(got.frame, e.frame) {
		t.Fatalf("round trip: %+v, want %+v", got, e)
	}
	for i := range len(b) - len(e.frame) {
		if _, err := parseEnvelope(b[:i]); err == nil {
			t.Fatalf("a truncated envelope of %d bytes parsed", i)
		}
	}
}

// Hostile bytes on a room subject are refused, never panic, never allocate
// beyond their own size, and what parses re-encodes to the same bytes.
func FuzzParseEnvelope(f *testing.F) {
	f.Add(appendEnvelope(nil, &envelope{lane: wire.Reliable, node: "n", room: "r", except: []string{"a"}, frame: []byte{9}}))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := parseEnvelope(b)
		if err != nil {
			return
		}
		e.node, e.room = string(e.nodeB), string(e.roomB)
		if again := appendEnvelope(nil, &e); !bytes.Equal(again, b) && len(again) > len(b) {
			t.Fatalf("re-encoding grew the envelope: %d bytes from %d", len(again), len(b))
		}
	})
}

func TestRoomSubjectsValidAndDistinct(t *testing.T) {
	rooms := []string{"a", "A", "a.b", "a b", "*", ">", "\x00", "é", strings.Repeat("r", 191), strings.Repeat("r", 192),
		strings.Repeat("r", 10000), strings.Repeat("r", 10001)}
	seen := map[string]string{}
	for _, r := range rooms {
		s := roomSubject("tio", r)
		if len(s) > 300 || strings.ContainsAny(s, " \t\r\n*>") || strings.Contains(s, "..") {
			t.Fatalf("room %q maps to the invalid or overlong subject %q", r, s)
		}
		if other, ok := seen[s]; ok {
			t.Fatalf("rooms %q and %q share subject %q", other, r, s)
		}
		seen[s] = r
	}
}

// Room names of any bytes and length cross NATS to the right room only.
func TestAnyRoomNameRoutes(t *testing.T) {
	srv := natstest.Start(t)
	nodes := newCluster(t, srv, Options{})(t, 2)
	defer nodes[0].Close()
	defer nodes[1].Close()
	rooms := []string{"a.b", "a", "*", ">", "with space", "\x00\xff", strings.Repeat("long", 5000)}
	for _, r := range rooms {
		if err := nodes[1].Join(r, "p"); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan adapter.Message, 64)
	defer nodes[1].Subscribe(func(m adapter.Message) { got <- m })()
	for _, r := range append(rooms, "not-joined", strings.Repeat("long", 5000)+"!") {
		if err := nodes[0].Broadcast(context.Background(), adapter.Message{Room: r, Lane: wire.Reliable, Frame: []byte(r)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rooms {
		m := <-got
		if m.Room != r || string(m.Frame) != r {
			t.Fatalf("broadcast to room %.20q arrived as room %.20q", r, m.Room)
		}
	}
	select {
	case m := <-got:
		t.Fatalf("a broadcast to room %.20q, not joined here, arrived", m.Room)
	case <-time.After(adaptertest.Quiet):
	}
}
