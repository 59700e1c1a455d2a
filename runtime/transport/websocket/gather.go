package websocket

import (
	"net"
	"sync"
)

// gatherConn is the TCP connection under coder/websocket with the pieces
// of one outgoing message gathered into a single write. coder/websocket
// hands a message to the connection through its bufio.Writer, one write
// system call per buffer's worth (4 KiB on the client, where every byte
// is masked in that buffer); gathered, a message of the emit writer's
// 64 KiB costs one system call and one wake-up of the peer's reader. The
// buffer is pooled and held only while a message is written, so an idle
// session holds none. Every write goes through the buffer while a message
// is gathered, a control frame written meanwhile included, so the bytes
// reach TCP in the order they were written whatever the message's length.
type gatherConn struct {
	net.Conn
	mu   sync.Mutex // held across the underlying writes, which it orders
	want int        // bytes still expected of the message being gathered
	buf  *[]byte    // the bytes gathered; nil while no message is
}

// maxGather bounds a gathered message: room for the emit writer's 64 KiB
// Writes and a frame past the bound. A longer message is written as
// coder/websocket writes it.
const maxGather = 128 << 10

var gatherPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// gather starts gathering a message of payload bytes: its WebSocket frame
// header (RFC 6455 §5.2, masked from the client) and the payload.
func (g *gatherConn) gather(payload int, masked bool) {
	n := headerLen(payload, masked) + payload
	if n > maxGather {
		return
	}
	g.mu.Lock()
	g.want = n
	g.buf = gatherPool.Get().(*[]byte)
	if cap(*g.buf) < n {
		*g.buf = make([]byte, 0, n) // grown once, not by append's steps
	}
	g.mu.Unlock()
}

// gatherEnd ends the gathering gather began, once coder/websocket returned
// from writing the message, and writes what is still gathered: nothing,
// unless the header was not the length headerLen expects, or the message
// failed before its first byte while another frame was written (the close
// frame of a session closing meanwhile, which must still be sent). A
// gathered write's failure was coder/websocket's.
func (g *gatherConn) gatherEnd() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.buf == nil {
		return nil
	}
	var err error
	if len(*g.buf) > 0 {
		_, err = g.Conn.Write(*g.buf)
	}
	g.release()
	return err
}

func (g *gatherConn) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.buf == nil {
		return g.Conn.Write(p)
	}
	*g.buf = append(*g.buf, p...)
	if g.want -= len(p); g.want > 0 {
		return len(p), nil
	}
	_, err := g.Conn.Write(*g.buf)
	g.release()
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// release returns the buffer to the pool; g.mu is held.
func (g *gatherConn) release() {
	if cap(*g.buf) <= maxGather {
		*g.buf = (*g.buf)[:0]
		gatherPool.Put(g.buf)
	}
	g.buf, g.want = nil, 0
}

// headerLen is the length of a WebSocket frame header (RFC 6455 §5.2):
// the payload length in 7, 16 or 64 bits, and the masking key from the
// client.
func headerLen(payload int, masked bool) int {
	n := 2
	switch {
	case payload > 65535:
		n += 8
	case payload > 125:
		n += 2
	}
	if masked {
		n += 4
	}
	return n
}
