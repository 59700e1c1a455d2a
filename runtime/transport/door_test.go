package transport_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

func waitReleased(t *testing.T, c transport.Conn) transport.CloseInfo {
	t.Helper()
	select {
	case <-c.Released():
		return c.CloseInfo()
	case <-time.After(5 * time.Second):
		t.Fatal("the session was never released")
		return transport.CloseInfo{}
	}
}

// §4: the door closes a refused peer WT_UNAUTHORIZED with its reason and a
// peer nobody decided WT_NO_ERROR "authorize failed", and runs the handler
// of an accepted one; each gives its slot back once released.
func TestSpec4_DoorDecides(t *testing.T) {
	ran := make(chan any, 1)
	d := transport.NewDoor(transport.DoorOptions{MaxSessions: 1}, func(c transport.Conn, _ *transport.Request, data any) { ran <- data })
	for _, tc := range []struct {
		authErr error
		want    transport.CloseInfo
	}{
		{transport.Refuse("expired"), transport.CloseInfo{Code: wire.CloseUnauthorized, Reason: "expired"}},
		{errors.New("backend down"), transport.CloseInfo{Code: wire.CloseNoError, Reason: transport.AuthorizeFailedReason}},
		{nil, transport.CloseInfo{Code: wire.CloseNoError}},
	} {
		if d.Enter("192.0.2.1:1") != transport.Admitted {
			t.Fatal("Enter refused a free door")
		}
		if d.Enter("192.0.2.1:1") == transport.Admitted {
			t.Fatal("Enter admitted past MaxSessions")
		}
		client, server, _ := loopback.Pair(loopback.Options{})
		d.Serve(server, &transport.Request{Path: "/x", RemoteAddr: "192.0.2.1:1"}, "data", tc.authErr)
		if got := waitReleased(t, server); got != tc.want {
			t.Fatalf("after %v: %+v, want %+v", tc.authErr, got, tc.want)
		}
		<-client.Done()
		if d.Sessions() != 0 {
			t.Fatalf("%d slots still taken", d.Sessions())
		}
	}
	if got := <-ran; got != "data" {
		t.Fatalf("the handler saw %v", got)
	}
}

// Authorize runs within AuthorizeTimeout: its context's deadline.
func TestDoorBoundsAuthorize(t *testing.T) {
	d := transport.NewDoor(transport.DoorOptions{AuthorizeTimeout: 20 * time.Millisecond,
		Authorize: func(ctx context.Context, _ *transport.Request) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}, nil)
	if _, err := d.Decide(context.Background(), &transport.Request{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Decide: %v, want the deadline", err)
	}
	if d.MaxSessions() != transport.DefaultMaxSessions {
		t.Fatalf("MaxSessions %d, want the default", d.MaxSessions())
	}
}

// Shutdown closes every open session with ShutdownReason, refuses new
// ones, and returns once their handlers returned.
func TestDoorShutdown(t *testing.T) {
	started := make(chan struct{})
	d := transport.NewDoor(transport.DoorOptions{}, func(c transport.Conn, _ *transport.Request, _ any) {
		close(started)
		<-c.Done()
	})
	_, server, _ := loopback.Pair(loopback.Options{})
	if d.Enter("192.0.2.1:1") != transport.Admitted {
		t.Fatal("Enter refused")
	}
	served := make(chan struct{})
	go func() { d.Serve(server, &transport.Request{RemoteAddr: "192.0.2.1:1"}, nil, nil); close(served) }()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := d.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	<-served
	if got := server.CloseInfo(); got != (transport.CloseInfo{Code: wire.CloseNoError, Reason: transport.ShutdownReason}) {
		t.Fatalf("%+v, want the shutdown close", got)
	}
	if d.Enter("192.0.2.1:1") == transport.Admitted {
		t.Fatal("Enter admitted after Shutdown")
	}
}
