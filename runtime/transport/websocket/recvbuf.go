package websocket

import "sync"

// recvBuffer is the bounded byte ring between the connection's one reader
// goroutine (the producer) and the engine's Reads (the consumer). The
// producer reads the socket straight into the free region it reserved,
// outside the lock; the consumer copies out under the lock. The ring starts
// small and grows, only while the consumer falls behind, up to max; at max
// the producer waits, the socket is not read and TCP holds the peer back.
type recvBuffer struct {
	mu       sync.Mutex
	readable sync.Cond // signalled when bytes were committed or the buffer ended
	writable sync.Cond // signalled when bytes were consumed or the buffer ended

	buf []byte
	r   int // start of the buffered bytes
	n   int // how many bytes are buffered
	max int

	err     error // what Read returns once the buffered bytes are gone
	discard bool  // Read returns err at once, ignoring buffered bytes
	stalled bool  // the producer is waiting for room
}

func newRecvBuffer(max int) *recvBuffer {
	b := &recvBuffer{max: max}
	b.readable.L = &b.mu
	b.writable.L = &b.mu
	return b
}

// Read copies buffered bytes into p, waiting until there are some or the
// buffer ended.
func (b *recvBuffer) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.n == 0 && b.err == nil {
		b.readable.Wait()
	}
	if b.discard || b.n == 0 {
		return 0, b.err
	}
	k := 0
	for k < len(p) && b.n > 0 {
		end := min(b.r+b.n, len(b.buf))
		c := copy(p[k:], b.buf[b.r:end])
		k += c
		b.r = (b.r + c) % len(b.buf)
		b.n -= c
	}
	b.writable.Signal()
	return k, nil
}

// reserve waits for room and returns the free region the producer may fill
// next, and whether it had to wait for the consumer. It returns nil once the
// buffer ended.
func (b *recvBuffer) reserve() (space []byte, waited bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.err == nil && b.n == len(b.buf) {
		if len(b.buf) < b.max {
			b.grow()
			break
		}
		b.stalled, waited = true, true
		b.writable.Wait()
		b.stalled = false
	}
	if b.err != nil {
		return nil, waited
	}
	if b.n == 0 {
		// Keep the free region contiguous. Only the producer moves r while
		// nothing is buffered, so no reserved region is moved under it.
		b.r = 0
	}
	w := (b.r + b.n) % len(b.buf)
	if w < b.r {
		return b.buf[w:b.r], waited
	}
	return b.buf[w:], waited
}

// grow doubles the ring, up to max, keeping the buffered bytes in order.
// b.mu is held and the ring is full.
func (b *recvBuffer) grow() {
	size := min(max(2*len(b.buf), initialReceiveBuffer), b.max)
	grown := make([]byte, size)
	k := copy(grown, b.buf[b.r:])
	copy(grown[k:], b.buf[:b.r])
	b.buf, b.r = grown, 0
}

// commit makes k bytes written into the last reserved region readable.
func (b *recvBuffer) commit(k int) {
	if k == 0 {
		return
	}
	b.mu.Lock()
	b.n += k
	b.mu.Unlock()
	b.readable.Signal()
}

// end makes every later Read return err once the buffered bytes are read,
// or at once when discard is set, and wakes both sides. The first end wins.
func (b *recvBuffer) end(err error, discard bool) {
	b.mu.Lock()
	if b.err == nil {
		b.err, b.discard = err, discard
	}
	b.mu.Unlock()
	b.readable.Broadcast()
	b.writable.Broadcast()
}

// full reports whether the producer is waiting for the consumer: this side
// is not reading the socket, so the peer's silence cannot be observed.
func (b *recvBuffer) full() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stalled
}
