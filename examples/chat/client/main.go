// Command client is the chat example's client: it joins a room (the
// history call), prints what others say, sends the lines it reads from
// stdin, and saves with "/save TEXT".
//
//	go run ./examples/chat/client -url https://127.0.0.1:4433/chat -name ann
//
// On loopback the client pins the server's development certificate from
// the manifest the server serves (endpoint.DialOptions.DevCertificate); -hash pins
// a given SHA-256 instead, and a server elsewhere is verified against the
// system roots.
//
// -fallback dials the WebSocket mapping (wss:// at the same address) when
// WebTransport cannot be had; -websocket dials it alone. It has no calls
// (§3.3): no history and no /save there, and the first line sent joins the
// room. -reconnect dials a new session when one ends and joins the room
// again on it (§11: nothing is resumed).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	neturl "net/url"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/transport-io/tiogen/examples/chat"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
)

// errLeft ends the client once stdin is closed.
var errLeft = errors.New("stdin closed")

func main() {
	url := flag.String("url", "https://127.0.0.1:4433/chat", "the server's session `URL`")
	hash := flag.String("hash", "", "SHA-256 `hex` of the server's certificate to pin (default on loopback: fetched from the server's development manifest)")
	name := flag.String("name", "", "your `name` in the room (required)")
	room := flag.String("room", "lobby", "the `room` to join")
	withFallback := flag.Bool("fallback", false, "fall back to the WebSocket mapping when WebTransport cannot be had")
	webSocket := flag.Bool("websocket", false, "use the WebSocket mapping only")
	reconnect := flag.Bool("reconnect", false, "dial a new session when one ends (backoff 0.5 s to 30 s)")
	flag.Parse()
	if *name == "" {
		flag.Usage()
		os.Exit(2)
	}
	log.SetFlags(0)
	opts := endpoint.DialOptions{WebSocketFallback: *withFallback}
	switch {
	case *hash != "":
		pin, err := webtransport.HashFromHex(*hash)
		if err != nil {
			log.Fatalf("-hash: %v", err)
		}
		opts.CertHashes = [][32]byte{pin}
	case onLoopback(*url):
		opts.DevCertificate = true
	}
	lines := make(chan string)
	go func() {
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			lines <- strings.TrimSpace(in.Text())
		}
		close(lines)
	}()

	// The mapping of the session being set up: dial sets it, then Run
	// hands that session to the session function, on the same goroutine.
	var mapping transport.Mapping
	dial := func(ctx context.Context) (*chat.Client, error) {
		if *webSocket {
			wsURL, err := endpoint.WebSocketURL(*url)
			if err != nil {
				return nil, err
			}
			c, err := endpoint.DialWebSocket(ctx, wsURL, chat.Contract, opts)
			if err != nil {
				return nil, err
			}
			mapping = transport.WebSocket
			return chat.NewClient(c), nil
		}
		var rep endpoint.Report
		withReport := opts
		withReport.Report = &rep
		c, err := chat.Dial(ctx, *url, withReport)
		if err != nil {
			return nil, err
		}
		if rep.FellBack {
			log.Printf("WebTransport could not be had (%v); on the WebSocket mapping", rep.Why)
		}
		mapping = rep.Mapping
		return c, nil
	}
	session := func(ctx context.Context, c *chat.Client) error {
		return chatIn(ctx, c, mapping, *room, *name, lines)
	}
	var again endpoint.Reconnect
	if *reconnect {
		again = endpoint.Reconnect{Min: 500 * time.Millisecond, Max: 30 * time.Second, OnRetry: func(wait time.Duration, after error) {
			log.Printf("session ended (%v); reconnecting in %v", after, wait.Round(time.Millisecond))
		}}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := endpoint.Run(ctx, dial, session, again)
	var end *tio.SessionEnd
	switch {
	case err == nil, errors.Is(err, errLeft), errors.Is(err, context.Canceled):
	case errors.As(err, &end) && end.Normal() && end.ByPeer:
		// A WT_NO_ERROR close from the server is a normal end, not a
		// failure: say why and exit 0.
		if end.Reason == tio.ShutdownReason {
			fmt.Println("the server is shutting down; bye")
		} else {
			fmt.Printf("the server ended the session (%s); bye\n", end.Reason)
		}
	default:
		log.Fatal(err)
	}
}

// chatIn runs one session: it subscribes, joins the room, then sends what
// it reads until the session ends (nil: Run decides whether to reconnect)
// or stdin closes (errLeft).
func chatIn(ctx context.Context, c *chat.Client, mapping transport.Mapping, room, name string, lines <-chan string) error {
	c.OnMessage(func(m chat.Message) { fmt.Printf("%s: %s\n", m.Meta["from"], m.Body) })
	if mapping == transport.WebSocket {
		fmt.Println("(no history on the WebSocket mapping: your first line joins the room)")
	} else {
		for m, err := range c.History(ctx, chat.HistoryRequest{Room: room, Limit: 20}) {
			if err != nil {
				return err
			}
			fmt.Printf("(earlier) %s: %s\n", m.Meta["from"], m.Body)
		}
	}
	fmt.Printf("joined %s as %s: type to chat, /save TEXT to save, Ctrl-D to leave\n", room, name)
	for {
		var line string
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case line, ok = <-lines:
			if !ok {
				return errLeft
			}
		}
		switch {
		case line == "":
		case strings.HasPrefix(line, "/save "):
			res, err := c.Save(ctx, chat.SaveRequest{Doc: name, Text: strings.TrimPrefix(line, "/save ")})
			if err != nil {
				log.Printf("save: %v", err)
				continue
			}
			fmt.Printf("saved revision %d\n", res.Revision)
		default:
			msg := chat.Message{Room: room, Body: line, Meta: map[string]string{"from": name}, Mood: chat.MoodHappy}
			if err := c.EmitChat(msg); err != nil {
				return err
			}
		}
	}
}

// onLoopback reports whether the session URL's host is this machine, where
// a development server serves its certificate's pin.
func onLoopback(sessionURL string) bool {
	u, err := neturl.Parse(sessionURL)
	if err != nil {
		return false
	}
	ip := net.ParseIP(u.Hostname())
	return u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback())
}
