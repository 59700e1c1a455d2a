package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	cws "github.com/coder/websocket"
	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport/websocket"
	"github.com/transport-io/tiogen/runtime/transport/webtransport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// goMembers connects a Go subject's members to the fan-out server a child
// runs, each recording into its recorder of g.
var goMembers = map[string]func(ctx context.Context, g *goAudience, hello childHello) error{
	subTioWT:      tioWTMembers,
	subTioWS:      tioWSMembers,
	subRawWT:      rawWTMembers,
	subRawWS:      rawWSMembers,
	subCentrifuge: centrifugeMembers,
	subTioWTLean:  leanWTMembers,
	subRawWTTio:   tioWTMembers,
}

func certHash(hello childHello) ([32]byte, error) {
	var h [32]byte
	b, err := hex.DecodeString(hello.CertHash)
	if err != nil || len(b) != len(h) {
		return h, fmt.Errorf("the server child sent no certificate hash")
	}
	copy(h[:], b)
	return h, nil
}

// Setup is not what a fan-out measures: a member's dial that fails or
// times out on a loaded host is retried, each attempt within
// memberDialTimeout, before the subject is reported as failed.
const (
	memberDialAttempts = 3
	memberDialTimeout  = 30 * time.Second
)

// dialRetrying runs dial until it succeeds, up to memberDialAttempts times,
// each attempt bounded by memberDialTimeout within ctx; the last error is
// returned with the attempts made.
func dialRetrying(ctx context.Context, dial func(ctx context.Context) error) error {
	var err error
	for attempt := 1; attempt <= memberDialAttempts; attempt++ {
		actx, cancel := context.WithTimeout(ctx, memberDialTimeout)
		err = dial(actx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
		case <-ctx.Done():
			return err
		}
	}
	return fmt.Errorf("%d attempts: %w", memberDialAttempts, err)
}

func tioMembers(ctx context.Context, g *goAudience, dial func(ctx context.Context) (*tio.Client, error)) error {
	clients := make([]*tio.Client, len(g.a.recorders))
	g.closers = append(g.closers, func() {
		// Each in its own goroutine: a server that never answers a close
		// (raw WT tio's) holds each Wait for the close grace.
		var closing sync.WaitGroup
		for _, c := range clients {
			if c != nil {
				closing.Go(func() {
					_ = c.Close(tio.NoError, "")
					_ = c.Wait()
				})
			}
		}
		closing.Wait()
	})
	g.a.lost = func() error {
		for _, c := range clients {
			select {
			case <-c.Done():
				return fmt.Errorf("a member's session ended during the broadcast: %v", c.Err())
			default:
			}
		}
		return nil
	}
	return parallel(ctx, len(clients), func(ctx context.Context, i int) error {
		var c *tio.Client
		if err := dialRetrying(ctx, func(ctx context.Context) (err error) {
			c, err = dial(ctx)
			return err
		}); err != nil {
			return err
		}
		r := g.a.recorders[i]
		c.On(evSaid, func(b []byte) error { r.record(b); return nil })
		clients[i] = c
		return nil
	})
}

func tioWTMembers(ctx context.Context, g *goAudience, hello childHello) error {
	h, err := certHash(hello)
	if err != nil {
		return err
	}
	return tioMembers(ctx, g, func(ctx context.Context) (*tio.Client, error) {
		conn, err := webtransport.Dial(ctx, hello.URL, webtransport.DialOptions{CertHashes: [][32]byte{h}, CloseGrace: 200 * time.Millisecond})
		if err != nil {
			return nil, err
		}
		return tio.NewClient(ctx, conn, benchContract, tio.Options{})
	})
}

func tioWSMembers(ctx context.Context, g *goAudience, hello childHello) error {
	return tioMembers(ctx, g, func(ctx context.Context) (*tio.Client, error) {
		conn, err := websocket.Dial(ctx, hello.URL, websocket.DialOptions{})
		if err != nil {
			return nil, err
		}
		return tio.NewClient(ctx, conn, benchContract, tio.Options{})
	})
}

// rawMembers tracks the raw members' readers: a reader that ends before the
// audience closes has lost its member.
type rawMembers struct {
	readers sync.WaitGroup
	closing atomic.Bool
	lost    atomic.Int64
}

func (m *rawMembers) ended(err error) {
	if !m.closing.Load() && err != nil {
		m.lost.Add(1)
	}
}

func (m *rawMembers) lostErr() error {
	if l := m.lost.Load(); l > 0 {
		return fmt.Errorf("%d raw members' connections ended during the broadcast", l)
	}
	return nil
}

// readFrames reads fixed-size §5 frames of payload bytes and records each
// payload, until rd ends.
func readFrames(rd io.Reader, payload int, r *recorder) error {
	buf := make([]byte, wire.HeaderLen+payload)
	for {
		if _, err := io.ReadFull(rd, buf); err != nil {
			return err
		}
		r.record(buf[wire.HeaderLen:])
	}
}

// pinnedTLS trusts exactly the certificate with this SHA-256, as the
// engine's client does by pin.
func pinnedTLS(h [32]byte) *tls.Config {
	return &tls.Config{
		InsecureSkipVerify: true, // replaced by the pin check
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || sha256.Sum256(raw[0]) != h {
				return errors.New("the server's certificate is not the pinned one")
			}
			return nil
		},
	}
}

