// UTF-8 for payloads and control frames (§5.3: JSON is UTF-8 encoded).

const encoder = new TextEncoder();
// Fatal: bytes that are not UTF-8 throw a TypeError rather than become
// U+FFFD, since codec 0x01 is UTF-8 JSON (§5.3) and the Go runtime refuses
// them too. A byte-order mark is kept, not stripped: it is no JSON
// whitespace, so the text is no JSON, as the Go runtime reads it.
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The text of UTF-8 bytes; throws a TypeError when they are not UTF-8. */
export function utf8Decode(b: Uint8Array): string {
  return decoder.decode(b);
}

export function utf8Encode(s: string): Uint8Array {
  return encoder.encode(s);
}

/**
 * Writes the UTF-8 of s at b[off], which has room for 3 bytes per UTF-16
 * unit, and returns how many bytes it wrote. ASCII up to 256 units goes by
 * hand: in Chromium one call of encodeInto costs more than that loop.
 */
export function utf8Into(s: string, b: Uint8Array, off: number): number {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 127 || s.length > 256) return encoder.encodeInto(s, b.subarray(off)).written;
    b[off + i] = c;
  }
  return s.length;
}
