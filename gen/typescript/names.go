package typescript

import "github.com/transport-io/tiogen/dsl/ir"

// Identifier rules of the generated TypeScript file (docs/typescript.md):
//
//  1. Types and enums are named by ir.GoName (user_name -> UserName), as in
//     Go; record fields by ir.TSName (user_name -> userName), their JSON
//     key staying the contract's name; calls by ir.TSName, emits as
//     emitX and onX with X the GoName.
//  2. A contract name is renamed, never refused: when the name it becomes
//     is one the file already holds in the same namespace, a trailing
//     underscore is added until it is free. Names are taken in a fixed
//     order, so the result depends on the contract alone: first the fixed
//     names (fixedTypes, fixedMembers, the factory and the contract
//     table), then types and enums in declaration order, then each enum's
//     values list (XValues), then decodeX and encodeX of each type and
//     enum, then the client's methods in event table
//     order (by name), each emit's emitX before its onX.
//  3. Reserved words need no escaping: every name the contract gives is a
//     property (fields, methods, which may be any identifier name) or an
//     upper-case type name (no TypeScript keyword is upper-case) or a
//     prefixed one (decodeX, chatContract, createChatClient); the codecs
//     of lists and maps are decode_ and encode_ plus the type as written
//     (decode_list_string), which no other name starts with, and the
//     runtime is the namespace tio.

// fixedTypes are the global names the generated file refers to; a type
// named like one would hide it.
var fixedTypes = []string{"AsyncIterable", "Promise", "Record", "Uint8Array"}

// fixedMembers are the members every generated client has.
var fixedMembers = []string{"client", "connect", "close", "subscribe", "getSnapshot", "stats"}

// scope hands out the names of one namespace, escaping a taken one with
// trailing underscores (rule 2).
type scope map[string]bool

func newScope(fixed ...string) scope {
	s := scope{}
	for _, f := range fixed {
		s[f] = true
	}
	return s
}

func (s scope) take(name string) string {
	for s[name] {
		name += "_"
	}
	s[name] = true
	return name
}

// names are the identifiers chosen for one contract.
type names struct {
	// types maps a type's or enum's contract name to its TypeScript name.
	types map[string]string
	// values maps an enum's contract name to its values list's name.
	values map[string]string
	// decoders and encoders map a type's or enum's contract name to the
	// names of its decodeX and encodeX.
	decoders, encoders map[string]string
	// methods maps "emit x", "on x" and "call x" to the client's method.
	methods map[string]string
	// client, options, factory and table are the fixed API's names.
	client, options, factory, table string
}

func newNames(c *ir.Contract) *names {
	n := &names{types: map[string]string{}, values: map[string]string{}, methods: map[string]string{},
		decoders: map[string]string{}, encoders: map[string]string{}}
	// One namespace for the file's types and values alike, so that no two
	// top-level names are equal even where TypeScript would allow it.
	top := newScope(append([]string{"tio"}, fixedTypes...)...)
	base := ir.GoName(c.Name)
	n.client = top.take(base + "Client")
	n.options = top.take(base + "ClientOptions")
	n.factory = top.take("create" + base + "Client")
	n.table = top.take(ir.TSName(c.Name) + "Contract")
	for _, t := range c.Types {
		n.types[t.Name] = top.take(ir.GoName(t.Name))
	}
	for _, e := range c.Enums {
		n.types[e.Name] = top.take(ir.GoName(e.Name))
	}
	for _, e := range c.Enums {
		n.values[e.Name] = top.take(n.types[e.Name] + "Values")
	}
	for _, t := range c.Types {
		n.decoders[t.Name] = top.take("decode" + n.types[t.Name])
		n.encoders[t.Name] = top.take("encode" + n.types[t.Name])
	}
	for _, e := range c.Enums {
		n.decoders[e.Name] = top.take("decode" + n.types[e.Name])
		n.encoders[e.Name] = top.take("encode" + n.types[e.Name])
	}
	members := newScope(fixedMembers...)
	for _, e := range c.Events {
		if e.Kind != ir.KindEmit {
			n.methods["call "+e.Name] = members.take(ir.TSName(e.Name))
			continue
		}
		if e.SentByClient() {
			n.methods["emit "+e.Name] = members.take("emit" + ir.GoName(e.Name))
		}
		if e.SentByServer() {
			n.methods["on "+e.Name] = members.take("on" + ir.GoName(e.Name))
		}
	}
	return n
}
