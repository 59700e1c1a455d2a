package websocket

import (
	"encoding/binary"
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
//
// On the server, data messages do not go through coder/websocket at all
// (writeBinary), so every write coder/websocket makes is one whole frame:
// a control frame, which its 256 B buffer holds whole, or the keepalive's
// empty message. framed says so, and a close frame's write then sets
// closeSent.
type gatherConn struct {
	net.Conn
	mu   sync.Mutex // held across the underlying writes, which it orders
	want int        // bytes still expected of the message being gathered
	buf  *[]byte    // the bytes gathered; nil while no message is
	// framed: every write outside a gathered message starts a frame (the
	// server's). closeSent: a close frame was written; no data frame may
	// follow it (RFC 6455 §5.5.1). Both under mu.
	framed    bool
	closeSent bool
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
		if g.framed && len(p) > 0 && p[0]&0x0f == opClose {
			g.closeSent = true
		}
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

// opClose is the close frame's opcode (RFC 6455 §5.2).
const opClose = 0x8

// writeBinary writes p as one unmasked binary message (the server's, RFC
// 6455 §5.2) past coder/websocket, whose per-message locks (channels
// selected on with its close), state checks and buffer copies cost a paced
// 500-member fan-out's server about 1.7 µs of a delivery's 12 µs beside
// the system call; here it is a header, a copy into a pooled buffer and
// one write. The frames coder/websocket writes itself come through Write,
// under the same lock, so the two never interleave; once it wrote a close
// frame, writeBinary fails with net.ErrClosed, as its own Write would. A
// message over maxGather is written as its header and its payload, two
// writes under one hold of the lock.
func (g *gatherConn) writeBinary(p []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closeSent {
		return net.ErrClosed
	}
	b := gatherPool.Get().(*[]byte)
	defer func() { *b = (*b)[:0]; gatherPool.Put(b) }()
	n := headerLen(len(p), false) + len(p)
	if n > maxGather {
		*b = appendBinaryHeader((*b)[:0], len(p))
		if _, err := g.Conn.Write(*b); err != nil {
			return err
		}
		_, err := g.Conn.Write(p)
		return err
	}
	if cap(*b) < n {
		*b = make([]byte, 0, n) // grown once, and within maxGather
	}
	*b = append(appendBinaryHeader((*b)[:0], len(p)), p...)
	_, err := g.Conn.Write(*b)
	return err
}

// appendBinaryHeader appends the header of an unmasked, final binary frame
// of n payload bytes (RFC 6455 §5.2).
func appendBinaryHeader(b []byte, n int) []byte {
	const finBinary = 0x80 | 0x2
	switch {
	case n <= 125:
		return append(b, finBinary, byte(n))
	case n <= 65535:
		return binary.BigEndian.AppendUint16(append(b, finBinary, 126), uint16(n))
	}
	return binary.BigEndian.AppendUint64(append(b, finBinary, 127), uint64(n))
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
