// Frame types (§5.2; 0x00 and 0x0A–0xFF are reserved) and codecs (§5.3;
// 0x00 and 0x03–0xFF are reserved), one constant each. A bundler inlines a
// constant of a module that imports nothing where it is used (an object's
// properties it cannot); frame.ts re-exports them, with FrameType and Codec,
// the same tables by name.

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
