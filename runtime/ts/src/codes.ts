// Every WT_* code of the transport-io protocol, version 0 (§10), with its
// number where it has one and the remedy the spec gives. Mirrors the Go
// runtime's wire/code.go name for name and remedy for remedy.

// Every number first, one constant each, the tables after them: esbuild
// inlines a constant of this module (it imports nothing) where it is used,
// which it cannot do for a table's properties, and only for constants
// declared before the module's first other statement.

// Session close codes (§10.2), as the Go runtime's wire.Close*.
export const CloseNoError = 0;
export const CloseProtocolVersionMismatch = 1000;
export const CloseContractMismatch = 1001;
export const CloseHandshakeTimeout = 1002;
export const ClosePeerTooSlow = 1003;
export const CloseProtocolError = 1004;
export const CloseIdleTimeout = 1005;
export const CloseReliabilityRefused = 1006;
export const CloseUnauthorized = 1007;

// Stream reset codes (§10.1): one byte each; 2–8 and 10–255 are reserved
// (§8). Constants as the Go runtime's wire.Reset*.
export const ResetNoError = 0;
export const ResetAborted = 1;
export const ResetTooManyStreams = 9;

/** The §3.3 mapping of session close codes onto WebSocket close codes. */
export const WebSocketNormalClosure = 1000;
/** Added to every §10.2 code but WT_NO_ERROR on the WebSocket mapping (§3.3). */
export const WebSocketCodeBase = 3000;
/** The last close code an application may send (RFC 6455 §7.4.2). */
const webSocketCodeMax = 4999;
/** RFC 6455's "unexpected condition": a code too large to carry. */
export const WebSocketInternalError = 1011;

/** Close-reason limits (§3.3, §4, §10.2). */
export const MaxCloseReason = 1024;
/** The longest reason the WebSocket mapping carries, and so the longest refusal reason (§3.3, §4). */
export const MaxWebSocketReason = 123;

/** Session close codes (§10.2) by name: the u32 of a WebTransport session close. */
export const SessionCode = {
  WT_NO_ERROR: CloseNoError,
  WT_PROTOCOL_VERSION_MISMATCH: CloseProtocolVersionMismatch,
  WT_CONTRACT_MISMATCH: CloseContractMismatch,
  WT_HANDSHAKE_TIMEOUT: CloseHandshakeTimeout,
  WT_PEER_TOO_SLOW: ClosePeerTooSlow,
  WT_PROTOCOL_ERROR: CloseProtocolError,
  WT_IDLE_TIMEOUT: CloseIdleTimeout,
  WT_RELIABILITY_REFUSED: CloseReliabilityRefused,
  WT_UNAUTHORIZED: CloseUnauthorized,
} as const;

/** Stream reset codes (§10.1) by name. */
export const ResetCode = {
  WT_NO_ERROR: ResetNoError,
  WT_ABORTED: ResetAborted,
  WT_TOO_MANY_STREAMS: ResetTooManyStreams,
} as const;

/** Every known code's remedy, as the Go runtime's wire/code.go gives it. */
const remedies: Record<KnownCode, string> = {
  WT_NO_ERROR: 'Nothing to do.',
  WT_ABORTED: 'Abandon the work.',
  WT_TOO_MANY_STREAMS: 'Make fewer calls at once.',
  WT_PROTOCOL_VERSION_MISMATCH: 'Upgrade one side.',
  WT_CONTRACT_MISMATCH: 'Deploy one contract on both sides.',
  WT_HANDSHAKE_TIMEOUT: 'Check the peer speaks transport-io.',
  WT_PEER_TOO_SLOW: 'Consume faster.',
  WT_PROTOCOL_ERROR: 'Fix the peer.',
  WT_IDLE_TIMEOUT: 'Reconnect.',
  WT_RELIABILITY_REFUSED: 'Use datagrams, or declare fallbacks.',
  WT_UNAUTHORIZED: 'Retry only with a new credential.',
  WT_NO_SUPPORT: 'Use WebTransport, or a WebSocket fallback.',
  WT_LANE_UNAVAILABLE: 'Make calls over WebTransport.',
  WT_DATAGRAM_TOO_LARGE: 'Send less, or make the event reliable.',
  WT_ROOM_NOT_JOINED: 'Join the room first.',
  WT_SESSION_CLOSED: 'Reconnect and retry.',
  WT_HANDSHAKE_FAILED: 'Check the server and its certificate.',
  WT_UDP_UNREACHABLE: 'Open UDP to the server.',
  WT_CERT_EXPIRED: 'Mint a new certificate and reload.',
  WT_DEV_ONLY: 'Use it from loopback only.',
  WT_PORT_IN_USE: 'Free the port or pass another.',
  WT_PAYLOAD_TOO_LARGE: 'Send smaller payloads.',
  WT_UNSUPPORTED_CODEC: 'Send codec 0x01 or 0x02.',
  WT_UNKNOWN_EVENT: 'Deploy one contract on both sides.',
  WT_VALIDATION_FAILED: 'Match the schema.',
  WT_HANDLER_ERROR: "See the responder's logs.",
};