func rawWTMembers(ctx context.Context, g *goAudience, hello childHello) error {
	return wtStreamMembers(ctx, g, hello, nil)
}

// leanWTMembers are raw WT's members made to speak just enough of the
// protocol for tiogen's server: each opens its emit stream with its §4
// handshake and skips the server's frames before the first EMIT (its
// handshake and the room's JOIN), then reads the EMIT frames as raw WT's
// members do. Nothing is checked beyond the §5 length prefix: with these
// members, a p99 that differs from raw WT's is the server's.
func leanWTMembers(ctx context.Context, g *goAudience, hello childHello) error {
	hs, err := handshakeFrame()
	if err != nil {
		return err
	}
	return wtStreamMembers(ctx, g, hello, hs)
}

// handshakeFrame is the bench contract's §4 frame 0.
func handshakeFrame() ([]byte, error) {
	payload := wire.AppendHandshake(nil, wire.Handshake{V: wire.ProtocolVersion, Events: benchContract.Table()})
	return wire.AppendFrame(nil, wire.FrameHandshake, wire.CodecJSON, 0, payload)
}

// maxSkippedFrame bounds a frame a lean member reads before the first EMIT
// (the server's handshake: its event table).
const maxSkippedFrame = 64 << 10

// skipToEmit reads whole frames from rd until an EMIT and returns that
// frame's payload.
func skipToEmit(rd io.Reader) ([]byte, error) {
	var buf []byte
	for {
		var prefix [4]byte
		if _, err := io.ReadFull(rd, prefix[:]); err != nil {
			return nil, err
		}
		n := int(binary.BigEndian.Uint32(prefix[:]))
		if n <= wire.HeaderLen-4 || n > maxSkippedFrame { // §5.1: at least one payload byte
			return nil, fmt.Errorf("a frame of length %d before the first EMIT", n)
		}
		buf = slices.Grow(buf[:0], n)[:n]
		if _, err := io.ReadFull(rd, buf); err != nil {
			return nil, err
		}
		if wire.FrameType(buf[0]) == wire.FrameEmit {
			return buf[wire.HeaderLen-4:], nil
		}
	}
}

// wtStreamMembers dials webtransport-go sessions from one wt.Transport and
// reads each one's first incoming stream with readFrames; with handshake,
// each also opens its own stream with those bytes and skips the server's
// frames before the first EMIT (leanWTMembers).
func wtStreamMembers(ctx context.Context, g *goAudience, hello childHello, handshake []byte) error {
	h, err := certHash(hello)
	if err != nil {
		return err
	}
	size := g.payload
	tr := &wt.Transport{TLSClientConfig: pinnedTLS(h)}
	var m rawMembers
	sessions := make([]*wt.Session, len(g.a.recorders))
	g.closers = append(g.closers, func() {
		m.closing.Store(true)
		for _, s := range sessions {
			if s != nil {
				_ = s.CloseWithError(0, "")
			}
		}
		m.readers.Wait()
		_ = tr.Close()
	})
	g.a.lost = m.lostErr
	return parallel(ctx, len(sessions), func(ctx context.Context, i int) error {
		var sess *wt.Session
		if err := dialRetrying(ctx, func(ctx context.Context) (err error) {
			_, sess, err = tr.Dial(ctx, hello.URL, nil)
			return err
		}); err != nil {
			return err
		}
		sessions[i] = sess
		if handshake != nil {
			out, err := sess.OpenUniStreamSync(ctx)
			if err != nil {
				return err
			}
			if _, err := out.Write(handshake); err != nil {
				return err
			}
		}
		r := g.a.recorders[i]
		m.readers.Go(func() {
			str, err := sess.AcceptUniStream(context.Background())
			if err != nil {
				m.ended(err)
				return
			}
			if handshake != nil {
				first, err := skipToEmit(str)
				if err != nil {
					m.ended(err)
					return
				}
				r.record(first)
			}
			m.ended(ignoreEOF(readFrames(str, size, r)))
		})
		return nil
	})
}

func rawWSMembers(ctx context.Context, g *goAudience, hello childHello) error {
	size := g.payload
	var m rawMembers
	conns := make([]*cws.Conn, len(g.a.recorders))
	g.closers = append(g.closers, func() {
		m.closing.Store(true)
		for _, c := range conns {
			if c != nil {
				_ = c.CloseNow()
			}
		}
		m.readers.Wait()
	})
	g.a.lost = m.lostErr
	return parallel(ctx, len(conns), func(ctx context.Context, i int) error {
		var c *cws.Conn
		if err := dialRetrying(ctx, func(ctx context.Context) (err error) {
			c, _, err = cws.Dial(ctx, hello.URL, nil)
			return err
		}); err != nil {
			return err
		}
		conns[i] = c
		r := g.a.recorders[i]
		m.readers.Go(func() {
			for {
				_, rd, err := c.Reader(context.Background())
				if err != nil {
					if cws.CloseStatus(err) == cws.StatusNormalClosure || errors.Is(err, net.ErrClosed) {
						err = nil
					}
					m.ended(err)
					return
				}
				if err := readFrames(rd, size, r); !errors.Is(err, io.EOF) {
					m.ended(err)
					return
				}
			}
		})
		return nil
	})
}

// ignoreEOF is nil for a stream that ended cleanly.
func ignoreEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
