package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	cws "github.com/coder/websocket"
	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/wire"
)

// The request/response, emit and setup figures run client and server in
// this process, as the tiogen/raw scenarios do (socket.io: a Node server
// process and a Node driver process). A subject missing from a map has no such figure.
var (
	peerCallers = map[string]func(ctx context.Context, cfg config, callers int) (rateResult, error){
		subTioWT: func(ctx context.Context, cfg config, n int) (rateResult, error) {
			return tioCalls(ctx, cfg, n, startWT)
		},
		subRawWT:      rawWTCalls,
		subCentrifuge: centrifugeCalls,
		subSocketIO:   socketIOCalls,
	}
	peerEmitters = map[string]func(ctx context.Context, cfg config, payload []byte) (float64, error){
		subTioWT: func(ctx context.Context, cfg config, p []byte) (float64, error) {
			r, err := emitOursOn(ctx, cfg, wtEmitMapping, p)
			return r.perSec, err
		},
		subTioWS: func(ctx context.Context, cfg config, p []byte) (float64, error) {
			r, err := emitOursOn(ctx, cfg, wsEmitMapping, p)
			return r.perSec, err
		},
		subRawWT:      rateOf(wtEmitRaw),
		subRawWS:      rateOf(wsEmitRaw),
		subCentrifuge: centrifugeEmit,
		subSocketIO:   socketIOEmit,
	}
	peerSetups = map[string]func(ctx context.Context, cfg config) (float64, error){
		subTioWT:      func(ctx context.Context, cfg config) (float64, error) { return tioSetups(ctx, cfg, startWT) },
		subTioWS:      func(ctx context.Context, cfg config) (float64, error) { return tioSetups(ctx, cfg, startWS) },
		subRawWT:      rawWTSetups,
		subRawWS:      rawWSSetups,
		subCentrifuge: centrifugeSetups,
		subSocketIO:   socketIOSetups,
	}
)

// rateOf is a raw emitter's frames/s alone.
func rateOf(emit func(ctx context.Context, cfg config, payload []byte) (emitResult, error)) func(ctx context.Context, cfg config, payload []byte) (float64, error) {
	return func(ctx context.Context, cfg config, p []byte) (float64, error) {
		r, err := emit(ctx, cfg, p)
		return r.perSec, err
	}
}

// peerEmitSize is the payload of the peer emit figure.
const peerEmitSize = 1024

// The WebSocket mapping has no calls (§3.3): tiogen WS has no call figure.
func startWT() (ourServer, error) { return startOurWT(tio.ServerOptions{}) }
func startWS() (ourServer, error) { return startOurWS(tio.ServerOptions{}) }

func runPeerCall(ctx context.Context, cfg config) ([]sample, error) {
	var figs peerFigures
	for _, callers := range []int{1, 64} {
		for _, subject := range cfg.peer.subjects {
			call, ok := peerCallers[subject]
			if !ok {
				continue
			}
			r, err := call(ctx, cfg, callers)
			if err != nil {
				return nil, fmt.Errorf("%s, %d callers: %w", subject, callers, err)
			}
			figs.add(subject, sample{Figure: "calls", Concurrency: callers, Unit: "calls/s",
				Note: "one session, callers calling one at a time, echo handler; tiogen: Client.Call on a returns event; raw WT: a new bidi stream per request carrying the same CALL_REQUEST frame; centrifuge: Client.RPC; socket.io: emitWithAck"}, r.perSec)
			figs.add(subject, sample{Figure: "call p99", Concurrency: callers, Unit: "ms", Lower: true}, r.p99)
		}
	}
	return figs.order, nil
}

func runPeerEmit(ctx context.Context, cfg config) ([]sample, error) {
	payload := jsonPayload(peerEmitSize)
	var figs peerFigures
	for _, subject := range cfg.peer.subjects {
		emit, ok := peerEmitters[subject]
		if !ok {
			continue
		}
		v, err := emit(ctx, cfg, payload)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", subject, err)
		}
		figs.add(subject, sample{Figure: "emit", Size: peerEmitSize, Unit: "msgs/s",
			Note: fmt.Sprintf("one session, client→server, counted at the server; tiogen: Emit paced by %s; raw: the same frames %d per Write (WT) or per binary message (WS); centrifuge: Client.Send, at most %d in flight end to end; socket.io: emit, an acknowledged emit every %d", cfg.paceNote(), cfg.batch, cfg.window, socketIOEmitSync)}, v)
	}
	return figs.order, nil
}

