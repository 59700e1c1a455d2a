// Command server is the chat example's server: it serves contract chat
// (examples/chat/chat.tio) over WebTransport and the WebSocket mapping on
// 127.0.0.1 with a development certificate, serves the web client
// (examples/chat/web) on plain HTTP, and prints how to connect.
//
//	go run ./examples/chat/server
//	go run ./examples/chat/server -addr 127.0.0.1:4434 -http 127.0.0.1:8081 -nats nats://127.0.0.1:4222
//	go run ./examples/chat/server -metrics 127.0.0.1:9090   # Prometheus at /metrics
//
// The page's server relays what a page cannot reach on the HTTPS side,
// whose development certificate a browser trusts for WebTransport only:
// the certificate's pin (connectDev reads it from the page's origin) and
// the WebSocket mapping over plain ws:// (endpoint.Listener.ServeDevPage).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/transport-io/tiogen/examples/chat"
	"github.com/transport-io/tiogen/examples/chat/web"
	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/adapter/nats"
	"github.com/transport-io/tiogen/runtime/devcert"
	"github.com/transport-io/tiogen/runtime/endpoint"
	"github.com/transport-io/tiogen/runtime/metrics"
	"github.com/transport-io/tiogen/runtime/tio"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4433", "UDP and TCP `address` to serve on (loopback: the certificate is for development)")
	pageAddr := flag.String("http", "127.0.0.1:8080", "`address` to serve the web client on, over plain HTTP (loopback)")
	certDir := flag.String("cert-dir", "", "`directory` keeping the development certificate (default: the user cache directory)")
	natsURL := flag.String("nats", "", "NATS server `URL`: run as one of several hosts sharing their rooms (default: a single host)")
	metricsAddr := flag.String("metrics", "", "TCP `address` serving Prometheus metrics at /metrics (default: none)")
	flag.Parse()

	cert, err := devcert.Ensure(devcert.Options{Dir: *certDir})
	if err != nil {
		log.Fatal(err)
	}
	opts := endpoint.Options{Addr: *addr, Path: "/chat", Dev: cert}
	rooms := newRooms()
	// Per-session limits (calls, handshake deadline) are the server's: the
	// spec's values unless set in tio.ServerOptions; the listener follows.
	var sopts tio.ServerOptions
	if *natsURL != "" {
		// Each host keeps its own history; broadcasts reach every host's
		// members of the room.
		bus, err := nats.New(context.Background(), nats.Options{URL: *natsURL})
		if err != nil {
			log.Fatal(err)
		}
		defer bus.Close()
		sopts.Adapter = bus
		sopts.OnAdapterEvent = func(e adapter.Event) { log.Printf("adapter: %s %s %v", e.Kind, e.Room, e.Err) }
		fmt.Printf("joined NATS as node %s, host ordinal %d\n", bus.NodeID(), bus.HostOrdinal())
	}
	if *metricsAddr != "" {
		m, ms, at, err := metrics.Serve(*metricsAddr)
		if err != nil {
			log.Fatal(err)
		}
		defer ms.Close()
		sopts.Metrics = m
		fmt.Printf("metrics on http://%s/metrics\n", at)
	}
	srv, err := chat.NewServer(rooms, sopts)
	if err != nil {
		log.Fatal(err)
	}
	rooms.srv = srv
	l, err := endpoint.Listen(srv.Runtime(), opts)
	if err != nil {
		log.Fatal(err)
	}
	page, err := l.ServeDevPage(*pageAddr, web.Handler())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("chat server on %s\n", l.URL())
	fmt.Printf("websocket mapping on %s\n", l.WebSocketURL())
	fmt.Printf("certificate sha-256 %s (development certificate, valid until %s)\n", cert.Hex(), cert.NotAfter().UTC().Format(time.RFC3339))
	fmt.Printf("connect: go run ./examples/chat/client -url %s -name ann\n", l.URL())
	fmt.Printf("web client on %s (open it in two browsers; ?name=ann&room=lobby, ?transport=websocket forces the WebSocket mapping)\n", page.URL())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	<-ctx.Done()
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = page.Shutdown(shutdown)
	_ = l.Shutdown(shutdown)
	_ = srv.Close()
}

// historyLimit bounds what a room remembers.
const historyLimit = 100

// rooms implements chat.Handler: a peer joins a room by asking for its
// history, then chats in it; saves count revisions per document. On the
// WebSocket mapping, which has no calls (§3.3), a peer joins a room by
// chatting in it.
type rooms struct {
	chat.UnimplementedHandler
	srv *chat.Server

	mu        sync.Mutex
	history   map[string][]chat.Message
	revisions map[string]int32
}

func newRooms() *rooms {
	return &rooms{history: map[string][]chat.Message{}, revisions: map[string]int32{}}
}

func (r *rooms) History(ctx context.Context, peer chat.Peer, req chat.HistoryRequest, send func(chat.Message) error) error {
	if err := peer.Join(req.Room); err != nil {
		return err
	}
	r.mu.Lock()
	past := r.history[req.Room]
	if n := int(req.Limit); n >= 0 && n < len(past) {
		past = past[len(past)-n:]
	}
	past = append([]chat.Message(nil), past...)
	r.mu.Unlock()
	for _, m := range past {
		if err := send(m); err != nil {
			return err
		}
	}
	return nil
}

func (r *rooms) Chat(ctx context.Context, peer chat.Peer, m chat.Message) error {
	if err := peer.Join(m.Room); err != nil { // joining a room it is in does nothing
		return err
	}
	now := time.Now().UnixMilli()
	m.SentAt = &now
	r.mu.Lock()
	h := append(r.history[m.Room], m)
	if len(h) > historyLimit {
		h = h[len(h)-historyLimit:]
	}
	r.history[m.Room] = h
	r.mu.Unlock()
	return r.srv.Room(m.Room).EmitMessage(ctx, m, peer)
}

func (r *rooms) Save(_ context.Context, _ chat.Peer, req chat.SaveRequest) (chat.SaveResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.revisions[req.Doc]++
	return chat.SaveResult{Revision: r.revisions[req.Doc]}, nil
}

func (r *rooms) Cursor(ctx context.Context, peer chat.Peer, c chat.Cursor) error {
	for _, room := range peer.Rooms() {
		// Best effort, like the lane: a member whose path cannot carry
		// the datagram is skipped.
		_ = r.srv.Room(room).EmitCursor(ctx, c, peer)
	}
	return nil
}

func (r *rooms) Ping(_ context.Context, peer chat.Peer, s string) error { return peer.EmitPing(s) }
