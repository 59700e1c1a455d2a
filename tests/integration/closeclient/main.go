// Command closeclient is the short-lived client of the integration suite's
// close test: it dials the conformance contract over one mapping, closes
// with the reason it was given right after the dial returned, and exits as
// soon as Close returns.
//
//	closeclient -mapping webtransport|websocket -url URL -pin HEX -reason TEXT
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/transport-io/tiogen/cmd/tio-conformance/conformance"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
)

func main() {
	mapping := flag.String("mapping", "webtransport", "webtransport or websocket")
	url := flag.String("url", "", "the session URL (https:// or wss://)")
	pin := flag.String("pin", "", "SHA-256 hex of the server's certificate")
	reason := flag.String("reason", "", "the close reason")
	flag.Parse()
	if err := run(*mapping, *url, *pin, *reason); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(mapping, url, pin, reason string) error {
	hash, err := webtransport.HashFromHex(pin)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dial := endpoint.Dial
	if mapping == "websocket" {
		dial = endpoint.DialWebSocket
	}
	cl, err := dial(ctx, url, conformance.Contract, endpoint.DialOptions{CertHashes: [][32]byte{hash}})
	if err != nil {
		return err
	}
	return cl.Close(tio.NoError, reason)
}
