// Package ir is the checked model of a .tio contract: the only input of the
// Go and TypeScript generators and of `tiogen compat`. It is plain data,
// produced by dsl/check, and serialises to deterministic JSON (`tiogen ir`).
package ir

import (
	"encoding/json"
	"fmt"

	"github.com/transport-io/tiogen/runtime/wire"
)

// Contract is one checked .tio file.
type Contract struct {
	Name string `json:"name"`
	Docs string `json:"docs,omitempty"`
	// Source is the file name the contract was read from, as given.
	Source string `json:"source"`
	// Events are sorted ascending by name by Unicode code point, the order
	// of the handshake's event table (§4.3).
	Events []Event `json:"events"`
	// Types and Enums keep their declaration order.
	Types []Type `json:"types"`
	Enums []Enum `json:"enums"`
}

// Pos is a position in the contract's source; Col counts characters from 1.
type Pos struct {
	Line int `json:"line"`
	Col  int `json:"col"`
}

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Lane is the delivery lane of an event (§3, §7): the runtime's own type,
// so the IR's table is the handshake's.
type Lane = wire.Lane

const (
	Reliable   = wire.Reliable
	Unreliable = wire.Unreliable
)

// Direction says which side may send an emit. Calls are always initiated by
// the client, so their direction is DirClient.
type Direction string

const (
	DirEither Direction = "either"
	DirClient Direction = "client"
	DirServer Direction = "server"
)

// Kind is what an event is: a one-way emit, a call with one answer, or a
// call that streams answers.
type Kind string

const (
	KindEmit    Kind = "emit"
	KindReturns Kind = "returns"
	KindYields  Kind = "yields"
)

// Codec is how one slot of an event travels (§5.3).
type Codec string

const (
	CodecJSON  Codec = "json"  // 0x01
	CodecBytes Codec = "bytes" // 0x02: declared as bytes()
)

// Byte is the codec's value in a frame header (§5.3).
func (c Codec) Byte() byte {
	if c == CodecBytes {
		return 0x02
	}
	return 0x01
}

// Fallback is what an unreliable event accepts on a reliable-only transport
// (§7.6). FallbackNone means no session is possible there.
type Fallback string

const (
	FallbackNone   Fallback = ""
	FallbackNewest Fallback = "newest"
)

// Event is one entry of the contract's event table.
type Event struct {
	Name string `json:"name"`
	// WireName is the name carried in the handshake; always Name.
	WireName string `json:"wireName"`
	// ID is the explicit id, or wire.EventID(Name) (§5.4).
	ID         uint32    `json:"id"`
	ExplicitID bool      `json:"explicitId"`
	Lane       Lane      `json:"lane"`
	Direction  Direction `json:"direction"`
	Kind       Kind      `json:"kind"`
	Payload    Slot      `json:"payload"`
	// Result is the returns or yields slot; nil for an emit.
	Result   *Slot    `json:"result,omitempty"`
	Fallback Fallback `json:"fallback"`
	Docs     string   `json:"docs,omitempty"`
	Pos      Pos      `json:"pos"`
}

// Slot is one typed position of an event: its payload, returns or yields.
type Slot struct {
	Type  TypeRef `json:"type"`
	Codec Codec   `json:"codec"`
}

// Type is a record declared with `type`.
type Type struct {
	Name   string  `json:"name"`
	Docs   string  `json:"docs,omitempty"`
	Fields []Field `json:"fields"`
	Pos    Pos     `json:"pos"`
}

// Field is one member of a record; its JSON key is Name.
type Field struct {
	Name     string  `json:"name"`
	Type     TypeRef `json:"type"`
	Optional bool    `json:"optional"`
	Docs     string  `json:"docs,omitempty"`
	Pos      Pos     `json:"pos"`
}

// Enum is a set of string values.
type Enum struct {
	Name   string      `json:"name"`
	Docs   string      `json:"docs,omitempty"`
	Values []EnumValue `json:"values"`
	Pos    Pos         `json:"pos"`
}

// EnumValue is one value of an enum; on the wire it is the JSON string Name.
type EnumValue struct {
	Name string `json:"name"`
	Docs string `json:"docs,omitempty"`
	Pos  Pos    `json:"pos"`
}

// Type returns the record named name, or nil.
func (c *Contract) Type(name string) *Type {
	for i := range c.Types {
		if c.Types[i].Name == name {
			return &c.Types[i]
		}
	}
	return nil
}

// Enum returns the enum named name, or nil.
func (c *Contract) Enum(name string) *Enum {
	for i := range c.Enums {
		if c.Enums[i].Name == name {
			return &c.Enums[i]
		}
	}
	return nil
}

// Event returns the event named name, or nil.
func (c *Contract) Event(name string) *Event {
	for i := range c.Events {
		if c.Events[i].Name == name {
			return &c.Events[i]
		}
	}
	return nil
}

// JSON is the contract as indented JSON with a final newline; the same
// contract always gives the same bytes.
func (c *Contract) JSON() []byte {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		// Every field is a string, number, bool, slice or struct of those.
		panic("ir: contract does not marshal: " + err.Error())
	}
	return append(b, '\n')
}

// SentByClient reports whether the client may send e: every call (the
// client initiates it), and an emit not declared from server.
func (e Event) SentByClient() bool { return e.Kind != KindEmit || e.Direction != DirServer }

// SentByServer reports whether the server may send e: an emit not declared
// from client; never a call (the server only answers it).
func (e Event) SentByServer() bool { return e.Kind == KindEmit && e.Direction != DirClient }

// Slots are the event's typed positions: its payload, then its result for
// a call.
func (e Event) Slots() []Slot {
	if e.Result == nil {
		return []Slot{e.Payload}
	}
	return []Slot{e.Payload, *e.Result}
}

// JSONSlotTypes lists each distinct type of a JSON slot (codec 0x01) once,
// in event order, payload before result: the slot codecs a generator
// declares.
func (c *Contract) JSONSlotTypes() []TypeRef {
	var out []TypeRef
	seen := map[string]bool{}
	for _, e := range c.Events {
		for _, s := range e.Slots() {
			if s.Codec != CodecJSON || seen[s.Type.String()] {
				continue
			}
			seen[s.Type.String()] = true
			out = append(out, s.Type)
		}
	}
	return out
}
