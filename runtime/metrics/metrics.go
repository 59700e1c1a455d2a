// Package metrics exposes what a tio server and its listeners do to
// Prometheus (prometheus/client_golang): sessions by mapping, how they
// ended, refusals, frames and bytes per lane, the emit queues, drops by
// cause, calls with their latency, limit hits and adapter events. Every
// series has low cardinality: mappings, lanes, reasons, close codes and the
// contract's call events, never a peer.
//
// Nothing registers globally: New registers on the Registerer it is given,
// and the operator mounts promhttp.HandlerFor on the matching Gatherer.
// The engine's per-message counters cost one atomic add each on the hot
// path, per session (no label lookup, no allocation); they are summed at
// scrape time, live sessions plus those that ended.
package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Lane is a transport-io lane as the frame counters split traffic (§3).
type Lane uint8

const (
	// LaneEmit is the emit stream's frames: handshake, EMIT, JOIN, LEAVE.
	LaneEmit Lane = iota
	// LaneDatagram is the unreliable lane: QUIC datagrams, or DATAGRAM
	// frames on the WebSocket mapping (§3.3).
	LaneDatagram
	// LaneCall is the call streams' frames: CALL_REQUEST, CALL_CREDIT,
	// CALL_RESPONSE, CALL_ERROR.
	LaneCall
	numLanes
)

var laneNames = [numLanes]string{"emit", "datagram", "call"}

// Mapping indexes the two mappings of §2 in the series' labels.
type Mapping uint8

const (
	WebTransport Mapping = iota
	WebSocket
	numMappings
)

var mappingNames = [numMappings]string{"webtransport", "websocket"}

// Drop is a cause for which a message is dropped rather than delivered or
// sent, each one of a session's Stats counters.
type Drop uint8

const (
	DropOverflow      Drop = iota // oldest datagram dropped from the full send ring (§9)
	DropStale                     // datagram past its TTL at dequeue (§9)
	DropStaleReceived             // datagram discarded by last-write-wins (§7.3)
	DropEarly                     // datagram before the peer's handshake (§7.5)
	DropUnknown                   // unknown event id (§5.4)
	DropValidation                // payload the handler refused WT_VALIDATION_FAILED
	DropDirection                 // event the sender's side does not send
	DropMalformed                 // malformed datagram (§7.2)
	NumDrops
)

var dropNames = [NumDrops]string{"overflow", "stale", "stale_received", "early", "unknown", "validation", "direction", "malformed"}

// Drops are one session's drop counts, indexed by Drop.
type Drops [NumDrops]int64

// Traffic is one session's frame and byte counters. The engine adds to it
// on its hot paths: one atomic add per count, on the session's own cache
// lines, which the scrape reads.
type Traffic struct {
	framesIn, bytesIn, framesOut, bytesOut [numLanes]atomic.Int64
}

// In counts one frame of n bytes received on lane.
func (t *Traffic) In(l Lane, n int) {
	t.framesIn[l].Add(1)
	t.bytesIn[l].Add(int64(n))
}

// InMany counts frames frames of n bytes in total received on lane.
func (t *Traffic) InMany(l Lane, frames, n int) {
	if frames == 0 {
		return
	}
	t.framesIn[l].Add(int64(frames))
	t.bytesIn[l].Add(int64(n))
}

// Out counts one frame of n bytes sent on lane.
func (t *Traffic) Out(l Lane, n int) {
	t.framesOut[l].Add(1)
	t.bytesOut[l].Add(int64(n))
}

// OutMany counts frames frames of n bytes in total sent on lane.
func (t *Traffic) OutMany(l Lane, frames, n int) {
	t.framesOut[l].Add(int64(frames))
	t.bytesOut[l].Add(int64(n))
}

// Session is what a source reports of one live session at a scrape.
type Session struct {
	Mapping    Mapping
	Traffic    *Traffic
	Drops      Drops
	QueueDepth int
}

// Source is a server whose live sessions the scrape walks: Live calls add
// once per live session. A session stops being live inside Ended, which
// holds the lock the scrape holds, so no count is seen twice or missed.
type Source interface {
	Live(add func(Session))
}

