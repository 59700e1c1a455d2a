// UTF-8 for payloads and control frames (§5.3: JSON is UTF-8 encoded).

const encoder = new TextEncoder();
// Not fatal: invalid UTF-8 becomes U+FFFD, as the Go runtime's JSON reader does.
const decoder = new TextDecoder();

export function utf8Encode(s: string): Uint8Array {
  return encoder.encode(s);
}

export function utf8Decode(b: Uint8Array): string {
  return decoder.decode(b);
}
