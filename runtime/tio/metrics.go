package tio

import (
	"strings"

	"github.com/transport-io/tiogen/runtime/metrics"
	"github.com/transport-io/tiogen/runtime/transport"
	"github.com/transport-io/tiogen/runtime/wire"
)

// serverMetrics is a server's link to its opt-in metrics
// (ServerOptions.Metrics): the call series resolved once per call event, so
// counting a call looks nothing up but the event's map entry.
type serverMetrics struct {
	m      *metrics.Metrics
	calls  map[uint32]*metrics.Call
	remove func()
}

func newServerMetrics(srv *Server, m *metrics.Metrics) serverMetrics {
	sm := serverMetrics{m: m, remove: func() {}}
	if m == nil {
		return sm
	}
	sm.calls = make(map[uint32]*metrics.Call)
	for id, ev := range srv.contract.byID {
		if ev.Kind != Emit && ev.sentBy(roleClient) {
			sm.calls[id] = m.Call(ev.Name)
		}
	}
	sm.remove = m.AddSource(srv)
	return sm
}

// Metrics is ServerOptions.Metrics: a listener counts its refusals there.
func (srv *Server) Metrics() *metrics.Metrics { return srv.opts.Metrics }

// Live reports this server's live sessions to a scrape (metrics.Source).
func (srv *Server) Live(add func(metrics.Session)) {
	srv.mu.RLock()
	defer srv.mu.RUnlock()
	for _, m := range srv.peers.list {
		p := m.p
		add(metrics.Session{Mapping: metricsMapping(p.mapping), Traffic: &p.traffic, Drops: p.drops(), QueueDepth: p.q.depth()})
	}
}

func metricsMapping(m transport.Mapping) metrics.Mapping {
	if m == transport.WebSocket {
		return metrics.WebSocket
	}
	return metrics.WebTransport
}

// drops are the session's Stats as the metrics' drop causes.
func (s *session) drops() metrics.Drops {
	st := s.snapshot()
	var d metrics.Drops
	d[metrics.DropOverflow] = st.OverflowDropped
	d[metrics.DropStale] = st.StaleDropped
	d[metrics.DropStaleReceived] = st.StaleReceived
	d[metrics.DropEarly] = st.EarlyDiscarded
	d[metrics.DropUnknown] = st.UnknownDropped
	d[metrics.DropValidation] = st.ValidationDropped
	d[metrics.DropDirection] = st.DirectionDropped
	d[metrics.DropMalformed] = st.MalformedDropped
	return d
}

// endCode is the close code a session ended with, as the metric's label:
// the WT_* name, or "lost" when no close arrived (§11).
func endCode(err *Error) string {
	var end *SessionEnd
	if err == nil {
		return "lost"
	}
	if e, ok := err.Err.(*SessionEnd); ok {
		end = e
	}
	if end == nil || end.Lost {
		return "lost"
	}
	if strings.HasPrefix(string(end.Code), "WT_CLOSE_") {
		return "other" // a code outside §10.2: no label per number a peer picks
	}
	return string(end.Code)
}

// callMetrics are the series of an answered call's event; nil (counting
// nothing) on a client or a server without metrics.
func (s *session) callMetrics(ev *Event) *metrics.Call {
	if s.metrics == nil {
		return nil
	}
	p, ok := s.owner.(*Peer)
	if !ok {
		return nil
	}
	return p.srv.metrics.calls[ev.ID]
}

// laneOf is the lane a frame of the emit stream counts on: a DATAGRAM
// frame carries the unreliable lane over WebSocket (§3.3).
func laneOf(t wire.FrameType) metrics.Lane {
	if t == wire.FrameDatagram {
		return metrics.LaneDatagram
	}
	return metrics.LaneEmit
}

// frameLen is a received frame's size on the wire.
func frameLen(f wire.Frame) int { return wire.HeaderLen + len(f.Payload) }
