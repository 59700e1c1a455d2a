// Package ast parses a .tio contract into a syntax tree with positions. It
// knows the grammar only; every rule about meaning (names, types, lanes,
// ids) is dsl/check's job, so that one run reports every such problem.
package ast

import "github.com/alecthomas/participle/v2/lexer"

// File is one contract.
type File struct {
	Docs     []string `parser:"@DocComment*"`
	Name     *Ident   `parser:"'contract' @@"`
	Trailing string   `parser:"@TrailingDoc?"`
	Decls    []*Decl  `parser:"@@*"`
}

// Decl is one top-level declaration with the doc comments above it.
type Decl struct {
	Docs  []string   `parser:"@DocComment*"`
	Event *EventDecl `parser:"(  @@"`
	Type  *TypeDecl  `parser:" | @@"`
	Enum  *EnumDecl  `parser:" | @@ )"`
}

// Ident is a name with its position.
type Ident struct {
	Pos   lexer.Position
	Value string `parser:"@Ident"`
}

// TypeDecl is `type Name { fields }`.
type TypeDecl struct {
	Pos      lexer.Position
	Name     *Ident   `parser:"'type' @@ '{'"`
	Opening  string   `parser:"@TrailingDoc?"`
	Fields   []*Field `parser:"@@* '}'"`
	Trailing string   `parser:"@TrailingDoc?"`
}

// Field is `name?: Type`.
type Field struct {
	Pos      lexer.Position
	Docs     []string `parser:"@DocComment*"`
	Name     *Ident   `parser:"@@"`
	Optional bool     `parser:"@'?'? ':'"`
	Type     *TypeRef `parser:"@@"`
	Trailing string   `parser:"@TrailingDoc?"`
}

// EnumDecl is `enum Name { values }`.
type EnumDecl struct {
	Pos      lexer.Position
	Name     *Ident       `parser:"'enum' @@ '{'"`
	Opening  string       `parser:"@TrailingDoc?"`
	Values   []*EnumValue `parser:"@@* '}'"`
	Trailing string       `parser:"@TrailingDoc?"`
}

// EnumValue is one value of an enum.
type EnumValue struct {
	Docs     []string `parser:"@DocComment*"`
	Name     *Ident   `parser:"@@"`
	Trailing string   `parser:"@TrailingDoc?"`
}

// EventDecl is `event NAME [from SIDE] LANE PAYLOAD clauses...`. The
// clauses may come in any order and repeat; the checker says what is wrong.
type EventDecl struct {
	Pos      lexer.Position
	Name     *Ident    `parser:"'event' @@"`
	From     *Side     `parser:"('from' @@)?"`
	Lane     string    `parser:"@('reliable' | 'unreliable')"`
	Payload  *TypeRef  `parser:"@@"`
	Clauses  []*Clause `parser:"@@*"`
	Trailing string    `parser:"@TrailingDoc?"`
}

// Side is the side named by `from`.
type Side struct {
	Pos   lexer.Position
	Value string `parser:"@('client' | 'server')"`
}

// Clause is one of `returns T`, `yields T`, `fallback NAME`, `id N`.
type Clause struct {
	Pos      lexer.Position
	Returns  *TypeRef `parser:"(  'returns' @@"`
	Yields   *TypeRef `parser:" | 'yields' @@"`
	Fallback *Ident   `parser:" | 'fallback' @@"`
	ID       *IntLit  `parser:" | 'id' @@ )"`
}

// IntLit is an integer as written (decimal or 0x hex); the checker reads it.
type IntLit struct {
	Pos  lexer.Position
	Text string `parser:"@Int"`
}

// TypeRef is a type as written: a name, list<T>, map<K, V> or bytes().
// Exactly one of Name, List, Map and BytesSlot is set. It parses itself
// (see typeref.go).
type TypeRef struct {
	Pos       lexer.Position
	Name      string
	List      *TypeRef
	Map       *MapRef
	BytesSlot bool
}

// MapRef is the inside of map<K, V>.
type MapRef struct {
	Key   *TypeRef
	Value *TypeRef
}
