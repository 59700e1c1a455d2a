// Frame types (§5.2; 0x00 and 0x0A–0xFF are reserved) and codecs (§5.3;
// 0x00 and 0x03–0xFF are reserved), one constant each, and the wire's other
// numbers (the version, the headers' sizes, the caps). A bundler inlines a
// constant of a module that imports nothing where it is used (an object's
// properties it cannot); frame.ts re-exports them, with FrameType and Codec,
// the same tables by name, and datagram.ts and handshake.ts their own.

export const FrameHandshake = 0x01;
export const FrameEmit = 0x02;
export const FrameCallRequest = 0x03;
export const FrameCallResponse = 0x04;
export const FrameCallError = 0x05;
export const FrameJoin = 0x06;
export const FrameLeave = 0x07;
export const FrameCallCredit = 0x08;
export const FrameDatagram = 0x09;
export const CodecJson = 0x01;
export const CodecBytes = 0x02;

/** The protocol major version this runtime speaks (§4.2). */
export const ProtocolVersion = 0;

/** The fixed overhead of a frame: 4 length bytes and the 8 header bytes the length counts (§5.1). */
export const HeaderLen = 12;
/** The payload cap of every frame type but the call frames (§5.1). */
export const MaxPayload = 1 << 20;
/** The payload cap of CALL_REQUEST, CALL_RESPONSE and CALL_ERROR (§5.1). */
export const MaxCallPayload = 16 << 20;
/** The smallest Length: 8 header bytes and one payload byte (§5.1). */
export const minLength = 9;

/** The fixed overhead of a datagram: codec, event id, origin and sequence (§7.2). */
export const DatagramHeaderLen = 13;
/** The effective datagram size when the transport reports none (§7.4). */
export const DefaultDatagramSize = 1024;