/** Local codes (§10.3): raised to the application, never transmitted. */
export const LocalCodes = [
  'WT_NO_SUPPORT',
  'WT_LANE_UNAVAILABLE',
  'WT_DATAGRAM_TOO_LARGE',
  'WT_ROOM_NOT_JOINED',
  'WT_SESSION_CLOSED',
  'WT_HANDSHAKE_FAILED',
  'WT_UDP_UNREACHABLE',
  'WT_CERT_EXPIRED',
  'WT_DEV_ONLY',
  'WT_PORT_IN_USE',
] as const;

/**
 * Per-message codes named in the text of §5.1, §5.3, §5.4 and §6.4. They
 * travel in CALL_ERROR frames or are raised locally; none has a number.
 */
export const MessageCodes = [
  'WT_PAYLOAD_TOO_LARGE',
  'WT_UNSUPPORTED_CODEC',
  'WT_UNKNOWN_EVENT',
  'WT_VALIDATION_FAILED',
  'WT_HANDLER_ERROR',
] as const;

export type SessionCodeName = keyof typeof SessionCode;
export type ResetCodeName = keyof typeof ResetCode;
export type LocalCodeName = (typeof LocalCodes)[number];
export type MessageCodeName = (typeof MessageCodes)[number];
/** Every code this version of the protocol names. */
export type KnownCode = SessionCodeName | ResetCodeName | LocalCodeName | MessageCodeName;
/**
 * A WT_* code: one of the known ones, or any other WT_-prefixed name a
 * responder forwarded in a CALL_ERROR (§6.4: treat unknown codes as opaque),
 * or WT_CLOSE_<n> for a close code §10.2 does not name.
 */
export type CodeName = KnownCode | (`WT_${string}` & {});

/**
 * The number a code travels as, when it has one: its §10.2 close code, or
 * for WT_ABORTED and WT_TOO_MANY_STREAMS its §10.1 reset byte.
 */
export function codeNumber(code: string): number | undefined {
  // A known code only (each has a remedy), never a name every object
  // inherits ('toString'); WT_NO_ERROR is 0 in both tables.
  return Object.hasOwn(remedies, code) ? (SessionCode[code as SessionCodeName] ?? ResetCode[code as ResetCodeName]) : undefined;
}

/** The one-sentence advice the spec gives for a code, or '' for a code this package does not know. */
export function remedy(code: string): string {
  return Object.hasOwn(remedies, code) ? remedies[code as KnownCode] : '';
}

/**
 * Maps a §10.2 code onto the WebSocket close code that carries it (§3.3):
 * 0 becomes 1000, any other code 3000 plus the code. A code above 1999
 * (which §10.2 does not define) becomes 1011, which the peer reads as a
 * socket-level close with no session code rather than as a wrong one.
 */
export function webSocketCloseCode(sessionCode: number): number {
  if (sessionCode === CloseNoError) return WebSocketNormalClosure;
  if (sessionCode > webSocketCodeMax - WebSocketCodeBase) return WebSocketInternalError;
  return WebSocketCodeBase + sessionCode;
}

/**
 * Recovers the §10.2 code a WebSocket close code carries (§3.3): 1000 is
 * WT_NO_ERROR, 3000–4999 carry the code minus 3000 (numbers §10.2 does not
 * name included). Any other close code (1001 for a page going away, 1006
 * for a lost connection, ...) is the socket's own: undefined, and the
 * session ended with no code (§11).
 */
export function sessionCodeFromWebSocket(ws: number): number | undefined {
  if (ws === WebSocketNormalClosure) return CloseNoError;
  return ws >= WebSocketCodeBase && ws <= webSocketCodeMax ? ws - WebSocketCodeBase : undefined;
}

/** Names a §10.2 close code, or returns undefined for a number §10.2 does not define. */
export function sessionCodeName(code: number): SessionCodeName | undefined {
  return (Object.keys(SessionCode) as SessionCodeName[]).find((name) => SessionCode[name] === code);
}

/** Names a §10.1 reset code, or returns undefined for a reserved one. */
export function resetCodeName(code: number): ResetCodeName | undefined {
  return (Object.keys(ResetCode) as ResetCodeName[]).find((name) => ResetCode[name] === code);
}
