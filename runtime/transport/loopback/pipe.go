package loopback

import (
	"io"
	"math/rand/v2"
	"sync"

	"github.com/transport-io/tiogen/runtime/transport"
)

// pipe is one direction of a stream: a byte buffer bounded by the link's
// window, with QUIC's ways for each end to stop the other.
type pipe struct {
	link     *Link
	reader   Side
	stats    *directionStats
	onFinish func() // once both ends are done with the pipe; may be nil

	readable chan struct{} // capacity 1: something for the reader changed
	writable chan struct{} // capacity 1: something for the writer changed

	mu       sync.Mutex
	buf      []byte
	off      int // read position in buf
	fin      bool
	reset    bool
	stopped  bool
	code     uint8 // of the reset or stop
	finished bool
	chunks   *rand.Rand // SplitWrites: sizes of the reads; nil otherwise

	// sendEnded is set once the writer finished or reset, or the reader
	// stopped; afterEnd are the functions AfterStopped registered to run
	// then.
	sendEnded bool
	afterEnd  []*func()
}

func (l *Link) newPipe(reader Side, stats *directionStats, onFinish func()) *pipe {
	p := &pipe{
		link:     l,
		reader:   reader,
		stats:    stats,
		onFinish: onFinish,
		readable: make(chan struct{}, 1),
		writable: make(chan struct{}, 1),
	}
	if l.split {
		l.mu.Lock()
		l.seq++
		p.chunks = rand.New(rand.NewPCG(uint64(reader), l.seq))
		l.mu.Unlock()
	}
	return p
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (p *pipe) buffered() int { return len(p.buf) - p.off }

// endSendLocked marks the send side ended and starts what AfterStopped
// registered; p.mu is held.
func (p *pipe) endSendLocked() {
	if p.sendEnded {
		return
	}
	p.sendEnded = true
	for _, f := range p.afterEnd {
		go (*f)()
	}
	p.afterEnd = nil
}

// afterSendEnded is the stream's AfterStopped (context.AfterFunc's
// contract, without a context).
func (p *pipe) afterSendEnded(f func()) (stop func() bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sendEnded {
		go f()
		return func() bool { return false }
	}
	entry := &f
	p.afterEnd = append(p.afterEnd, entry)
	return func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for i, e := range p.afterEnd {
			if e == entry {
				p.afterEnd = append(p.afterEnd[:i], p.afterEnd[i+1:]...)
				return true
			}
		}
		return false
	}
}

// finishLocked marks the pipe done for both ends; p.mu is held.
func (p *pipe) finishLocked() {
	if p.finished {
		return
	}
	p.finished = true
	if p.onFinish != nil {
		p.onFinish()
	}
}

// writeErrLocked is why a write cannot proceed now, if it cannot; p.mu is
// held.
func (p *pipe) writeErrLocked() error {
	switch {
	case p.link.isDone():
		return ErrSessionEnded
	case p.reset:
		return &transport.StreamError{Code: p.code}
	case p.stopped:
		return &transport.StreamError{Code: p.code, Remote: true}
	case p.fin:
		return errWriteAfterClose
	}
	return nil
}

func (p *pipe) write(b []byte) (int, error) {
	n := 0
	for {
		p.mu.Lock()
		// Bytes already handed over stay written even if the peer stops the
		// stream now, as on QUIC: only an unfinished write fails.
		if n > 0 && n == len(b) {
			p.mu.Unlock()
			return n, nil
		}
		if err := p.writeErrLocked(); err != nil {
			p.mu.Unlock()
			return n, err
		}
		if n == len(b) {
			p.mu.Unlock()
			return n, nil
		}
		if space := p.link.window - p.buffered(); space > 0 {
			k := min(space, len(b)-n)
			if p.off > 0 && len(p.buf)+k > cap(p.buf) {
				p.buf = p.buf[:copy(p.buf, p.buf[p.off:])]
				p.off = 0
			}
			p.buf = append(p.buf, b[n:n+k]...)
			n += k
			p.stats.streamBytes.Add(uint64(k))
			if space > k {
				signal(p.writable) // room for another writer
			}
			p.mu.Unlock()
			signal(p.readable)
			continue
		}
		p.mu.Unlock()
		select {
		case <-p.writable:
		case <-p.link.done:
		}
	}
}