// Limit names a limit whose hits are counted.
type Limit uint8

const (
	LimitMaxCalls          Limit = iota // the 257th call stream reset WT_TOO_MANY_STREAMS (§10.1)
	LimitRequestBytes                   // a session's call requests over MaxRequestBytes
	LimitRequestBytesTotal              // all sessions' call requests over MaxRequestBytesTotal
	LimitRequestTimeout                 // a call request not whole within RequestTimeout
	LimitHandshakeTimeout               // no handshake within HandshakeTimeout (§4.1)
	LimitEmitQueue                      // a full emit queue not taken from within EmitStallTimeout, or full for a sender that cannot wait (§9)
	numLimits
)

var limitNames = [numLimits]string{"max_calls", "request_bytes", "request_bytes_total", "request_timeout", "handshake_timeout", "emit_queue"}

// Refusal is why a listener refused a peer before or at its session's start.
type Refusal uint8

const (
	RefusedMaxSessions              Refusal = iota // HTTP 503: MaxSessions held
	RefusedMaxSessionsPerAddress                   // HTTP 429: the address holds MaxSessionsPerAddress
	RefusedShuttingDown                            // HTTP 503: the listener is shutting down
	RefusedUnauthorized                            // Authorize refused: WT_UNAUTHORIZED (§4)
	RefusedAuthorizeFailed                         // Authorize reached no decision
	RefusedMaxConnections                          // QUIC: MaxConnections held, H3_EXCESSIVE_LOAD
	RefusedMaxConnectionsPerAddress                // QUIC: the address holds MaxConnectionsPerAddress
	RefusedNoRequest                               // QUIC: no whole request within RequestTimeout
	numRefusals
)

var refusalNames = [numRefusals]string{"max_sessions", "max_sessions_per_address", "shutting_down", "unauthorized", "authorize_failed", "max_connections", "max_connections_per_address", "no_request"}

// CallOutcome is how an answered call ended.
type CallOutcome uint8

const (
	CallOK        CallOutcome = iota // a response, or a stream's last element, and FIN
	CallError                        // a CALL_ERROR from the handler or its absence (§6.4)
	CallCancelled                    // the initiator cancelled, or the session ended (§8)
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "error", "cancelled"}

// Metrics holds the series of one server and its listeners. The zero of a
// *Metrics, nil, counts nothing: every method is a no-op on nil.
type Metrics struct {
	started  [numMappings]prometheus.Counter
	ended    *prometheus.CounterVec
	refused  [numMappings][numRefusals]prometheus.Counter
	limits   [numLimits]prometheus.Counter
	adapter  *prometheus.CounterVec
	handlerE *prometheus.CounterVec
	calls    *prometheus.CounterVec
	latency  *prometheus.HistogramVec

	// mu is held by the scrape and by Ended, so a session is reported
	// either live or ended.
	mu      sync.Mutex
	sources []Source
	// endedTraffic and endedDrops hold what the sessions that ended counted.
	endedTraffic [numMappings]Traffic
	endedDrops   [NumDrops]atomic.Int64

	live *liveCollector
}

