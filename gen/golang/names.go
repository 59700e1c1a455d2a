package golang

import (
	"fmt"
	"go/token"
	"strings"

	"github.com/transport-io/tiogen/dsl/check"
	"github.com/transport-io/tiogen/dsl/ir"
)

// Identifier rules of the generated Go file:
//
//  1. Contract names become exported identifiers through ir.GoName
//     (user_name -> UserName). An exported identifier is never a Go keyword
//     or predeclared identifier, since those are all lower-case.
//  2. The package name is the contract name lower-cased with its
//     underscores dropped (chat_app -> chatapp); a Go keyword or predeclared
//     identifier gets a trailing underscore (type -> type_).
//  3. A contract name is never renamed. When the name it becomes would be
//     one the file already declares, the contract is refused, and `tiogen
//     check` reports each clash at the contract name's position: a type or
//     enum named like the fixed API (fixedAPI: type Room); an enum constant
//     (EnumValue) named like a type or another constant (LevelInfo); a
//     field named like a method of every generated type (structMethods); a
//     call named like a method of the generated Client (clientMethods:
//     event close); and two events whose methods would share a name (a
//     call emit_chat and the emit chat's EmitChat).
//  4. Unexported helpers are a fixed prefix on the exported name (encodeX,
//     decodeX, codecX, valuesX, idX), or codec_ plus the type as written for
//     slots that are not a declared type (codec_list_string): the prefixes
//     differ and exported names start upper-case, so these never collide.
//     The wrappers embed their base from runtime/typed, whose field name
//     (ClientBase) rule 3 reserves with the base's methods.

// fixedAPI are the package-level names every generated file declares,
// with what each is.
var fixedAPI = []fixedName{
	{"Contract", "the generated contract value"},
	{"Handler", "the generated server's handler interface"},
	{"UnimplementedHandler", "the generated handler that implements nothing"},
	{"NewServer", "the generated server's constructor"},
	{"Server", "the generated server"},
	{"Peer", "the generated server's side of a session"},
	{"NewPeer", "the generated peer's constructor"},
	{"Room", "the generated room handle (Server.Room returns it)"},
	{"Client", "the generated client"},
	{"NewClient", "the generated client's constructor"},
	{"Dial", "the generated client's dialer"},
}

// structMethods are the methods every generated record has.
var structMethods = []fixedName{
	{"Validate", "a method of every generated type (it checks a value before it is sent)"},
	{"MarshalJSON", "a method of every generated type (encoding/json)"},
	{"UnmarshalJSON", "a method of every generated type (encoding/json)"},
}

// fixedName is a name the generated file declares whatever the contract.
type fixedName struct{ name, what string }

// scope hands out the identifiers of one namespace of the generated file
// (the package, or the methods and fields of one type) and records every
// contract name that would take one already held.
type scope struct {
	// of names the namespace in messages: "" for the package, else the type.
	of    string
	held  map[string]holder
	g     *generator
	fixed map[string]bool
}

// holder is what holds a name: a fixed part of the API, or a contract
// declaration at pos.
type holder struct {
	what string
	pos  ir.Pos
}

func (g *generator) newScope(of string, fixed ...[]fixedName) *scope {
	s := &scope{of: of, held: map[string]holder{}, g: g, fixed: map[string]bool{}}
	for _, list := range fixed {
		for _, f := range list {
			s.held[f.name] = holder{what: f.what}
			s.fixed[f.name] = true
		}
	}
	return s
}

// take reserves name for what, declared at pos. When the name is held, it
// records a clash with hint and returns the name anyway: Generate refuses
// a contract with clashes, so the file is never written.
func (s *scope) take(name, what string, pos ir.Pos, hint string) string {
	prev, taken := s.held[name]
	if !taken {
		s.held[name] = holder{what: what, pos: pos}
		return name
	}
	goName := name
	if s.of != "" {
		goName = s.of + "." + name
	}
	msg := fmt.Sprintf("%s becomes %s in Go, which is %s", what, goName, prev.what)
	if !s.fixed[name] {
		msg = fmt.Sprintf("%s becomes %s in Go, as %s at %s:%s does", what, goName, prev.what, s.g.c.Source, prev.pos)
	}
	s.g.clashes = append(s.g.clashes, check.Diagnostic{File: s.g.c.Source, Pos: pos, Message: msg, Hint: hint})
	return name
}

// Hints for clashes, by what would have to change.
const (
	renameType  = "rename it: tiogen never renames a contract's names in the code it generates, and a type's name does not travel, so renaming it changes no message"
	renameValue = "rename the value or the type; a value travels as its name, so rename a value only before it is deployed"
	renameField = "rename the field before it is deployed: a field's name is its JSON key"
	renameEvent = "rename the event before it is deployed: an event's name is its identity on the wire (§5.4)"
)

// packageName derives the package name from the contract name (rule 2).
func packageName(contract string) string {
	name := strings.ToLower(strings.ReplaceAll(contract, "_", ""))
	return escapeReserved(name)
}

// escapeReserved appends an underscore to a Go keyword or predeclared
// identifier.
func escapeReserved(name string) string {
	if token.IsKeyword(name) || predeclared[name] {
		return name + "_"
	}
	return name
}

// ValidPackageName reports why name cannot be a package name given with
// --go-package, or "" when it can.
func ValidPackageName(name string) string {
	switch {
	case token.IsKeyword(name):
		return "is a Go keyword"
	case !token.IsIdentifier(name) || name == "_":
		return "is not a Go identifier"
	case predeclared[name]:
		return "is a Go predeclared identifier"
	}
	return ""
}

var predeclared = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`any bool byte comparable complex64 complex128 error float32 float64
		int int8 int16 int32 int64 rune string uint uint8 uint16 uint32 uint64 uintptr
		true false iota nil
		append cap clear close complex copy delete imag len make max min new panic print println real recover`) {
		predeclared[n] = true
	}
}

// goName is a contract name as an exported identifier (rule 1).
func goName(name string) string { return ir.GoName(name) }
