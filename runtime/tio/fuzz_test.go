package tio

import (
	"context"
	"testing"
	"time"

	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/wire"
)

// fuzzSeeds are valid and broken frames of every type.
func fuzzSeeds(f *testing.F) {
	frame := func(t wire.FrameType, c wire.Codec, id uint32, p string) []byte {
		b, _ := wire.AppendFrame(nil, t, c, id, []byte(p))
		return b
	}
	f.Add(frame(wire.FrameEmit, wire.CodecJSON, evPing, `1`))
	f.Add(frame(wire.FrameEmit, wire.CodecJSON, 77, `1`))
	f.Add(frame(wire.FrameJoin, wire.CodecJSON, 0, `{"room":"a"}`))
	f.Add(frame(wire.FrameCallRequest, wire.CodecJSON, evEcho, `1`))
	f.Add(frame(wire.FrameCallRequest, wire.CodecJSON, evCount, `{"n":3}`))
	f.Add(frame(wire.FrameCallCredit, wire.CodecJSON, 0, `{"credit":16}`))
	f.Add(frame(wire.FrameDatagram, wire.CodecJSON, 0, string(dgram(evMove, 1, 1, `1`))))
	f.Add(frame(wire.FrameHandshake, wire.CodecJSON, 0, `{"v":0,"feat":[],"events":[]}`))
	f.Add(rawHeader(0xFFFFFFFF, 3, 1, 0, evEcho))
	f.Add([]byte{0, 0, 0, 9, 2, 1, 0, 1, 0, 0, 0, 1, 'x'})
}

// FuzzServerEmitLane writes arbitrary bytes after a valid handshake, then
// finishes the stream: the server must close the session or keep it, never
// panic, and its session must still end cleanly.
func FuzzServerEmitLane(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, raw, served := serveRaw(t, loopback.Options{}, ServerOptions{})
		raw.handshake(testContract)
		raw.write(b)
		_ = raw.out.Close()
		_ = raw.conn.Close(0, "")
		select {
		case <-served:
		case <-time.After(5 * time.Second):
			t.Fatal("the server session did not end after the close")
		}
		served <- nil
	})
}

// FuzzServerCallStream writes arbitrary bytes on a call stream: the server
// must answer, abandon or close, never panic or hang.
func FuzzServerCallStream(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, raw := handshaken(t)
		st, err := raw.conn.OpenCall(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = st.Write(b)
		_ = st.Close()
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			rd := wire.NewReader(st)
			for {
				if _, err := rd.Next(); err != nil {
					return
				}
			}
		}()
		select {
		case <-ended:
		case <-raw.conn.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the call stream never ended")
		}
		close(ts.release)
	})
}
