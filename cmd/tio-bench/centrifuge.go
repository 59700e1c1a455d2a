package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/centrifugal/centrifuge"
	cfclient "github.com/centrifugal/centrifuge-go"
)

// centrifugeServer is a centrifuge node with its in-memory broker behind
// its WebSocket handler on 127.0.0.1: every connection is subscribed to
// broadcastRoom server-side, RPCs are echoed, and async messages are handed
// to onMessage.
type centrifugeServer struct {
	node *centrifuge.Node
	hs   *http.Server
	url  string
}

func startCentrifuge(onMessage func([]byte)) (*centrifugeServer, error) {
	node, err := centrifuge.New(centrifuge.Config{}) // logs nothing by default
	if err != nil {
		return nil, err
	}
	node.OnConnecting(func(context.Context, centrifuge.ConnectEvent) (centrifuge.ConnectReply, error) {
		return centrifuge.ConnectReply{
			Credentials:   &centrifuge.Credentials{UserID: "bench"},
			Subscriptions: map[string]centrifuge.SubscribeOptions{broadcastRoom: {}},
		}, nil
	})
	node.OnConnect(func(c *centrifuge.Client) {
		c.OnRPC(func(e centrifuge.RPCEvent, cb centrifuge.RPCCallback) { cb(centrifuge.RPCReply{Data: e.Data}, nil) })
		c.OnMessage(func(e centrifuge.MessageEvent) {
			if onMessage != nil {
				onMessage(e.Data)
			}
		})
	})
	if err := node.Run(); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/connection/websocket", centrifuge.NewWebsocketHandler(node, centrifuge.WebsocketConfig{}))
	addr, hs, err := serveHTTP(mux)
	if err != nil {
		_ = node.Shutdown(context.Background())
		return nil, err
	}
	return &centrifugeServer{node: node, hs: hs, url: "ws://" + addr + "/connection/websocket"}, nil
}

func (s *centrifugeServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.node.Shutdown(ctx)
	_ = s.hs.Close()
}

func centrifugeTarget() (*fanoutTarget, error) {
	s, err := startCentrifuge(nil)
	if err != nil {
		return nil, err
	}
	return &fanoutTarget{
		hello:  childHello{URL: s.url},
		joined: func() int { return s.node.Hub().NumSubscribers(broadcastRoom) },
		broadcast: func(b []byte) error {
			_, err := s.node.Publish(broadcastRoom, b)
			return err
		},
		close: s.close,
	}, nil
}

// lastDrop is the last reason the server gave for dropping a connection
// that then reconnected.
var lastDrop atomic.Value

// centrifugeClient is a connected centrifuge-go client (Protobuf protocol,
// the library's leaner encoding). lost counts disconnects not asked for.
type centrifugeClient struct {
	*cfclient.Client
	closing atomic.Bool
}

func dialCentrifuge(ctx context.Context, url string, lost *atomic.Int64, onPub func([]byte)) (*centrifugeClient, error) {
	c := &centrifugeClient{Client: cfclient.NewProtobufClient(url, cfclient.Config{})}
	connected := make(chan struct{})
	var once sync.Once
	var up atomic.Bool
	c.OnConnected(func(cfclient.ConnectedEvent) { up.Store(true); once.Do(func() { close(connected) }) })
	c.OnDisconnected(func(cfclient.DisconnectedEvent) {
		if !c.closing.Load() && lost != nil {
			lost.Add(1)
		}
	})
	// A connection the server drops with reconnect allowed (a slow
	// client's, for one) goes back to connecting without a disconnect:
	// the publications meanwhile are lost, so it counts as lost too.
	c.OnConnecting(func(e cfclient.ConnectingEvent) {
		if up.Load() && !c.closing.Load() && lost != nil {
			lost.Add(1)
			lastDrop.Store(fmt.Sprintf("code %d, %q", e.Code, e.Reason))
		}
	})
	if onPub != nil {
		c.OnPublication(func(e cfclient.ServerPublicationEvent) { onPub(e.Data) })
	}
	if err := c.Connect(); err != nil {
		c.Close()
		return nil, err
	}
	select {
	case <-connected:
		return c, nil
	case <-ctx.Done():
		c.close()
		return nil, fmt.Errorf("centrifuge connect: %w", ctx.Err())
	}
}

func (c *centrifugeClient) close() {
	c.closing.Store(true)
	c.Close()
}

func centrifugeMembers(ctx context.Context, g *goAudience, hello childHello) error {
	var lost atomic.Int64
	clients := make([]*centrifugeClient, len(g.a.recorders))
	g.closers = append(g.closers, func() {
		for _, c := range clients {
			if c != nil {
				c.close()
			}
		}
	})
	g.a.lost = func() error {
		if l := lost.Load(); l > 0 {
			return fmt.Errorf("%d centrifuge members disconnected during the broadcast (last reconnect: %v)", l, lastDrop.Load())
		}
		return nil
	}
	return parallel(ctx, len(clients), func(ctx context.Context, i int) error {
		r := g.a.recorders[i]
		var c *centrifugeClient
		if err := dialRetrying(ctx, func(ctx context.Context) (err error) {
			c, err = dialCentrifuge(ctx, hello.URL, &lost, r.record)
			return err
		}); err != nil {
			return err
		}
		clients[i] = c
		return nil
	})
}

// centrifugeCalls drives RPCs echoed by the server, from one client.
func centrifugeCalls(ctx context.Context, cfg config, callers int) (rateResult, error) {
	s, err := startCentrifuge(nil)
	if err != nil {
		return rateResult{}, err
	}
	defer s.close()
	c, err := dialCentrifuge(ctx, s.url, nil, nil)
	if err != nil {
		return rateResult{}, err
	}
	defer c.close()
	return driveCalls(ctx, cfg, callers, func(ctx context.Context, _ []byte) error {
		res, err := c.RPC(ctx, "echo", callRequest)
		if err == nil && len(res.Data) != len(callRequest) {
			err = fmt.Errorf("centrifuge RPC answered %d bytes, want %d", len(res.Data), len(callRequest))
		}
		return err
	})
}

// centrifugeEmit sends async messages (Client.Send), at most cfg.window in
// flight end to end (Send writes at once and has no queue to wait on), and
// counts them in the server's message handler.
func centrifugeEmit(ctx context.Context, cfg config, payload []byte) (float64, error) {
	ctx, cancel := measureCtx(ctx, cfg)
	defer cancel()
	p := newPacer(cfg.window)
	s, err := startCentrifuge(func([]byte) { p.received() })
	if err != nil {
		return 0, err
	}
	defer s.close()
	c, err := dialCentrifuge(ctx, s.url, nil, nil)
	if err != nil {
		return 0, err
	}
	defer c.close()
	start := time.Now()
	deadline := start.Add(cfg.duration)
	var sent int64
	for sent < int64(cfg.count) && time.Now().Before(deadline) {
		if err := p.admit(ctx, sent); err != nil {
			return 0, err
		}
		if err := c.Send(ctx, payload); err != nil {
			return 0, err
		}
		sent++
	}
	if err := p.await(ctx, sent); err != nil {
		return 0, err
	}
	return perSecond(sent, time.Since(start)), nil
}

// centrifugeSetups connects and closes clients one after another.
func centrifugeSetups(ctx context.Context, cfg config) (float64, error) {
	s, err := startCentrifuge(nil)
	if err != nil {
		return 0, err
	}
	defer s.close()
	return sequentialSetups(ctx, cfg, func(ctx context.Context) error {
		c, err := dialCentrifuge(ctx, s.url, nil, nil)
		if err != nil {
			return err
		}
		c.close()
		return nil
	})
}
