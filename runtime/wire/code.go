package wire

// Code is a transport-io error code by its WT_* name (§10). CALL_ERROR
// carries codes by name (§6.4); session close codes and stream reset codes
// travel as numbers and map to names with SessionCodeName and ResetCode.
type Code string

// Session close codes (§10.2), also the names of the reset codes (§10.1).
const (
	NoError                 Code = "WT_NO_ERROR"
	Aborted                 Code = "WT_ABORTED"
	TooManyStreams          Code = "WT_TOO_MANY_STREAMS"
	ProtocolVersionMismatch Code = "WT_PROTOCOL_VERSION_MISMATCH"
	ContractMismatch        Code = "WT_CONTRACT_MISMATCH"
	HandshakeTimeout        Code = "WT_HANDSHAKE_TIMEOUT"
	PeerTooSlow             Code = "WT_PEER_TOO_SLOW"
	ProtocolError           Code = "WT_PROTOCOL_ERROR"
	IdleTimeout             Code = "WT_IDLE_TIMEOUT"
	ReliabilityRefused      Code = "WT_RELIABILITY_REFUSED"
	Unauthorized            Code = "WT_UNAUTHORIZED"
)

// Local codes (§10.3): raised to the application, never transmitted.
const (
	NoSupport        Code = "WT_NO_SUPPORT"
	LaneUnavailable  Code = "WT_LANE_UNAVAILABLE"
	DatagramTooLarge Code = "WT_DATAGRAM_TOO_LARGE"
	RoomNotJoined    Code = "WT_ROOM_NOT_JOINED"
	SessionClosed    Code = "WT_SESSION_CLOSED"
	HandshakeFailed  Code = "WT_HANDSHAKE_FAILED"
	UDPUnreachable   Code = "WT_UDP_UNREACHABLE"
	CertExpired      Code = "WT_CERT_EXPIRED"
	DevOnly          Code = "WT_DEV_ONLY"
	PortInUse        Code = "WT_PORT_IN_USE"
)

// Per-message codes named in the text of §5.1, §5.3, §5.4 and §6.4. They
// travel in CALL_ERROR frames or are raised locally; none has a number.
const (
	PayloadTooLarge  Code = "WT_PAYLOAD_TOO_LARGE"
	UnsupportedCodec Code = "WT_UNSUPPORTED_CODEC"
	UnknownEvent     Code = "WT_UNKNOWN_EVENT"
	ValidationFailed Code = "WT_VALIDATION_FAILED"
	HandlerError     Code = "WT_HANDLER_ERROR"
)

// Stream reset codes (§10.1): one byte each; 2–8 and 10–255 are reserved.
const (
	ResetNoError        uint8 = 0
	ResetAborted        uint8 = 1
	ResetTooManyStreams uint8 = 9
)

// Session close codes (§10.2), sent as the u32 of a WebTransport session
// close.
const (
	CloseNoError                 uint32 = 0
	CloseProtocolVersionMismatch uint32 = 1000
	CloseContractMismatch        uint32 = 1001
	CloseHandshakeTimeout        uint32 = 1002
	ClosePeerTooSlow             uint32 = 1003
	CloseProtocolError           uint32 = 1004
	CloseIdleTimeout             uint32 = 1005
	CloseReliabilityRefused      uint32 = 1006
	CloseUnauthorized            uint32 = 1007
)

var sessionCodes = map[Code]uint32{
	NoError:                 CloseNoError,
	ProtocolVersionMismatch: CloseProtocolVersionMismatch,
	ContractMismatch:        CloseContractMismatch,
	HandshakeTimeout:        CloseHandshakeTimeout,
	PeerTooSlow:             ClosePeerTooSlow,
	ProtocolError:           CloseProtocolError,
	IdleTimeout:             CloseIdleTimeout,
	ReliabilityRefused:      CloseReliabilityRefused,
	Unauthorized:            CloseUnauthorized,
}

// SessionCode reports the §10.2 number of a session close code; ok is false
// for every other code.
func (c Code) SessionCode() (code uint32, ok bool) {
	code, ok = sessionCodes[c]
	return code, ok
}

// SessionCodeName names a §10.2 close code. A number §10.2 does not define
// (a later protocol version's, or a broken peer's) has no name: it returns
// "", and the caller reports the number as it is.
func SessionCodeName(code uint32) Code {
	for name, n := range sessionCodes {
		if n == code {
			return name
		}
	}
	return ""
}

