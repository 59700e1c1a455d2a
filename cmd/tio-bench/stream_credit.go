package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/wire"
)

// streamRawCredit is a raw program that obeys the §6.6 window as the
// engine must: the server may have at most 32 elements beyond the grants,
// the client grants 16 with a CALL_CREDIT frame per 16 consumed. Unlike the
// engine's responder it writes all the credit it holds in one Write. It
// prices the window on QUIC apart from the engine's per-element Writes.
func streamRawCredit(ctx context.Context, cfg config, elem []byte) (float64, error) {
	ctx, cancel := measureCtx(ctx, cfg)
	defer cancel()
	window, frameLen := frames(wire.FrameCallResponse, 0, elem, tio.InitialCredit) // responses carry event id 0 (§5.4)
	grant, err := wire.AppendFrame(nil, wire.FrameCallCredit, wire.CodecJSON, 0, wire.AppendCredit(nil, tio.CreditBatch))
	if err != nil {
		return 0, err
	}
	r, err := startRawWT(func(sess *wt.Session) {
		str, err := sess.AcceptStream(ctx)
		if err != nil {
			return
		}
		defer str.Close()
		// granted counts elements the client allowed; its first grant
		// opens the stream and stands for the initial 32.
		var granted atomic.Int64
		granted.Store(tio.InitialCredit - tio.CreditBatch)
		wake := make(chan struct{}, 1)
		go func() {
			buf := make([]byte, 4096)
			var pending int
			for {
				n, err := str.Read(buf)
				for pending += n; pending >= len(grant); pending -= len(grant) {
					granted.Add(tio.CreditBatch)
					select {
					case wake <- struct{}{}:
					default:
					}
				}
				if err != nil {
					return
				}
			}
		}()
		deadline := time.Now().Add(cfg.duration)
		var sent int64
		for sent < int64(cfg.count) && time.Now().Before(deadline) {
			k := min(granted.Load()-sent, int64(cfg.count)-sent)
			if k <= 0 {
				select {
				case <-wake:
				case <-ctx.Done():
					return
				}
				continue
			}
			if _, err := str.Write(window[:k*int64(frameLen)]); err != nil {
				return
			}
			sent += k
		}
	})
	if err != nil {
		return 0, err
	}
	defer r.close()
	sess, err := r.dial(ctx)
	if err != nil {
		return 0, err
	}
	defer sess.CloseWithError(0, "")
	start := time.Now()
	str, err := sess.OpenStreamSync(ctx)
	if err != nil {
		return 0, err
	}
	defer str.CancelRead(0)
	if _, err := str.Write(grant); err != nil {
		return 0, err
	}
	buf := make([]byte, 64<<10)
	var total, grantedFor int64
	for {
		n, err := str.Read(buf)
		total += int64(n)
		for total/int64(frameLen)-grantedFor >= tio.CreditBatch {
			if _, werr := str.Write(grant); werr != nil {
				return 0, werr
			}
			grantedFor += tio.CreditBatch
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if total%int64(frameLen) != 0 || total == 0 {
		return 0, fmt.Errorf("raw credit stream ended after %d bytes, not whole frames", total)
	}
	return perSecond(total/int64(frameLen), time.Since(start)), nil
}
