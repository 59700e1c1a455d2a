package golang

import (
	"github.com/dave/jennifer/jen"
)

// The generated Server, Peer, Room and Client embed their base from
// runtime/typed (typed.ClientBase, ...), which holds the runtime value
// unexported and forwards a fixed set of its methods: the typed API is the
// whole API, and the untyped one (Emit, Call, Stream, On by event id) is
// reached only through Runtime. A generated file carries only what its
// contract declares. The generator reserves the bases' method names, and
// the embedded field's, as they are listed here (names.go, rule 3); a test
// holds the lists to the bases' method sets.

// wrapper is one generated type around a runtime value.
type wrapper struct {
	name    string // the generated type: Client
	recv    string // its receiver: c
	pointer bool   // methods on *Client
	base    string // its base in runtime/typed: ClientBase
	// methods are the base's methods besides Runtime.
	methods []string
}

var (
	clientWrapper = wrapper{name: "Client", recv: "c", pointer: true, base: "ClientBase",
		methods: []string{"Close", "Done", "Wait", "Err", "Rooms", "Stats", "WaitEmit"}}
	peerWrapper = wrapper{name: "Peer", recv: "p", base: "PeerBase",
		methods: []string{"ID", "Data", "Join", "Leave", "Rooms", "InRoom", "Close", "Done", "Err", "Stats", "WaitEmit"}}
	roomWrapper   = wrapper{name: "Room", recv: "r", base: "RoomBase", methods: []string{"Name", "Members"}}
	serverWrapper = wrapper{name: "Server", recv: "s", pointer: true, base: "ServerBase", methods: []string{"Close"}}
)

// methodNames are the names a wrapper holds before the contract's: the
// embedded base's field, Runtime and the base's other methods.
func (w wrapper) methodNames() []fixedName {
	names := []fixedName{
		{w.base, "the generated " + w.name + "'s embedded typed." + w.base},
		{"Runtime", "the generated " + w.name + "'s way to its runtime value"},
	}
	for _, m := range w.methods {
		names = append(names, fixedName{m, "a method of the generated " + w.name + " (typed." + w.base + "." + m + ")"})
	}
	return names
}

// receiver is the wrapper's method receiver.
func (w wrapper) receiver() *jen.Statement {
	if w.pointer {
		return jen.Id(w.recv).Op("*").Id(w.name)
	}
	return jen.Id(w.recv).Id(w.name)
}

// rt is the wrapper's runtime value, as the typed methods reach it.
func (w wrapper) rt() *jen.Statement { return jen.Id(w.recv).Dot("Runtime").Call() }

// wrap is the wrapper's value around the runtime value v.
func (w wrapper) wrap(v jen.Code) *jen.Statement {
	value := jen.Id(w.name).Values(jen.Qual(typedPath, "New"+w.base).Call(v))
	if w.pointer {
		return jen.Op("&").Add(value)
	}
	return value
}

// declare writes the wrapper type, which embeds its base.
func (w wrapper) declare(f *jen.File, doc string) {
	f.Comment(lineComment(wrap(doc + " Its methods besides the typed ones are [typed." + w.base + "]'s.")))
	f.Type().Id(w.name).Struct(jen.Qual(typedPath, w.base))
}
