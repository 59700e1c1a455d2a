package tio_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

// A server and a client of one contract, over an in-memory transport: the
// client calls, the server answers; then the server shuts down, which the
// client reads as a normal end. Generated code does the same with typed
// payloads.
func Example() {
	contract := tio.MustContract("greet",
		tio.Event{Name: "hello", Lane: wire.Reliable, Kind: tio.Returns, Payload: wire.CodecJSON, Result: wire.CodecJSON},
	)
	hello, _ := contract.EventByName("hello")

	srv, err := tio.NewServer(contract, tio.ServerOptions{})
	if err != nil {
		panic(err)
	}
	srv.HandleCall(hello.ID, func(_ context.Context, _ *tio.Peer, req []byte) ([]byte, error) {
		return []byte(`"hello, ` + string(req[1:len(req)-1]) + `"`), nil
	})
	clientConn, serverConn, _ := loopback.Pair(loopback.Options{})
	go srv.Serve(serverConn, nil)

	c, err := tio.NewClient(context.Background(), clientConn, contract, tio.Options{})
	if err != nil {
		panic(err)
	}
	resp, err := c.Call(context.Background(), hello.ID, []byte(`"ann"`))
	fmt.Println(string(resp), err)

	_ = srv.Close()
	var end *tio.SessionEnd
	if err := c.Wait(); errors.As(err, &end) && end.Normal() {
		fmt.Println("the server ended the session:", end.Reason)
	}
	// Output:
	// "hello, ann" <nil>
	// the server ended the session: server shutting down
}

// Errors carry a WT_* code, what happened and what to do; errors.Is matches
// on the code.
func ExampleError() {
	err := tio.Errorf(tio.RoomNotJoined, "peer %s broadcast to room '%s' without being in it", "n1/7", "lobby")
	fmt.Println(err)
	fmt.Println(errors.Is(err, &tio.Error{Code: tio.RoomNotJoined}))
	// Output:
	// WT_ROOM_NOT_JOINED: peer n1/7 broadcast to room 'lobby' without being in it (Join the room first.)
	// true
}
