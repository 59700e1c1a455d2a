// UTF-8 for payloads and control frames (§5.3: JSON is UTF-8 encoded).

const encoder = new TextEncoder();
// Not fatal: invalid UTF-8 becomes U+FFFD, as the Go runtime's JSON reader does.
const decoder = new TextDecoder();

export function utf8Encode(s: string): Uint8Array {
  // Up to 64 ASCII characters (most payloads and control frames) by hand: in
  // Chromium TextEncoder.encode costs microseconds per call however short
  // the string (its result gets a backing store of its own), while a typed
  // array of at most 64 bytes is allocated on the JS heap.
  if (s.length <= 64) {
    const b = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c > 0x7f) return encoder.encode(s);
      b[i] = c;
    }
    return b;
  }
  return encoder.encode(s);
}

export function utf8Decode(b: Uint8Array): string {
  return decoder.decode(b);
}
