package hostile

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	cws "github.com/coder/websocket"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	wt "github.com/quic-go/webtransport-go"

	"github.com/transport-io/tiogen/cmd/tio-conformance/conformance"
	"github.com/transport-io/tiogen/runtime/wire"
	"github.com/transport-io/tiogen/tests/internal/conformancetest"
)

// wait bounds every wait of this suite.
const wait = conformancetest.Wait

// handshakeTimeout is the suite's shortened §4.1 deadline (the server's
// default stays 5000 ms): long enough for a loaded 2-core machine to read a
// handshake sent at once, short enough to wait out in the timeout case.
const handshakeTimeout = 1000 * time.Millisecond

type server struct{ *conformancetest.Server }

func startServer(t *testing.T) *server {
	t.Helper()
	return &server{conformancetest.Start(t, conformance.Config{HandshakeTimeout: handshakeTimeout})}
}

// peer is one raw session: the bytes of this side's emit stream go out with
// write, and closed waits for the server's close.
type peer interface {
	write(t *testing.T, b []byte)
	// datagram sends a §7.1 datagram the way the mapping carries it.
	datagram(t *testing.T, d []byte)
	// closed returns the §10.2 code and reason the server closed with.
	closed(t *testing.T) (code uint32, reason string)
}

// wtPeer is a raw webtransport-go session.
type wtPeer struct {
	tr   *wt.Transport
	sess *wt.Session
	emit *wt.SendStream
}

func (s *server) dialWT(t *testing.T) *wtPeer {
	t.Helper()
	tr := &wt.Transport{
		TLSClientConfig: conformancetest.Pinned(s.Cert, http3.NextProtoH3),
		QUICConfig:      &quic.Config{EnableDatagrams: true, EnableStreamResetPartialDelivery: true},
	}
	t.Cleanup(func() { _ = tr.Close() })
	_, sess, err := tr.Dial(conformancetest.Context(t), s.Ready().URL, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = sess.CloseWithError(0, "") })
	return &wtPeer{tr: tr, sess: sess}
}

// hangUp ends the session and its QUIC connection from this side.
func (p *wtPeer) hangUp() {
	_ = p.sess.CloseWithError(0, "")
	_ = p.tr.Close()
}

// serverFrames returns the frames of the server's emit stream after its
// handshake.
func (p *wtPeer) serverFrames(t *testing.T) <-chan wire.Frame {
	t.Helper()
	st, err := p.sess.AcceptUniStream(conformancetest.Context(t))
	if err != nil {
		t.Fatalf("accepting the server's emit stream: %v", err)
	}
	frames := make(chan wire.Frame, frameBacklog)
	go collectFrames(st, frames)
	return frames
}

func (p *wtPeer) write(t *testing.T, b []byte) {
	t.Helper()
	if p.emit == nil {
		st, err := p.sess.OpenUniStreamSync(conformancetest.Context(t))
		if err != nil {
			t.Fatalf("opening the emit stream: %v", err)
		}
		p.emit = st
	}
	if _, err := p.emit.Write(b); err != nil {
		t.Fatalf("writing the emit stream: %v", err)
	}
}

// datagram sends d as a QUIC datagram, again every 50 ms until the session
// ends, since a datagram may be lost (§7.5).
func (p *wtPeer) datagram(t *testing.T, d []byte) {
	t.Helper()
	go func() {
		for {
			_ = p.sess.SendDatagram(d)
			select {
			case <-p.sess.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
}

func (p *wtPeer) closed(t *testing.T) (uint32, string) {
	t.Helper()
	select {
	case <-p.sess.Context().Done():
	case <-time.After(wait):
		t.Fatal("the server did not close the session")
	}
	// Once the session's context is done, OpenStream reports its close.
	_, err := p.sess.OpenStream()
	var se *wt.SessionError
	if !errors.As(err, &se) || !se.Remote {
		t.Fatalf("the session ended with %v (%T), want the server's close", err, err)
	}
	return uint32(se.ErrorCode), se.Message
}

// wsPeer is a raw coder/websocket session of the WebSocket mapping (§3.3).
type wsPeer struct {
	c      *cws.Conn
	done   chan struct{}
	err    error           // what the read loop ended with
	frames chan wire.Frame // the server's frames after its handshake
}

func (s *server) dialWS(t *testing.T) *wsPeer {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: conformancetest.Pinned(s.Cert)}}
	c, _, err := cws.Dial(conformancetest.Context(t), s.Ready().WS, &cws.DialOptions{HTTPClient: client})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	p := &wsPeer{c: c, done: make(chan struct{}), frames: make(chan wire.Frame, frameBacklog)}
	pr, pw := io.Pipe()
	go func() { // the server's messages are bytes of its emit stream (§3.3)
		defer close(p.done)
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				p.err = err
				pw.CloseWithError(err)
				return
			}
			// Once the frames stopped parsing, the rest is read and dropped
			// so the close frame still arrives.
			_, _ = pw.Write(b)
		}
	}()
	go collectFrames(pr, p.frames)
	return p
}

