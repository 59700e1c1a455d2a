package transport

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"strings"

	"github.com/transport-io/tiogen/runtime/wire"
)

// Logs never carry a query string: it is where browsers put session tokens,
// since a WebTransport or WebSocket request has no other place for them.
// A listener logs through QuietQueries, and an http.Server's ErrorLog, which
// quotes the bytes of bogus requests, is HTTPErrorLog.

// QuietQueries wraps h so that no record it handles carries a query string,
// in its message or in any string, error or Stringer attribute.
func QuietQueries(h slog.Handler) slog.Handler {
	if q, ok := h.(quietHandler); ok {
		return q
	}
	return quietHandler{h}
}

type quietHandler struct{ next slog.Handler }

func (q quietHandler) Enabled(ctx context.Context, l slog.Level) bool { return q.next.Enabled(ctx, l) }

func (q quietHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, wire.RedactQueries(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(quietAttr(a))
		return true
	})
	return q.next.Handle(ctx, out)
}

func (q quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	quiet := make([]slog.Attr, len(as))
	for i, a := range as {
		quiet[i] = quietAttr(a)
	}
	return quietHandler{q.next.WithAttrs(quiet)}
}

func (q quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{q.next.WithGroup(name)}
}

func quietAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, wire.RedactQueries(v.String()))
	case slog.KindGroup:
		as := v.Group()
		quiet := make([]any, len(as))
		for i, g := range as {
			quiet[i] = quietAttr(g)
		}
		return slog.Group(a.Key, quiet...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, wire.RedactQueries(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, wire.RedactQueries(x.String()))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// HTTPErrorLog is an http.Server's ErrorLog that logs to l with no query
// string: a handler's panic that net/http recovered at Error level, where
// an operator sees it, and the rest (bogus requests, TLS handshake errors:
// any peer can provoke them) at Debug.
func HTTPErrorLog(l *slog.Logger) *log.Logger {
	return log.New(httpErrorWriter{slog.New(QuietQueries(l.Handler()))}, "", 0)
}

type httpErrorWriter struct{ l *slog.Logger }

func (w httpErrorWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	level := slog.LevelDebug
	if strings.Contains(msg, "panic serving") {
		level = slog.LevelError
	}
	w.l.Log(context.Background(), level, msg)
	return len(p), nil
}
