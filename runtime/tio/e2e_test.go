package tio

import (
	"context"
	"testing"

	"github.com/transport-io/tiogen/runtime/transport/loopback"
)

func TestEndToEndLanes(t *testing.T) {
	p := newPair(t, loopback.Options{}, ServerOptions{}, Options{})
	ctx := context.Background()

	resp, err := p.client.Call(ctx, evEcho, []byte(`{"text":"hi"}`))
	if err != nil || string(resp) != `{"text":"hi"}` {
		t.Fatalf("echo: %q %v", resp, err)
	}
	n := 0
	for elem, err := range p.client.Stream(ctx, evCount, []byte(`{"n":100}`)) {
		if err != nil {
			t.Fatal(err)
		}
		_ = elem
		n++
	}
	if n != 100 {
		t.Fatalf("stream gave %d elements, want 100", n)
	}
	heard := newRecorder()
	off := p.client.On(evHeard, func(b []byte) error { heard.add(string(b)); return nil })
	defer off()
	if err := p.client.Emit(evShout, []byte(`"hey"`)); err != nil {
		t.Fatal(err)
	}
	if got := heard.next(t); got != `"hey"` {
		t.Fatalf("heard %q", got)
	}
	if err := p.client.SendDatagram(evMove, []byte(`{"x":1,"y":2}`)); err != nil {
		t.Fatal(err)
	}
	if got := p.srv.got.next(t); got != "shout:\"hey\"" {
		t.Fatalf("server got %q", got)
	}
	if got := p.srv.got.next(t); got != `move:{"x":1,"y":2}` {
		t.Fatalf("server got %q", got)
	}
}
