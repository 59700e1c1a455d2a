package loopback

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"sync"
	"testing"
)

// Many call streams carry data both ways at once through a small window
// with split reads; every byte arrives intact and in order, and every
// goroutine ends once the session closes.
func TestConcurrentStreamsUnderSmallWindow(t *testing.T) {
	c, s, l := pair(t, Options{StreamWindow: 64, SplitWrites: true})
	const streams, size = 32, 8 << 10
	payload := func(i int) []byte {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(i*31 + j)
		}
		return b
	}
	ctx := ctxShort(t)
	var wg sync.WaitGroup
	// Responder: echo each stream's request back, reversed in direction.
	wg.Go(func() {
		var echoes sync.WaitGroup
		defer echoes.Wait()
		for range streams {
			st, err := s.AcceptCall(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			echoes.Go(func() {
				if _, err := io.Copy(st, st); err != nil {
					t.Error(err)
					return
				}
				st.Close()
			})
		}
	})
	for i := range streams {
		wg.Go(func() {
			st, err := c.OpenCall(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			want := payload(i)
			go func() { st.Write(want); st.Close() }()
			got, err := io.ReadAll(st)
			if err != nil {
				t.Error(err)
				return
			}
			if !bytes.Equal(got, want) {
				t.Errorf("stream %d: echo differs (sha %x vs %x)", i, sha256.Sum256(got), sha256.Sum256(want))
			}
		})
	}
	wg.Wait()
	st := l.Stats()
	if st.ClientToServer.StreamBytes != streams*size || st.ServerToClient.StreamBytes != streams*size {
		t.Fatalf("stream bytes %d / %d, want %d each way", st.ClientToServer.StreamBytes, st.ServerToClient.StreamBytes, streams*size)
	}
	c.Close(0, "")
}

// Datagrams sent from many goroutines while the session closes: no panic,
// no race, no goroutine left.
func TestConcurrentDatagramsAndClose(t *testing.T) {
	c, s, l := pair(t, Options{})
	l.DuplicateDatagrams(true)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 500 {
				if c.SendDatagram([]byte("x")) != nil {
					return
				}
			}
		})
	}
	wg.Go(func() {
		for {
			if _, err := s.ReceiveDatagram(context.Background()); err != nil {
				return
			}
		}
	})
	wg.Go(func() { l.ReorderDatagrams(true); l.ReorderDatagrams(false) })
	c.Close(0, "")
	wg.Wait()
}
