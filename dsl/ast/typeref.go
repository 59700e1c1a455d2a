package ast

import (
	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// Parse reads a type reference; it implements participle.Parseable. The
// type is the most frequent node of a contract, and reading it by hand
// rather than as a four-way grammar alternative saves about a fifth of the
// allocations of a parse (BenchmarkParseCheck2000Events). The lexer has
// already told the constructors list<, map< and bytes( from names.
func (t *TypeRef) Parse(lex *lexer.PeekingLexer) error {
	tok := lex.Peek()
	t.Pos = tok.Pos
	switch {
	case tok.Type == tokIdent:
		t.Name = lex.Next().Value
		return nil
	case tok.Type != tokConstructor:
		return participle.NextMatch
	}
	switch lex.Next().Value {
	case "bytes":
		t.BytesSlot = true
		return expect(lex, "(", ")")
	case "list":
		t.List = &TypeRef{}
		return sequence(lex, "<", t.List, ">")
	default: // map
		t.Map = &MapRef{Key: &TypeRef{}, Value: &TypeRef{}}
		if err := sequence(lex, "<", t.Map.Key, ","); err != nil {
			return err
		}
		return sequence(lex, "", t.Map.Value, ">")
	}
}

// sequence reads the punctuation open (if any), a type into t, then close.
func sequence(lex *lexer.PeekingLexer, open string, t *TypeRef, close string) error {
	if open != "" {
		if err := expect(lex, open); err != nil {
			return err
		}
	}
	switch err := t.Parse(lex); err {
	case nil:
	case participle.NextMatch:
		return &participle.UnexpectedTokenError{Unexpected: *lex.Peek(), Expect: "TypeRef"}
	default:
		return err
	}
	return expect(lex, close)
}

// expect reads the given punctuation in order.
func expect(lex *lexer.PeekingLexer, puncts ...string) error {
	for _, p := range puncts {
		if tok := lex.Peek(); tok.Type != tokPunct || tok.Value != p {
			return &participle.UnexpectedTokenError{Unexpected: *tok, Expect: `"` + p + `"`}
		}
		lex.Next()
	}
	return nil
}