func (p *pipe) closeWrite() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.link.isDone():
		return ErrSessionEnded
	case p.reset:
		return errResetAfterFinish
	case p.stopped, p.fin:
		return nil
	}
	p.fin = true
	p.endSendLocked()
	signal(p.readable)
	return nil
}

func (p *pipe) resetWrite(code uint8) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reset || p.stopped || p.finished {
		return
	}
	p.reset, p.code = true, code
	p.endSendLocked()
	p.discardLocked()
}

func (p *pipe) read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		if stall := p.link.stall[p.reader].Load(); stall != nil {
			select {
			case <-*stall:
			case <-p.link.done:
				return 0, ErrSessionEnded
			}
			continue
		}
		p.mu.Lock()
		switch {
		case p.stopped:
			p.mu.Unlock()
			return 0, &transport.StreamError{Code: p.code}
		case p.reset:
			p.mu.Unlock()
			return 0, &transport.StreamError{Code: p.code, Remote: true}
		case p.link.isDone():
			p.mu.Unlock()
			return 0, ErrSessionEnded
		}
		if avail := p.buffered(); avail > 0 {
			k := min(avail, len(b))
			if p.chunks != nil {
				k = min(k, 1+p.chunks.IntN(7))
			}
			copy(b, p.buf[p.off:p.off+k])
			p.off += k
			if p.off == len(p.buf) {
				p.buf, p.off = p.buf[:0], 0
				if p.fin {
					// The end of stream comes with the last bytes, as
					// quic-go returns it.
					p.finishLocked()
					p.mu.Unlock()
					signal(p.writable)
					return k, io.EOF
				}
			} else {
				signal(p.readable) // more for another reader
			}
			p.mu.Unlock()
			signal(p.writable)
			return k, nil
		}
		if p.fin {
			p.finishLocked()
			p.mu.Unlock()
			return 0, io.EOF
		}
		p.mu.Unlock()
		select {
		case <-p.readable:
		case <-p.link.done:
		}
	}
}

func (p *pipe) stopRead(code uint8) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reset || p.stopped || p.finished {
		return
	}
	p.stopped, p.code = true, code
	p.endSendLocked()
	p.discardLocked()
}

// discardLocked drops the unread bytes after a reset or stop and wakes both
// ends; p.mu is held.
func (p *pipe) discardLocked() {
	p.buf, p.off = nil, 0
	p.finishLocked()
	signal(p.readable)
	signal(p.writable)
}

func (l *Link) isDone() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// sendStream is the sending half of a pipe.
type sendStream struct{ p *pipe }

func (s sendStream) Write(b []byte) (int, error) { return s.p.write(b) }
func (s sendStream) Close() error                { return s.p.closeWrite() }
func (s sendStream) Reset(code uint8)            { s.p.resetWrite(code) }

// receiveStream is the receiving half of a pipe.
type receiveStream struct{ p *pipe }

func (s receiveStream) Read(b []byte) (int, error) { return s.p.read(b) }
func (s receiveStream) Stop(code uint8)            { s.p.stopRead(code) }

// stream is a call stream: this side's sending pipe and the peer's.
type stream struct {
	sendStream
	receiveStream
}

// AfterStopped runs f once this side's send pipe ended: finished, reset, or
// stopped by the peer.
func (s *stream) AfterStopped(f func()) (stop func() bool) {
	return s.sendStream.p.afterSendEnded(f)
}

var (
	_ transport.SendStream    = sendStream{}
	_ transport.ReceiveStream = receiveStream{}
	_ transport.Stream        = (*stream)(nil)
)
