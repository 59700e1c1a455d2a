package websocket

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	cws "github.com/coder/websocket"

	"github.com/transport-io/tiogen/runtime/transport"
)

// The emit lane's shape: frames of one size, coalesced by the engine's
// writer into one Write of up to benchBatchBytes, read in Reads of
// readSize: 4 KiB is the engine's frame reader (its read-ahead), 64 KiB a
// reader that takes whole batches. The raw baseline writes the same batches
// with plain coder/websocket and reads them with its message Reader into
// the same buffer, in the same run.
const benchBatchBytes = 64 << 10

func BenchmarkEmit(b *testing.B) {
	for _, readSize := range []int{4 << 10, 64 << 10} {
		for _, frame := range []int{64, 1024} {
			batch := make([]byte, benchBatchBytes/frame*frame)
			framesPerBatch := len(batch) / frame
			name := fmt.Sprintf("%dB/read%dK", frame, readSize>>10)
			b.Run("raw/"+name, func(b *testing.B) {
				benchRaw(b, batch, framesPerBatch, readSize)
			})
			b.Run("conn/"+name, func(b *testing.B) {
				benchConn(b, batch, framesPerBatch, readSize)
			})
		}
	}
}

// benchRaw measures plain coder/websocket: the client writes b.N batches,
// the server reads every byte.
func benchRaw(b *testing.B, batch []byte, framesPerBatch, readSize int) {
	read := make(chan int64, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := cws.Accept(w, r, nil)
		if err != nil {
			return
		}
		ws.SetReadLimit(-1)
		buf := make([]byte, readSize)
		var total int64
		for {
			_, mr, err := ws.Reader(context.Background())
			if err != nil {
				read <- total
				return
			}
			for {
				n, err := mr.Read(buf)
				total += int64(n)
				if err == io.EOF {
					break
				}
				if err != nil {
					read <- total
					return
				}
			}
		}
	}))
	defer srv.Close()
	ws, _, err := cws.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	for range b.N {
		if err := ws.Write(context.Background(), cws.MessageBinary, batch); err != nil {
			b.Fatal(err)
		}
	}
	_ = ws.Close(cws.StatusNormalClosure, "")
	total := <-read
	b.StopTimer()
	report(b, total, len(batch), framesPerBatch)
}

// benchConn measures the mapping: the client's emit stream writes b.N
// batches, the server's engine-side Reads take every byte.
func benchConn(b *testing.B, batch []byte, framesPerBatch, readSize int) {
	read := make(chan int64, 1)
	srv := httptest.NewServer(&Handler{OnSession: func(c transport.Conn, _ *transport.Request, _ any) {
		rs, _ := c.AcceptEmit(context.Background())
		buf := make([]byte, readSize)
		var total int64
		for {
			n, err := rs.Read(buf)
			total += int64(n)
			if err != nil {
				read <- total
				return
			}
		}
	}})
	defer srv.Close()
	c, err := Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"), DialOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ss, _ := c.OpenEmit(context.Background())
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	for range b.N {
		if _, err := ss.Write(batch); err != nil {
			b.Fatal(err)
		}
	}
	_ = c.Close(0, "")
	total := <-read
	b.StopTimer()
	report(b, total, len(batch), framesPerBatch)
}

func report(b *testing.B, total int64, batchLen, framesPerBatch int) {
	if total != int64(b.N)*int64(batchLen) {
		b.Fatalf("read %d bytes, want %d", total, int64(b.N)*int64(batchLen))
	}
	b.ReportMetric(float64(b.N*framesPerBatch)/b.Elapsed().Seconds(), "frames/s")
}