// New makes the series and registers them on reg (a
// prometheus.NewRegistry(), or prometheus.DefaultRegisterer if the
// operator wants the process's default): nothing is registered anywhere
// else. It fails when reg already holds series of the same names.
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tio_sessions_ended_total", Help: "Sessions ended, by mapping and close code (§10.2; \"lost\" when no close arrived, §11).",
		}, []string{"mapping", "code"}),
		adapter: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tio_adapter_events_total", Help: "Events the adapter reported (disconnected, reconnected, gap, fenced).",
		}, []string{"kind"}),
		handlerE: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tio_handler_errors_total", Help: "Errors emit handlers returned, other than WT_VALIDATION_FAILED, by event.",
		}, []string{"event"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tio_calls_total", Help: "Calls this side answered, by event and outcome (ok, error, cancelled).",
		}, []string{"event", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tio_call_duration_seconds", Help: "Time from a call's whole request to its outcome, by event.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"event"}),
	}
	startedVec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tio_sessions_started_total", Help: "Sessions the server started serving, by mapping.",
	}, []string{"mapping"})
	refusedVec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tio_refusals_total", Help: "Peers a listener refused, by mapping and reason.",
	}, []string{"mapping", "reason"})
	limitVec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tio_limit_hits_total", Help: "Times a peer reached one of the engine's limits, by limit.",
	}, []string{"limit"})
	for mp := range numMappings {
		m.started[mp] = startedVec.WithLabelValues(mappingNames[mp])
		for r := range numRefusals {
			m.refused[mp][r] = refusedVec.WithLabelValues(mappingNames[mp], refusalNames[r])
		}
	}
	for l := range numLimits {
		m.limits[l] = limitVec.WithLabelValues(limitNames[l])
	}
	m.live = &liveCollector{m: m}
	for _, c := range []prometheus.Collector{startedVec, m.ended, refusedVec, limitVec, m.adapter, m.handlerE, m.calls, m.latency, m.live} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// AddSource makes the scrape walk src's live sessions; the returned func
// stops it.
func (m *Metrics) AddSource(src Source) (remove func()) {
	if m == nil {
		return func() {}
	}
	m.mu.Lock()
	m.sources = append(m.sources, src)
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for i, s := range m.sources {
			if s == src {
				m.sources = append(m.sources[:i], m.sources[i+1:]...)
				return
			}
		}
	}
}

// Started counts a session the server started serving.
func (m *Metrics) Started(mp Mapping) {
	if m != nil {
		m.started[mp].Inc()
	}
}

// Ended counts a session that ended with code ("lost" for none) and keeps
// its counts for later scrapes; forget, which takes the session out of its
// source's Live, runs under the scrape's lock. On a nil Metrics it only
// calls forget.
func (m *Metrics) Ended(mp Mapping, code string, t *Traffic, d Drops, forget func()) {
	if m == nil {
		forget()
		return
	}
	m.ended.WithLabelValues(mappingNames[mp], code).Inc()
	m.mu.Lock()
	defer m.mu.Unlock()
	forget()
	e := &m.endedTraffic[mp]
	for l := range numLanes {
		e.framesIn[l].Add(t.framesIn[l].Load())
		e.bytesIn[l].Add(t.bytesIn[l].Load())
		e.framesOut[l].Add(t.framesOut[l].Load())
		e.bytesOut[l].Add(t.bytesOut[l].Load())
	}
	for i, n := range d {
		m.endedDrops[i].Add(n)
	}
}

// Refused counts a peer a listener refused.
func (m *Metrics) Refused(mp Mapping, r Refusal) {
	if m != nil {
		m.refused[mp][r].Inc()
	}
}

// Hit counts a peer reaching a limit.
func (m *Metrics) Hit(l Limit) {
	if m != nil {
		m.limits[l].Inc()
	}
}

// AdapterEvent counts an event of the adapter's, by its kind's name.
func (m *Metrics) AdapterEvent(kind string) {
	if m != nil {
		m.adapter.WithLabelValues(kind).Inc()
	}
}

// HandlerError counts an error an emit handler of event returned.
func (m *Metrics) HandlerError(event string) {
	if m != nil {
		m.handlerE.WithLabelValues(event).Inc()
	}
}

// Call is the pre-resolved series of one call event: counting a call looks
// nothing up.
type Call struct {
	outcomes [numOutcomes]prometheus.Counter
	latency  prometheus.Observer
}

// Call resolves the series of call event name; nil on a nil Metrics.
func (m *Metrics) Call(name string) *Call {
	if m == nil {
		return nil
	}
	c := &Call{latency: m.latency.WithLabelValues(name)}
	for o := range numOutcomes {
		c.outcomes[o] = m.calls.WithLabelValues(name, outcomeNames[o])
	}
	return c
}

