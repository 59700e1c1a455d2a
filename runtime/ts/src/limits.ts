// The runtime's numbers: the spec's deadlines and bounds it applies, and its
// own sizes. A module of constants alone, importing nothing, so a bundler
// (esbuild) inlines each where it is used; the modules using them re-export
// the public ones.

// ---- the session engine ----------------------------------------------

/** The handshake deadline, in ms (§4.1). */
export const HandshakeTimeout = 5000;
/** A peer's emit queue bound, in frames (§9). */
export const EmitQueueFrames = 256;
/** A responder's starting credit (§6.6). */
export const InitialCredit = 32;
/** The refill an initiator grants per consumed batch (§6.6); never above InitialCredit. */
export const CreditBatch = 16;
/** The emit queue depth under which queued unreliable frames move onto the emit lane (§3.3). */
export const DatagramLaneMark = 32;
/** Call streams the peer opened that this side answers at once; past it they are reset WT_TOO_MANY_STREAMS (§10.1), as the Go runtime's MaxCalls. */
export const MaxCalls = 256;
/** How long the first frame of a call stream the peer opened may take to arrive, in ms (as the Go runtime's DefaultRequestTimeout). */
export const RequestTimeout = 120_000;
/** The size of the emit writer's writes: frames are coalesced up to it. */
export const emitFlushAt = 64 << 10;
/**
 * What a client stamps on its datagrams. A client has no allocated origin
 * (origins are issued by the session host, §7.3); its server's gate sees a
 * single sender on the session, so any non-zero value keys it.
 */
export const clientOrigin = 1;

// ---- the datagram gate (§7.3) -------------------------------------------

/** How long a receiver keeps an (origin, event) pair's state with no datagram for it, in ms (§7.3). */
export const SequenceRetention = 60_000;
/** How many pairs a gate tracks (as the Go runtime's datagram.GateCapacity). */
export const GateCapacity = 16384;

// ---- both connectors ---------------------------------------------------

/**
 * How long a connector's session may take to become ready (WebTransport)
 * or its socket's opening handshake (WebSocket), in ms. A browser's own
 * wait can be far longer: Firefox waits 30 s on a dead UDP path.
 */
export const DefaultConnectTimeoutMs = 10000;

// ---- the WebTransport connector ----------------------------------------

/** §10.3: how long the HTTPS HEAD that tells a blocked UDP path from a dead server may take. */
export const ProbeTimeoutMs = 2000;
/** §10.3: what the origin answers over HTTPS when it is up. */
export const WellKnownPath = '/.well-known/transport-io';
/**
 * How long a stream that failed waits for the session's close to say why.
 * Chromium fails the emit stream of a refused session before it delivers
 * the close code (§4), so a refusal is reported as one, not as a lost
 * session; Firefox reports a peer's reset with no code, told from a closing
 * session only by the session not closing.
 */
export const CloseWaitMs = 1000;
/**
 * Datagrams handed to the browser and not yet taken. The rest wait in the
 * engine's ring (§9: 64 frames, the oldest and the stale dropped and
 * counted), so what is sent is the newest the browser can take.
 */
export const maxDatagramsInFlight = 16;

// ---- the WebSocket connector -------------------------------------------

/** §3.3: an empty binary message is sent once this long has passed with nothing sent. */
export const KeepaliveIntervalMs = 15000;
/** §3.3: the session closes WT_IDLE_TIMEOUT once this long has passed with nothing received. */
export const IdleTimeoutMs = 45000;
/**
 * A socket cannot be paused from JavaScript, so bytes the engine has not
 * read yet queue here; past this bound this side is too slow for the peer
 * and closes WT_PEER_TOO_SLOW rather than grow without bound (§9). It is
 * the one bound on what arrives: a message of any size is bytes of the
 * stream (§3.3: message boundaries carry no meaning), and the socket has
 * buffered it whole before the page sees it, so a cap per message would
 * bound no memory, only refuse a peer that writes larger messages.
 */
export const MaxUnreadBytes = 16 << 20;
/** How long a failed write waits for the socket's close to say why (§4) before the session is lost. */
export const CloseGraceMs = 1000;

// A write resolves once the socket's own buffer is below this, so the
// engine's bounded emit queue (§9) sees a slow peer instead of the socket
// buffering without bound.
export const sendHighWater = 1 << 20;
// How often a write waiting on sendHighWater looks again (a WebSocket has
// no event for a drained buffer).
export const drainPollMs = 5;

// WebSocket.readyState's open value.
export const OPEN = 1;
