// The pure codec of the transport-io protocol, version 0: frames (§5),
// the handshake (§4), datagrams (§7.1), the JSON control payloads (§6.4–§6.6).
// No I/O, no timers.

export * from './frame.js';
export * from './handshake.js';
export * from './datagram.js';
export * from './payload.js';
export { cutReason } from './json.js';
export { utf8Decode, utf8Encode } from './utf8.js';
