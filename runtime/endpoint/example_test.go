package endpoint_test

import (
	"context"
	"fmt"
	"time"

	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/wire"
)

// A server on both mappings with a development certificate and an
// Authorize that reads a token from the query; a client that pins the
// certificate from the server's manifest, calls, and closes. A client with
// a wrong token is refused WT_UNAUTHORIZED before it sees anything.
func Example() {
	contract := tio.MustContract("greet",
		tio.Event{Name: "hello", Lane: wire.Reliable, Kind: tio.Returns, Payload: wire.CodecJSON, Result: wire.CodecJSON},
	)
	hello, _ := contract.EventByName("hello")
	srv, err := tio.NewServer(contract, tio.ServerOptions{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	srv.HandleCall(hello.ID, func(_ context.Context, p *tio.Peer, _ []byte) ([]byte, error) {
		return []byte(`"hello, ` + p.Data().(string) + `"`), nil
	})

	cert, err := devcert.Mint(time.Now(), 0)
	if err != nil {
		panic(err)
	}
	l, err := endpoint.Listen(srv, endpoint.Options{
		Addr: "127.0.0.1:0",
		Path: "/greet",
		Dev:  cert,
		Authorize: func(_ context.Context, r *endpoint.Request) (any, error) {
			if r.Query.Get("token") != "s3cret" {
				return nil, endpoint.Refuse("bad-token")
			}
			return "ann", nil
		},
	})
	if err != nil {
		panic(err)
	}
	defer l.Shutdown(context.Background())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := endpoint.Dial(ctx, l.URL()+"?token=s3cret", contract, endpoint.DialOptions{DevCertificate: true})
	if err != nil {
		panic(err)
	}
	resp, err := c.Call(ctx, hello.ID, []byte(`{}`))
	fmt.Println(string(resp), err)
	_ = c.Close(tio.NoError, "bye") // returns once the server has the close

	_, err = endpoint.DialWebSocket(ctx, l.WebSocketURL()+"?token=wrong", contract, endpoint.DialOptions{DevCertificate: true})
	fmt.Println(wire.CodeOf(err))
	// Output:
	// "hello, ann" <nil>
	// WT_UNAUTHORIZED
}