func runPeerSetup(ctx context.Context, cfg config) ([]sample, error) {
	var figs peerFigures
	for _, subject := range cfg.peer.subjects {
		setup, ok := peerSetups[subject]
		if !ok {
			continue
		}
		v, err := setup(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", subject, err)
		}
		figs.add(subject, sample{Figure: "sequential setup", Unit: "sessions/s",
			Note: "one client dials, completes the handshake (tiogen: §4; raw WT: CONNECT; raw WS: upgrade; centrifuge: connect reply; socket.io: the connect event), closes, and dials again"}, v)
	}
	return figs.order, nil
}

func tioCalls(ctx context.Context, cfg config, callers int, start func() (ourServer, error)) (rateResult, error) {
	o, err := start()
	if err != nil {
		return rateResult{}, err
	}
	defer o.close()
	o.server().HandleCall(evEcho, func(_ context.Context, _ *tio.Peer, req []byte) ([]byte, error) { return req, nil })
	c, err := o.dialCounting(ctx, nil)
	if err != nil {
		return rateResult{}, err
	}
	defer closeClient(c)
	return driveCalls(ctx, cfg, callers, func(ctx context.Context, _ []byte) error {
		_, err := c.Call(ctx, evEcho, callRequest)
		return err
	})
}

func rawWTCalls(ctx context.Context, cfg config, callers int) (rateResult, error) {
	r, err := startRawWT(serveRawEcho)
	if err != nil {
		return rateResult{}, err
	}
	defer r.close()
	sess, err := r.dial(ctx)
	if err != nil {
		return rateResult{}, err
	}
	defer sess.CloseWithError(0, "")
	req, _ := frames(wire.FrameCallRequest, evEcho, callRequest, 1)
	return driveCalls(ctx, cfg, callers, func(ctx context.Context, buf []byte) error {
		return rawCall(ctx, sess, req, buf)
	})
}

var errNoSetup = errors.New("no session was set up within the bounds")

// sequentialSetups sets sessions up one after another until the count or
// the duration is reached.
func sequentialSetups(ctx context.Context, cfg config, setup func(ctx context.Context) error) (float64, error) {
	ctx, cancel := measureCtx(ctx, cfg)
	defer cancel()
	start := time.Now()
	deadline := start.Add(cfg.duration)
	var n int64
	for n < int64(cfg.count) && time.Now().Before(deadline) {
		if err := setup(ctx); err != nil {
			return 0, fmt.Errorf("session %d: %w", n, err)
		}
		n++
	}
	if n == 0 {
		return 0, errNoSetup
	}
	return perSecond(n, time.Since(start)), nil
}

func tioSetups(ctx context.Context, cfg config, start func() (ourServer, error)) (float64, error) {
	o, err := start()
	if err != nil {
		return 0, err
	}
	defer o.close()
	return sequentialSetups(ctx, cfg, func(ctx context.Context) error {
		c, err := o.dialCounting(ctx, nil)
		if err != nil {
			return err
		}
		closeClient(c)
		return nil
	})
}

func rawWTSetups(ctx context.Context, cfg config) (float64, error) {
	r, err := startRawWT(func(sess *wt.Session) { <-sess.Context().Done() })
	if err != nil {
		return 0, err
	}
	defer r.close()
	return sequentialSetups(ctx, cfg, func(ctx context.Context) error {
		sess, err := r.dial(ctx)
		if err != nil {
			return err
		}
		return sess.CloseWithError(0, "")
	})
}

func rawWSSetups(ctx context.Context, cfg config) (float64, error) {
	addr, hs, err := serveHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := cws.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			if _, _, err := c.Read(r.Context()); err != nil {
				return
			}
		}
	}))
	if err != nil {
		return 0, err
	}
	defer hs.Close()
	return sequentialSetups(ctx, cfg, func(ctx context.Context) error {
		c, _, err := cws.Dial(ctx, "ws://"+addr+"/", nil)
		if err != nil {
			return err
		}
		return c.Close(cws.StatusNormalClosure, "")
	})
}
