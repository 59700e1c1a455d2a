// UTF-8 for payloads and control frames (§5.3: JSON is UTF-8 encoded).

const encoder = new TextEncoder();
// Fatal: bytes that are not UTF-8 throw a TypeError rather than become
// U+FFFD, since codec 0x01 is UTF-8 JSON (§5.3) and the Go runtime refuses
// them too. A byte-order mark is kept, not stripped: it is no JSON
// whitespace, so the text is no JSON, as the Go runtime reads it.
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

// encodeInto a scratch of the runtime's own, then a copy of what it wrote:
// in Chromium encode() gets a backing store per call, which costs more than
// the copy. At most 3 bytes per UTF-16 unit, so strings of up to 4096 units
// fit; longer ones (rare: a large call request) take encode().
const scratch = new Uint8Array(3 << 12);

export function utf8Encode(s: string): Uint8Array {
  return s.length > 4096 ? encoder.encode(s) : scratch.slice(0, encoder.encodeInto(s, scratch).written);
}

/** The text of UTF-8 bytes; throws a TypeError when they are not UTF-8. */
export function utf8Decode(b: Uint8Array): string {
  return decoder.decode(b);
}