// ResetCode reports the §10.1 byte of a reset code; ok is false for every
// other code.
func (c Code) ResetCode() (code uint8, ok bool) {
	switch c {
	case NoError:
		return ResetNoError, true
	case Aborted:
		return ResetAborted, true
	case TooManyStreams:
		return ResetTooManyStreams, true
	}
	return 0, false
}

// ResetCodeName names a §10.1 reset code, or returns "" for a reserved one.
func ResetCodeName(code uint8) Code {
	switch code {
	case ResetNoError:
		return NoError
	case ResetAborted:
		return Aborted
	case ResetTooManyStreams:
		return TooManyStreams
	}
	return ""
}

// The §3.3 mapping of session close codes onto WebSocket close codes.
const (
	// WebSocketNormalClosure carries WT_NO_ERROR (§3.3).
	WebSocketNormalClosure uint16 = 1000
	// WebSocketCodeBase is added to every other §10.2 code (§3.3).
	WebSocketCodeBase uint16 = 3000
	// webSocketCodeMax is the last close code an application may send
	// (RFC 6455 §7.4.2: 3000–3999 registered, 4000–4999 private use).
	webSocketCodeMax uint16 = 4999
	// WebSocketInternalError is RFC 6455's "unexpected condition" code.
	WebSocketInternalError uint16 = 1011
)

// WebSocketCloseCode maps a §10.2 session close code onto the WebSocket
// close code that carries it (§3.3): 0 becomes 1000, any other code 3000
// plus the code. A code too large to fit the application range (above 1999,
// which §10.2 does not define) becomes 1011, which the peer reads as a
// socket-level close with no session code rather than as a wrong one.
func WebSocketCloseCode(sessionCode uint32) uint16 {
	if sessionCode == CloseNoError {
		return WebSocketNormalClosure
	}
	if sessionCode > uint32(webSocketCodeMax-WebSocketCodeBase) {
		return WebSocketInternalError
	}
	return WebSocketCodeBase + uint16(sessionCode)
}

// SessionCodeFromWebSocket recovers the §10.2 code a WebSocket close code
// carries (§3.3): 1000 is WT_NO_ERROR, and 3000–4999 carry the code minus
// 3000, including numbers §10.2 does not (yet) name, so a newer peer's code
// is reported rather than lost. Every other close code (1001 for a page
// going away, 1006 for a lost connection, ...) is the socket's own and not a
// session code: ok is false and the session ended with no code (§11).
func SessionCodeFromWebSocket(ws uint16) (code uint32, ok bool) {
	switch {
	case ws == WebSocketNormalClosure:
		return CloseNoError, true
	case ws >= WebSocketCodeBase && ws <= webSocketCodeMax:
		return uint32(ws - WebSocketCodeBase), true
	}
	return 0, false
}

var remedies = map[Code]string{
	NoError:                 "Nothing to do.",
	Aborted:                 "Abandon the work.",
	TooManyStreams:          "Make fewer calls at once.",
	ProtocolVersionMismatch: "Upgrade one side.",
	ContractMismatch:        "Deploy one contract on both sides.",
	HandshakeTimeout:        "Check the peer speaks transport-io.",
	PeerTooSlow:             "Consume faster.",
	ProtocolError:           "Fix the peer.",
	IdleTimeout:             "Reconnect.",
	ReliabilityRefused:      "Use datagrams, or declare fallbacks.",
	Unauthorized:            "Retry only with a new credential.",
	NoSupport:               "Use WebTransport, or a WebSocket fallback.",
	LaneUnavailable:         "Make calls over WebTransport.",
	DatagramTooLarge:        "Send less, or make the event reliable.",
	RoomNotJoined:           "Join the room first.",
	SessionClosed:           "Reconnect and retry.",
	HandshakeFailed:         "Check the server and its certificate.",
	UDPUnreachable:          "Open UDP to the server.",
	CertExpired:             "Mint a new certificate and reload.",
	DevOnly:                 "Use it from loopback only.",
	PortInUse:               "Free the port or pass another.",
	PayloadTooLarge:         "Send smaller payloads.",
	UnsupportedCodec:        "Send codec 0x01 or 0x02.",
	UnknownEvent:            "Deploy one contract on both sides.",
	ValidationFailed:        "Match the schema.",
	HandlerError:            "See the responder's logs.",
}

// Remedy is the one-sentence advice the spec gives for a code, or "" for a
// code this package does not know (an application's own CALL_ERROR code).
func (c Code) Remedy() string {
	return remedies[c]
}
