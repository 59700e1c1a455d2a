// Command client is the chat example's client: it joins a room (the
// history call), prints what others say, sends the lines it reads from
// stdin, and saves with "/save TEXT".
//
//	go run ./examples/chat/client -url https://127.0.0.1:4433/chat -hash HEX -name ann
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/transport-io/tiogen/examples/chat"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
)

func main() {
	url := flag.String("url", "https://127.0.0.1:4433/chat", "the server's session `URL`")
	hash := flag.String("hash", "", "SHA-256 `hex` of the server's development certificate, as the server prints it")
	name := flag.String("name", "", "your `name` in the room (required)")
	room := flag.String("room", "lobby", "the `room` to join")
	flag.Parse()
	if *name == "" {
		flag.Usage()
		os.Exit(2)
	}
	log.SetFlags(0)
	var opts []endpoint.DialOption
	if *hash != "" {
		pin, err := webtransport.HashFromHex(*hash)
		if err != nil {
			log.Fatalf("-hash: %v", err)
		}
		opts = append(opts, endpoint.WithCertHashes(pin))
	}
	ctx := context.Background()
	c, err := chat.Dial(ctx, *url, opts...)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(tio.NoError, "bye")

	defer c.OnMessage(func(m chat.Message) { fmt.Printf("%s: %s\n", m.Meta["from"], m.Body) })()
	for m, err := range c.History(ctx, chat.HistoryRequest{Room: *room, Limit: 20}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("(earlier) %s: %s\n", m.Meta["from"], m.Body)
	}
	fmt.Printf("joined %s as %s: type to chat, /save TEXT to save, Ctrl-D to leave\n", *room, *name)

	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		line := strings.TrimSpace(in.Text())
		switch {
		case line == "":
		case strings.HasPrefix(line, "/save "):
			res, err := c.Save(ctx, chat.SaveRequest{Doc: *name, Text: strings.TrimPrefix(line, "/save ")})
			if err != nil {
				log.Printf("save: %v", err)
				continue
			}
			fmt.Printf("saved revision %d\n", res.Revision)
		default:
			msg := chat.Message{Room: *room, Body: line, Meta: map[string]string{"from": *name}, Mood: chat.MoodHappy}
			if err := c.EmitChat(msg); err != nil {
				log.Fatal(err)
			}
		}
	}
}
