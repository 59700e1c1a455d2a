package tio

import (
	"context"
	"log/slog"
	"time"

	"github.com/transport-io/tiogen/runtime/adapter"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// The engine's log lines (ServerOptions.Logger), each session's with its
// "session" (Peer.ID) and "mapping" attributes: a session's start and
// normal end at Debug (one of each per session); an end with an error
// code at Info, since any peer can provoke one; a call handler's panic at
// Error; the adapter's events at Warn, and its recovery at Info. No line
// carries a payload, and every line goes through transport.QuietQueries,
// so no query string reaches it (§4.3: tokens travel there).

func newServerLog(l *slog.Logger) *slog.Logger {
	if l == nil {
		l = slog.Default()
	}
	return slog.New(transport.QuietQueries(l.Handler()))
}

// logAt logs one of a server session's lines to the server's logger with
// its "session" and "mapping" attributes, added to the line rather than by
// a logger made per session, which every idle session would hold; a client
// logs nothing.
func (s *session) logAt(level slog.Level, msg string, attrs ...any) {
	ctx := context.Background()
	p, ok := s.owner.(*Peer)
	if !ok || !p.srv.log.Enabled(ctx, level) {
		return
	}
	p.srv.log.Log(ctx, level, msg, append([]any{"session", p.ID(), "mapping", s.mapping.String()}, attrs...)...)
}

// logEnd logs how a peer's session ended.
func (p *Peer) logEnd(began time.Time) {
	level := slog.LevelDebug
	attrs := []any{"duration_ms", p.opts.Clock.Now().Sub(began).Milliseconds()}
	var end *SessionEnd
	if e, ok := p.err.Err.(*SessionEnd); ok {
		end = e
	}
	switch {
	case end == nil || end.Lost:
		attrs = append(attrs, "lost", true)
	default:
		by := "server"
		if end.ByPeer {
			by = "peer"
		}
		attrs = append(attrs, "code", string(end.Code), "reason", end.Reason, "by", by)
		if end.Code != wire.NoError {
			level = slog.LevelInfo
		}
	}
	p.logAt(level, "session ended", attrs...)
}

// logPanic reports a call handler's panic, which the caller receives as
// WT_HANDLER_ERROR: a bug of the application's, at Error.
func (s *session) logPanic(ev *Event, recovered any) {
	s.logAt(slog.LevelError, "a call handler panicked; the caller received WT_HANDLER_ERROR", "event", ev.Name, "panic", recovered)
}

// logEmitPanic reports an emit handler's panic, recovered so that the
// session reads on: a bug of the application's, at Error.
func (p *Peer) logEmitPanic(ev *Event, recovered any) {
	p.logAt(slog.LevelError, "an emit handler panicked; the message was dropped and the session goes on", "event", ev.Name, "panic", recovered)
}

// logAdapterEvent reports what the adapter said.
func (srv *Server) logAdapterEvent(e adapter.Event) {
	level := slog.LevelWarn
	if e.Kind == adapter.Reconnected {
		level = slog.LevelInfo
	}
	attrs := []any{"kind", e.Kind.String()}
	if e.Room != "" {
		attrs = append(attrs, "room", e.Room)
	}
	if e.Node != "" {
		attrs = append(attrs, "node", e.Node)
	}
	if e.Err != nil {
		attrs = append(attrs, "err", e.Err.Error())
	}
	srv.log.Log(context.Background(), level, "adapter event", attrs...)
}
