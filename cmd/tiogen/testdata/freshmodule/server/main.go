// Command server serves the generated chat contract on 127.0.0.1 with a
// development certificate, prints its URL and certificate hash, and stops
// when stdin closes.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"example.com/chatapp"
	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/tio"
)

type handler struct{ chatapp.UnimplementedHandler }

func (handler) Save(_ context.Context, _ chatapp.Peer, req chatapp.SaveRequest) (chatapp.SaveResult, error) {
	return chatapp.SaveResult{Revision: int32(len(req.Text))}, nil
}

func main() {
	cert, err := devcert.Ensure(devcert.Options{Dir: os.Args[1]})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := chatapp.NewServer(handler{}, tio.ServerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	l, err := endpoint.Listen(srv.Runtime(), endpoint.Options{Addr: "127.0.0.1:0", Path: "/chat", Dev: cert})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s %s\n", l.URL(), cert.Hex())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = l.Close()
	_ = srv.Close()
}
