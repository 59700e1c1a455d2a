package tio

import (
	"bytes"
	"testing"

	"github.com/transport-io/tiogen/runtime/wire"
)

// TestSpec9_CoalescedEmitsCountAsFrames: emits that share a queue entry
// still count one frame each against the 256-frame bound, leave the queue
// in order, and decode as the frames they were.
func TestSpec9_CoalescedEmitsCountAsFrames(t *testing.T) {
	q := newEmitQueue(4, 0)
	payloads := [][]byte{[]byte(`"a"`), []byte(`"bb"`), []byte(`"ccc"`), []byte(`"dddd"`)}
	for _, p := range payloads {
		if res, err := q.pushEmit(wire.CodecJSON, evPing, p); err != nil || res != pushed {
			t.Fatalf("pushEmit: %v, %v", res, err)
		}
	}
	if res, err := q.pushEmit(wire.CodecJSON, evPing, []byte(`"e"`)); err != nil || res != pushFull {
		t.Fatalf("fifth frame on a queue of 4: %v, %v; want pushFull", res, err)
	}
	if d := q.depth(); d != 4 {
		t.Fatalf("depth %d, want 4 frames", d)
	}
	got, _ := q.take(nil)
	if len(got) != 1 || got[0].frames() != 4 {
		t.Fatalf("took %d entries, want 1 holding 4 frames", len(got))
	}
	r := wire.NewReader(bytes.NewReader(got[0].b))
	for i, p := range payloads {
		f, err := r.Next()
		if err != nil || f.Type != wire.FrameEmit || f.EventID != evPing || !bytes.Equal(f.Payload, p) {
			t.Fatalf("frame %d: %+v, %v; want EMIT %s", i, f, err, p)
		}
	}
	releaseAll(got)
	if d := q.depth(); d != 0 {
		t.Fatalf("depth %d after take, want 0", d)
	}
}

// TestCoalescingStopsAtSharedFramesAndItsBound: a frame pushed whole (a
// room broadcast's, shared by every member) is never appended to, so
// order holds around it; one entry holds at most coalesceAt bytes; a
// frame that cannot be encoded leaves the queue as it was.
func TestCoalescingStopsAtSharedFramesAndItsBound(t *testing.T) {
	q := newEmitQueue(EmitQueueFrames, 0)
	push := func(p []byte) {
		t.Helper()
		if res, err := q.pushEmit(wire.CodecJSON, evPing, p); err != nil || res != pushed {
			t.Fatalf("pushEmit: %v, %v", res, err)
		}
	}
	push([]byte(`1`))
	shared, _ := wire.AppendFrame(nil, wire.FrameEmit, wire.CodecJSON, evPing, []byte(`2`))
	if q.push(&frame{b: shared}) != pushed {
		t.Fatal("push of a shared frame")
	}
	push([]byte(`3`))
	if _, err := q.pushEmit(wire.CodecJSON, evPing, nil); err == nil {
		t.Fatal("an empty payload was queued (§5.1)")
	}
	got, _ := q.take(nil)
	if len(got) != 3 || got[0].frames() != 1 || got[1].frames() != 1 || got[2].frames() != 1 || q.depth() != 0 {
		t.Fatalf("took %d entries, want 3 of one frame each", len(got))
	}
	releaseAll(got)

	big := jsonPayload(4000)
	for range 20 {
		push(big)
	}
	got, _ = q.take(nil)
	frames := 0
	for _, f := range got {
		if len(f.b) > coalesceAt {
			t.Fatalf("an entry of %d bytes, over %d", len(f.b), coalesceAt)
		}
		frames += f.frames()
	}
	if frames != 20 || len(got) < 2 {
		t.Fatalf("%d frames in %d entries, want 20 in several", frames, len(got))
	}
	releaseAll(got)
}
