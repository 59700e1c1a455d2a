package ast

import (
	"errors"
	"strings"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

var parser = participle.MustBuild[File](
	participle.Lexer(tioLexer{}),
	participle.UseLookahead(3),
)

// SyntaxError is a contract that does not follow the grammar.
type SyntaxError struct {
	Pos     lexer.Position
	Message string
	// Hint says what to do about it.
	Hint string
}

func (e *SyntaxError) Error() string { return e.Pos.String() + ": " + e.Message }

// Parse reads one contract. Its only error is a *SyntaxError.
func Parse(filename string, src []byte) (*File, error) {
	f, err := parser.ParseBytes(filename, src)
	if err == nil {
		return f, nil
	}
	return nil, syntaxError(filename, src, err)
}

func syntaxError(filename string, src []byte, err error) *SyntaxError {
	pos := lexer.Position{Filename: filename, Line: 1, Column: 1}
	var perr participle.Error
	if !errors.As(err, &perr) {
		return &SyntaxError{Pos: pos, Message: err.Error(), Hint: grammarHint}
	}
	pos = perr.Position()
	pos.Filename = filename
	var lexErr *lexer.Error
	if errors.As(err, &lexErr) {
		hint := "this character means nothing in a contract: names are ASCII letters, digits and _, comments start with //, and there are no semicolons"
		if strings.HasPrefix(lexErr.Msg, "types nest") {
			hint = "declare a named type for an inner part"
		}
		return &SyntaxError{Pos: pos, Message: lexErr.Msg, Hint: hint}
	}
	var unexpected *participle.UnexpectedTokenError
	if !errors.As(err, &unexpected) {
		return &SyntaxError{Pos: pos, Message: perr.Message(), Hint: grammarHint}
	}
	tok := unexpected.Unexpected
	expected := expectedPhrase(unexpected.Message())
	if better := explain(filename, src, tok, expected); better != nil {
		return better
	}
	got := "'" + tok.Value + "'"
	if tok.EOF() {
		got = "end of file"
	}
	msg := "unexpected " + got
	if expected != "" {
		msg += ", expected " + expected
	}
	return &SyntaxError{Pos: pos, Message: msg, Hint: hintFor(tok, expected)}
}

const grammarHint = "see the grammar in docs/contract-language.md"

// expectedPhrase turns the first element of participle's "(expected ...)"
// into words a user knows.
func expectedPhrase(msg string) string {
	_, exp, ok := strings.Cut(msg, "(expected ")
	if !ok {
		return ""
	}
	exp = strings.TrimSuffix(exp, ")")
	// The first element: a parenthesised group or a run up to a space.
	first := exp
	if strings.HasPrefix(exp, "(") {
		if i := strings.Index(exp, ")"); i > 0 {
			first = exp[1:i]
		}
	} else if i := strings.IndexByte(exp, ' '); i > 0 {
		first = exp[:i]
	}
	switch first {
	case "TypeRef":
		return "a type"
	case "Ident":
		return "a name"
	case "Side":
		return "client or server"
	case "Clause":
		return "returns, yields, fallback or id"
	case "IntLit":
		return "a number"
	case "EventDecl | TypeDecl | EnumDecl":
		return "a declaration (type, enum or event)"
	}
	first = strings.ReplaceAll(first, `"`, "'")
	return strings.ReplaceAll(first, " | ", " or ")
}

func hintFor(tok lexer.Token, expected string) string {
	switch {
	case strings.HasPrefix(tok.Value, "///") || (tok.EOF() && expected == "a declaration (type, enum or event)"):
		return "a /// doc comment goes on its own line(s) right above a declaration, or at the end of the line it documents"
	case expected == "a type":
		return "a type is bool, string, int32, int64, uint32, uint64, float64, bytes, json, a declared type or enum, list<T> or map<string, T>; an event slot may also be bytes()"
	case expected == "'contract'":
		return "a contract file starts with: contract NAME"
	case expected == "':'":
		return "a field is written name: Type, or name?: Type when it may be absent"
	case expected == "'}'" && tok.EOF():
		return "close the declaration with }"
	case expected == "','" || expected == "'>'":
		return "a list is written list<T>, a map map<string, T>"
	default:
		return "declarations are: type Name { field: Type ... }, enum Name { value ... }, " +
			"event NAME [from client|from server] reliable|unreliable PAYLOAD [returns T | yields T] [fallback newest] [id N]"
	}
}
