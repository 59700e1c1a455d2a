// Package conformance is the conformance server of transport-io: the
// contract of testdata/conformance/conformance.tio served with fixed
// behaviour (issue 4), over WebTransport and the WebSocket mapping on one
// address, so any peer can be tested against this implementation.
//
// The contract is written out here and pinned to the .tio file by a test
// (TestContractMatchesTioFile); generated code will replace it.
package conformance

import (
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Path is where the server serves the contract, on both mappings.
const Path = "/conformance"

// MaxCount is the largest n `count` and `countThenFail` accept.
const MaxCount = 1_000_000

// The event ids of the contract (§5.4: the first four bytes of SHA-256 of
// the name).
var (
	Echo          = wire.EventID("echo")
	Fail          = wire.EventID("fail")
	Count         = wire.EventID("count")
	CountThenFail = wire.EventID("countThenFail")
	Hang          = wire.EventID("hang")
	Blob          = wire.EventID("blob")
	Shout         = wire.EventID("shout")
	Heard         = wire.EventID("heard")
	Move          = wire.EventID("move")
	Enter         = wire.EventID("enter")
	Exit          = wire.EventID("exit")
	Say           = wire.EventID("say")
	Said          = wire.EventID("said")
	Stats         = wire.EventID("stats")
)

// Contract is conformance.tio in the engine's terms; both the server and
// clients under test use it.
var Contract = tio.MustContract("conformance",
	call("echo", tio.Returns, wire.CodecJSON),
	call("fail", tio.Returns, wire.CodecJSON),
	call("count", tio.Yields, wire.CodecJSON),
	call("countThenFail", tio.Yields, wire.CodecJSON),
	call("hang", tio.Returns, wire.CodecJSON),
	call("blob", tio.Returns, wire.CodecBytes),
	emit("shout", tio.FromClient),
	emit("heard", tio.FromServer),
	tio.Event{Name: "move", Lane: wire.Unreliable, Kind: tio.Emit, Payload: wire.CodecJSON, Fallback: tio.Newest},
	call("enter", tio.Returns, wire.CodecJSON),
	call("exit", tio.Returns, wire.CodecJSON),
	emit("say", tio.FromClient),
	emit("said", tio.FromServer),
	call("stats", tio.Returns, wire.CodecJSON),
)

// call is a reliable call whose request and result share one codec.
func call(name string, kind tio.Kind, codec wire.Codec) tio.Event {
	return tio.Event{Name: name, Lane: wire.Reliable, Kind: kind, Payload: codec, Result: codec}
}

// emit is a reliable JSON emit sent by one side.
func emit(name string, from tio.Direction) tio.Event {
	return tio.Event{Name: name, Lane: wire.Reliable, From: from, Kind: tio.Emit, Payload: wire.CodecJSON}
}
