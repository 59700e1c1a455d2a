package nats

import (
	"crypto/sha256"
	"encoding/base64"
)

// maxRoomToken is the longest room token spelled out in a subject: longer
// names are hashed, so a subject stays well inside NATS's 4 KiB control
// line whatever the room's length.
const maxRoomToken = 256

// roomSubject maps a room name of any bytes and length to a valid subject
// under prefix. Names whose base64url spelling fits maxRoomToken map to it,
// one to one; longer ones to the SHA-256 of the name under another token,
// and since two long names could in principle share a subject, a receiver
// checks the exact name the envelope carries. Room "" (every node) has its
// own subject.
func roomSubject(prefix, room string) string {
	if room == "" {
		return prefix + ".all"
	}
	if base64.RawURLEncoding.EncodedLen(len(room)) <= maxRoomToken {
		return prefix + ".r." + base64.RawURLEncoding.EncodeToString([]byte(room))
	}
	sum := sha256.Sum256([]byte(room))
	return prefix + ".h." + base64.RawURLEncoding.EncodeToString(sum[:])
}
