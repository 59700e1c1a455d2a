// Package typed is the support library of tiogen's generated Go code: the
// JSON codec the generated encoders and decoders are written against, and
// the generic adapters that turn the engine's bytes-level API (runtime/tio)
// into typed emits, calls, streams and handlers, and the bases the generated
// Client, Peer, Room and Server embed (ClientBase, PeerBase, RoomBase,
// ServerBase), which forward the runtime's session methods and keep its
// untyped ones behind Runtime. Everything that is the same
// for every contract lives here, so a generated file holds only what its
// contract declares.
//
// JSON forms follow docs/contract-language.md ("JSON on the wire"), the
// rules the TypeScript runtime applies too: int64 and uint64 are written as
// decimal strings and read from decimal strings or integer numbers within
// ±(2^53-1); bytes are standard padded base64; json is any JSON value,
// written in one canonical form; floats and strings are written as
// JSON.stringify writes them.
// Decoding validates as it reads (required fields present, enum values
// known, numbers in range) and encoding validates what it writes (enum
// values known, floats finite, json values valid); failures are
// *wire.Error with WT_VALIDATION_FAILED naming the field path, as in
// "field 'replyTo.body' must be a string, not 5" (§6.4).
package typed

// SupportPackageIsVersion1 is referenced by generated code so that a file
// generated for a newer support package fails to compile against an older
// one, instead of misbehaving at run time (as connect-go does). A change of
// the generated code's contract with this package adds
// SupportPackageIsVersion2 and keeps this constant while older generated
// code is still supported.
const SupportPackageIsVersion1 = true