func (p *wsPeer) write(t *testing.T, b []byte) {
	t.Helper()
	if err := p.c.Write(conformancetest.Context(t), cws.MessageBinary, b); err != nil {
		// The server may close on a frame's header before the peer wrote
		// the rest: once its close frame arrived, writes fail, and closed
		// reports the close.
		select {
		case <-p.done:
			var ce cws.CloseError
			if errors.As(p.err, &ce) {
				return
			}
		case <-time.After(wait):
		}
		t.Fatalf("writing: %v", err)
	}
}

// datagram sends d as a DATAGRAM frame on the emit lane (§3.3).
func (p *wsPeer) datagram(t *testing.T, d []byte) {
	t.Helper()
	p.write(t, frame(wire.FrameDatagram, wire.CodecJSON, 0, d))
}

func (p *wsPeer) closed(t *testing.T) (uint32, string) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(wait):
		t.Fatal("the server did not close the session")
	}
	var ce cws.CloseError
	if !errors.As(p.err, &ce) {
		t.Fatalf("the session ended with %v, want the server's close frame", p.err)
	}
	code, ok := wire.SessionCodeFromWebSocket(uint16(ce.Code))
	if !ok {
		t.Fatalf("WebSocket close code %d is not a session code (§3.3)", ce.Code)
	}
	return code, ce.Reason
}

// frameBacklog bounds the server frames a test has not read yet; later
// ones are dropped, and no test reads that many.
const frameBacklog = 1024

// collectFrames decodes a server's emit stream, skipping its handshake,
// until the stream ends.
func collectFrames(r io.Reader, out chan<- wire.Frame) {
	fr := wire.NewReader(r)
	for {
		f, err := fr.Next()
		if err != nil {
			if pr, ok := r.(*io.PipeReader); ok {
				pr.CloseWithError(err) // unblocks the WebSocket read loop
			}
			return
		}
		if f.Type == wire.FrameHandshake {
			continue
		}
		f.Payload = bytes.Clone(f.Payload)
		select {
		case out <- f:
		default:
		}
	}
}

// nextFrame waits for the server's next frame.
func nextFrame(t *testing.T, frames <-chan wire.Frame) wire.Frame {
	t.Helper()
	select {
	case f := <-frames:
		return f
	case <-time.After(wait):
		t.Fatal("no frame from the server")
		return wire.Frame{}
	}
}

// frame builds a well-formed frame.
func frame(t wire.FrameType, c wire.Codec, event uint32, payload []byte) []byte {
	b, err := wire.AppendFrame(nil, t, c, event, payload)
	if err != nil {
		panic(err)
	}
	return b
}

// header is a bare 12-byte header announcing payloadLen bytes, for frames
// AppendFrame refuses to build.
func header(t wire.FrameType, c wire.Codec, event uint32, payloadLen int) []byte {
	b := make([]byte, wire.HeaderLen)
	wire.PutHeader(b, t, c, event, payloadLen)
	return b
}

// handshake is frame 0 with the given version and table (§4.1).
func handshake(v int, table []wire.EventEntry) []byte {
	return frame(wire.FrameHandshake, wire.CodecJSON, 0, wire.AppendHandshake(nil, wire.Handshake{V: v, Feat: []string{}, Events: table}))
}

// goodHandshake is the conformance contract's own frame 0.
var goodHandshake = handshake(wire.ProtocolVersion, conformance.Contract.Table())

func text(s string) []byte { return []byte(`{"text":"` + s + `"}`) }
