package golang

import (
	"github.com/dave/jennifer/jen"
)

// The generated Server, Peer, Room and Client hold their runtime value in
// the unexported field rt and forward a fixed set of its methods, the way
// connect-go's generated clients hold theirs: the typed API is the whole
// API, and the untyped one (Emit, Call, Stream, On by event id) is reached
// only through Runtime. The sets are declared here, once: the generator
// writes the methods from them and reserves their names (names.go, rule 3).

// wrapper is one generated type around a runtime value.
type wrapper struct {
	name    string // the generated type: Client
	recv    string // its receiver: c
	pointer bool   // methods on *Client
	runtime string // the runtime type in package tio: Client
	// runtimeDoc says what Runtime is for on this wrapper.
	runtimeDoc string
	forwards   []forward
}

// forward is one method forwarded to the runtime value as it is.
type forward struct {
	name string
	// doc is the sentence before the link to the runtime method.
	doc     string
	params  []param
	results func() []jen.Code
}

// param is one parameter of a forwarded method.
type param struct {
	name string
	typ  func() jen.Code
}

var (
	roomParam = []param{{"room", func() jen.Code { return jen.String() }}}
	ctxArg    = []param{{"ctx", func() jen.Code { return jen.Qual("context", "Context") }}}
	closeArgs = []param{{"code", func() jen.Code { return jen.Qual(tioPath, "Code") }}, {"reason", func() jen.Code { return jen.String() }}}
)

var (
	fwdClose = forward{"Close", "Close ends the session with a close code and reason", closeArgs,
		func() []jen.Code { return []jen.Code{jen.Error()} }}
	fwdDone = forward{"Done", "Done is closed once the session has ended", nil,
		func() []jen.Code { return []jen.Code{jen.Op("<-").Chan().Struct()} }}
	fwdErr = forward{"Err", "Err reports how the session ended, nil while it runs", nil,
		func() []jen.Code { return []jen.Code{jen.Error()} }}
	fwdRooms = forward{"Rooms", "Rooms lists the rooms of this session", nil,
		func() []jen.Code { return []jen.Code{jen.Index().String()} }}
	fwdStats = forward{"Stats", "Stats returns the session's counters now", nil,
		func() []jen.Code { return []jen.Code{jen.Qual(tioPath, "Stats")} }}
	fwdWaitEmit = forward{"WaitEmit", "WaitEmit waits while the emit queue is above its low-water mark",
		ctxArg,
		func() []jen.Code { return []jen.Code{jen.Error()} }}
)

var (
	clientWrapper = wrapper{
		name: "Client", recv: "c", pointer: true, runtime: "Client",
		runtimeDoc: "Runtime is the runtime client under this one, for the rare code that sends or receives by event id",
		forwards: []forward{fwdClose, fwdDone,
			{"Wait", "Wait blocks until the session has ended and its goroutines have returned, then reports how it ended", nil,
				func() []jen.Code { return []jen.Code{jen.Error()} }},
			fwdErr, fwdRooms, fwdStats, fwdWaitEmit},
	}
	peerWrapper = wrapper{
		name: "Peer", recv: "p", runtime: "Peer",
		runtimeDoc: "Runtime is the runtime peer under this one, for the rare code that sends by event id",
		forwards: []forward{
			{"ID", "ID names the peer, distinct across the nodes of a deployment", nil,
				func() []jen.Code { return []jen.Code{jen.String()} }},
			{"Data", "Data is what the listener's authorize attached to the peer", nil,
				func() []jen.Code { return []jen.Code{jen.Any()} }},
			{"Join", "Join puts the peer in a room", roomParam,
				func() []jen.Code { return []jen.Code{jen.Error()} }},
			{"Leave", "Leave takes the peer out of a room", roomParam,
				func() []jen.Code { return []jen.Code{jen.Error()} }},
			fwdRooms,
			{"InRoom", "InRoom reports whether the peer is in room", roomParam,
				func() []jen.Code { return []jen.Code{jen.Bool()} }},
			fwdClose, fwdDone, fwdErr, fwdStats, fwdWaitEmit},
	}
	roomWrapper = wrapper{
		name: "Room", recv: "r", runtime: "Room",
		runtimeDoc: "Runtime is the runtime room under this one, for the rare code that broadcasts by event id",
		forwards: []forward{
			{"Name", "Name is the room's name", nil, func() []jen.Code { return []jen.Code{jen.String()} }},
			{"Members", "Members counts this node's peers in the room", nil, func() []jen.Code { return []jen.Code{jen.Int()} }},
		},
	}
	serverWrapper = wrapper{
		name: "Server", recv: "s", pointer: true, runtime: "Server",
		runtimeDoc: "Runtime is the runtime server under this one: what a listener serves (endpoint.Listen), and the way to send by event id",
		forwards: []forward{
			{"Close", "Close stops the server", nil, func() []jen.Code { return []jen.Code{jen.Error()} }},
		},
	}
)

// methodNames are the fixed methods of a wrapper, for its scope (Room on
// Server is declared by server(), with typed rooms).
func (w wrapper) methodNames(extra ...fixedName) []fixedName {
	names := []fixedName{{"Runtime", "the generated " + w.name + "'s way to its runtime value"}}
	for _, f := range w.forwards {
		names = append(names, fixedName{f.name, "a method of the generated " + w.name + " (" + f.doc + ")"})
	}
	return append(names, extra...)
}

// receiver is the wrapper's method receiver.
func (w wrapper) receiver() *jen.Statement {
	if w.pointer {
		return jen.Id(w.recv).Op("*").Id(w.name)
	}
	return jen.Id(w.recv).Id(w.name)
}

// rt is the wrapper's runtime value, as the methods read it.
func (w wrapper) rt() *jen.Statement { return jen.Id(w.recv).Dot("rt") }

// declare writes the wrapper type, its forwarded methods and Runtime.
func (w wrapper) declare(f *jen.File, doc string) {
	f.Comment(lineComment(wrap(doc)))
	f.Type().Id(w.name).Struct(jen.Id("rt").Op("*").Qual(tioPath, w.runtime))
	for _, fw := range w.forwards {
		var ps, args []jen.Code
		for _, p := range fw.params {
			ps = append(ps, jen.Id(p.name).Add(p.typ()))
			args = append(args, jen.Id(p.name))
		}
		call := w.rt().Dot(fw.name).Call(args...)
		body := jen.Return(call)
		if len(fw.results()) == 0 {
			body = call
		}
		f.Comment(lineComment(wrap(fw.doc + ": [tio." + w.runtime + "." + fw.name + "].")))
		f.Func().Params(w.receiver()).Id(fw.name).Params(ps...).Params(fw.results()...).Block(body)
	}
	f.Comment(lineComment(wrap(w.runtimeDoc + ": [tio." + w.runtime + "].")))
	f.Func().Params(w.receiver()).Id("Runtime").Params().Op("*").Qual(tioPath, w.runtime).Block(jen.Return(w.rt()))
}
