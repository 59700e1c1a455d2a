package websocket

// capacity reports the ring's current size, for tests of the bound.
func (b *recvBuffer) capacity() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.buf)
}

// buffered reports how many received bytes wait for Read.
func (b *recvBuffer) buffered() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}
