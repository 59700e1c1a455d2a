// Command client dials the server at os.Args[1], pinning the certificate
// hash os.Args[2], saves a text and prints the revision.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"example.com/chatapp"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pin, err := webtransport.HashFromHex(os.Args[2])
	if err != nil {
		log.Fatal(err)
	}
	c, err := chatapp.Dial(ctx, os.Args[1], endpoint.DialOptions{CertHashes: [][32]byte{pin}})
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.Save(ctx, chatapp.SaveRequest{Doc: "readme", Text: "hello"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("saved revision %d\n", res.Revision)
	_ = c.Close(tio.NoError, "done")
}