// Done counts one call's outcome and observes its duration.
func (c *Call) Done(o CallOutcome, d time.Duration) {
	if c == nil {
		return
	}
	c.outcomes[o].Inc()
	c.latency.Observe(d.Seconds())
}

// liveCollector reports the series summed over live and ended sessions at
// each scrape.
type liveCollector struct{ m *Metrics }

var (
	descOpen       = prometheus.NewDesc("tio_sessions_open", "Sessions open now, by mapping.", []string{"mapping"}, nil)
	descFramesIn   = prometheus.NewDesc("tio_frames_received_total", "Frames received, by mapping and lane (emit, datagram, call).", []string{"mapping", "lane"}, nil)
	descFramesOut  = prometheus.NewDesc("tio_frames_sent_total", "Frames sent, by mapping and lane (emit, datagram, call).", []string{"mapping", "lane"}, nil)
	descBytesIn    = prometheus.NewDesc("tio_bytes_received_total", "Bytes of the frames received, headers included, by mapping and lane.", []string{"mapping", "lane"}, nil)
	descBytesOut   = prometheus.NewDesc("tio_bytes_sent_total", "Bytes of the frames sent, headers included, by mapping and lane.", []string{"mapping", "lane"}, nil)
	descDropped    = prometheus.NewDesc("tio_dropped_total", "Messages dropped instead of delivered or sent, by reason.", []string{"reason"}, nil)
	descQueue      = prometheus.NewDesc("tio_emit_queue_frames", "Frames waiting in all sessions' emit queues now (§9).", nil, nil)
	descQueueMax   = prometheus.NewDesc("tio_emit_queue_frames_max", "The deepest session emit queue now, in frames (bound 256, §9).", nil, nil)
	liveCollectors = []*prometheus.Desc{descOpen, descFramesIn, descFramesOut, descBytesIn, descBytesOut, descDropped, descQueue, descQueueMax}
)

func (c *liveCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range liveCollectors {
		ch <- d
	}
}

func (c *liveCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	var open [numMappings]int
	var in, out, bin, bout [numMappings][numLanes]int64
	var drops Drops
	queued, deepest := 0, 0
	add := func(s Session) {
		open[s.Mapping]++
		for l := range numLanes {
			in[s.Mapping][l] += s.Traffic.framesIn[l].Load()
			out[s.Mapping][l] += s.Traffic.framesOut[l].Load()
			bin[s.Mapping][l] += s.Traffic.bytesIn[l].Load()
			bout[s.Mapping][l] += s.Traffic.bytesOut[l].Load()
		}
		for i, n := range s.Drops {
			drops[i] += n
		}
		queued += s.QueueDepth
		deepest = max(deepest, s.QueueDepth)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, src := range m.sources {
		src.Live(add)
	}
	for mp := range numMappings {
		e := &m.endedTraffic[mp]
		ch <- prometheus.MustNewConstMetric(descOpen, prometheus.GaugeValue, float64(open[mp]), mappingNames[mp])
		for l := range numLanes {
			labels := []string{mappingNames[mp], laneNames[l]}
			ch <- prometheus.MustNewConstMetric(descFramesIn, prometheus.CounterValue, float64(in[mp][l]+e.framesIn[l].Load()), labels...)
			ch <- prometheus.MustNewConstMetric(descFramesOut, prometheus.CounterValue, float64(out[mp][l]+e.framesOut[l].Load()), labels...)
			ch <- prometheus.MustNewConstMetric(descBytesIn, prometheus.CounterValue, float64(bin[mp][l]+e.bytesIn[l].Load()), labels...)
			ch <- prometheus.MustNewConstMetric(descBytesOut, prometheus.CounterValue, float64(bout[mp][l]+e.bytesOut[l].Load()), labels...)
		}
	}
	for i := range NumDrops {
		ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(drops[i]+m.endedDrops[i].Load()), dropNames[i])
	}
	ch <- prometheus.MustNewConstMetric(descQueue, prometheus.GaugeValue, float64(queued))
	ch <- prometheus.MustNewConstMetric(descQueueMax, prometheus.GaugeValue, float64(deepest))
}
