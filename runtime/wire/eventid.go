// Package wire is the transport-io codec: stream frames (§5), datagrams
// (§7.1), the handshake (§4), event-table comparison (§4.3) and the codes of
// §10. It is pure: no I/O beyond reading a caller's io.Reader, no goroutines,
// no clocks.
package wire

import "crypto/sha256"

// EventID derives an event's id from its name: the first four bytes of
// SHA-256 of the name, big-endian (§5.4).
func EventID(name string) uint32 {
	sum := sha256.Sum256([]byte(name))
	return uint32(sum[0])<<24 | uint32(sum[1])<<16 | uint32(sum[2])<<8 | uint32(sum[3])
}
