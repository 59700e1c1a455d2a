package golang

import (
	"go/token"
	"reflect"
	"strings"

	"github.com/transport-io/tiogen/dsl/ir"
	"github.com/transport-io/tiogen/runtime/tio"
)

// Identifier rules of the generated Go file:
//
//  1. Contract names become exported identifiers through ir.GoName
//     (user_name -> UserName). An exported identifier is never a Go keyword
//     or predeclared identifier, since those are all lower-case.
//  2. The package name is the contract name lower-cased with its
//     underscores dropped (chat_app -> chatapp); a Go keyword or predeclared
//     identifier gets a trailing underscore (type -> type_).
//  3. A name that would collide with a name this file already declares gets
//     trailing underscores until it is free. Names are taken in a fixed
//     order, so the result depends only on the contract: first the file's
//     fixed API (Contract, Handler, UnimplementedHandler, NewServer, Server,
//     Peer, Room, Client, NewClient, Dial), then types and enums in
//     declaration order, then enum constants (EnumValue) in declaration
//     order. Inside a struct the methods Validate, MarshalJSON and
//     UnmarshalJSON come first; on Peer, Room, Server and Client the
//     methods and fields of the embedded runtime type come first (a call
//     named close gives Client.Close_, since *tio.Client has Close).
//  4. Unexported helpers are a fixed prefix on the exported name (encodeX,
//     decodeX, codecX, valuesX, idX), or codec_ plus the type as written for
//     slots that are not a declared type (codec_list_string): the prefixes
//     differ and exported names start upper-case, so these never collide.

// fixedAPI are the package-level names every generated file declares.
var fixedAPI = []string{"Contract", "Handler", "UnimplementedHandler", "NewServer", "Server", "Peer", "Room", "Client", "NewClient", "Dial"}

// structMethods are the methods every generated struct has.
var structMethods = []string{"Validate", "MarshalJSON", "UnmarshalJSON"}

// scope hands out unique identifiers within one namespace.
type scope map[string]bool

func newScope(taken ...string) scope {
	s := scope{}
	for _, n := range taken {
		s[n] = true
	}
	return s
}

// take reserves name, with trailing underscores added until it is free.
func (s scope) take(name string) string {
	for s[name] {
		name += "_"
	}
	s[name] = true
	return name
}

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

// embeddedNames are the promoted methods and the field name of a runtime
// type that a generated wrapper embeds (rule 3).
func embeddedNames(v any, field string) []string {
	t := reflect.TypeOf(v)
	names := []string{field}
	for i := range t.NumMethod() {
		names = append(names, t.Method(i).Name)
	}
	return names
}

var (
	peerNames   = embeddedNames(&tio.Peer{}, "Peer")
	roomNames   = embeddedNames(&tio.Room{}, "Room")
	clientNames = embeddedNames(&tio.Client{}, "Client")
)

// goName is a contract name as an exported identifier (rule 1).
func goName(name string) string { return ir.GoName(name) }
