package tio

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

// stalledPair is a session whose server has stopped reading the client's
// emit stream (a Read already waiting may still take one window), and
// whose stream window is a few frames: the client's writer blocks for good
// in a Write of a larger batch.
func stalledPair(t *testing.T) *pairT {
	t.Helper()
	p := newPair(t, loopback.Options{StreamWindow: 64}, ServerOptions{}, Options{})
	p.link.StallReader(loopback.Server, true)
	return p
}

// fillEmitQueue emits pings until the client's queue holds more than
// EmitLowWater frames behind a blocked writer, never letting it reach the
// §9 bound. The writer takes the queue whenever it is not in a Write, so a
// fill it took is repeated: its Write of that many frames exceeds the
// window and blocks for good.
func fillEmitQueue(t *testing.T, p *pairT) {
	t.Helper()
	for range 10 {
		for p.client.Stats().EmitQueueDepth <= EmitLowWater {
			if err := p.client.Emit(evPing, []byte(`1`)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(20 * time.Millisecond)
		if d := p.client.Stats().EmitQueueDepth; d > EmitLowWater {
			return
		}
	}
	t.Fatal("the writer kept taking the queue behind a stalled reader")
}

func TestSpec9_WaitEmitBlocksAboveLowWaterUntilTheWriterDrains(t *testing.T) {
	p := stalledPair(t)
	if err := p.client.WaitEmit(context.Background()); err != nil {
		t.Fatalf("WaitEmit on an empty queue: %v", err)
	}
	fillEmitQueue(t, p)

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	wantCode(t, p.client.WaitEmit(cancelled), wire.Aborted)

	waited := make(chan error, 1)
	go func() { waited <- p.client.WaitEmit(context.Background()) }()
	select {
	case err := <-waited:
		t.Fatalf("WaitEmit returned %v with %d frames queued", err, p.client.Stats().EmitQueueDepth)
	case <-time.After(50 * time.Millisecond):
	}
	p.link.StallReader(loopback.Server, false)
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("WaitEmit after the reader resumed: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitEmit did not return once the writer drained the queue")
	}
	// The queue never overflowed: the session is up and every ping arrives.
	if err := p.client.Err(); err != nil {
		t.Fatalf("session ended: %v", err)
	}
}

func TestSpec9_WaitEmitFailsWhenTheSessionEnds(t *testing.T) {
	p := stalledPair(t)
	fillEmitQueue(t, p)
	waited := make(chan error, 1)
	go func() { waited <- p.client.WaitEmit(context.Background()) }()
	_ = p.peer.Close(NoError, "bye")
	select {
	case err := <-waited:
		wantCode(t, err, wire.SessionClosed)
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("error %T, want *Error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitEmit outlived its session")
	}
	wantCode(t, p.client.WaitEmit(context.Background()), wire.SessionClosed)
}
