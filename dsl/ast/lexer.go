package ast

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2/lexer"
)

// Token types. Whitespace and comments never become tokens.
const (
	tokIdent lexer.TokenType = -(iota + 2) // -1 is lexer.EOF
	tokInt
	tokPunct
	tokDoc         // a /// comment on its own line: documents what follows
	tokTrailingDoc // a /// comment ending a line that holds other tokens
	tokConstructor // list or map before <, bytes before (
)

// tioLexer is the contract's lexer. It is written by hand rather than with
// participle's regular-expression lexer because it is most of the cost of a
// parse, and because it must know whether a /// comment ends a line that
// holds other tokens: such a comment documents the declaration on its own
// line (TrailingDoc), any other documents the declaration that follows
// (DocComment).
type tioLexer struct{}

func (tioLexer) Symbols() map[string]lexer.TokenType {
	return map[string]lexer.TokenType{
		"EOF":         lexer.EOF,
		"Ident":       tokIdent,
		"Int":         tokInt,
		"Punct":       tokPunct,
		"DocComment":  tokDoc,
		"TrailingDoc": tokTrailingDoc,
		"Constructor": tokConstructor,
	}
}

func (l tioLexer) Lex(filename string, r io.Reader) (lexer.Lexer, error) {
	src, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return l.LexString(filename, string(src))
}

func (tioLexer) LexString(filename, src string) (lexer.Lexer, error) {
	s := &scanner{src: src, pos: lexer.Position{Filename: filename, Line: 1, Column: 1}}
	// Some editors start a UTF-8 file with a byte order mark; it is not text.
	if strings.HasPrefix(src, "\uFEFF") {
		s.pos.Offset = len("\uFEFF")
	}
	return s, nil
}

func (l tioLexer) LexBytes(filename string, src []byte) (lexer.Lexer, error) {
	return l.LexString(filename, string(src))
}

// maxNesting bounds how deep list<...> and map<...> nest, so that hostile
// input cannot drive the recursive parser and checker into the stack limit.
const maxNesting = 64

type scanner struct {
	src      string
	pos      lexer.Position // of src[pos.Offset]
	lastLine int            // line of the last token that was not a doc comment
	depth    int            // open < not yet closed
}

// advance moves over n bytes, keeping line and column (in characters).
func (s *scanner) advance(n int) {
	end := s.pos.Offset + n
	for s.pos.Offset < end {
		c := s.src[s.pos.Offset]
		switch {
		case c == '\n':
			s.pos.Line++
			s.pos.Column = 1
			s.pos.Offset++
		case c < utf8.RuneSelf:
			s.pos.Column++
			s.pos.Offset++
		default:
			_, size := utf8.DecodeRuneInString(s.src[s.pos.Offset:])
			s.pos.Column++
			s.pos.Offset += size
		}
	}
}

// span is the length of the run at the current offset whose bytes satisfy in.
func (s *scanner) span(in func(byte) bool) int {
	n := 0
	for s.pos.Offset+n < len(s.src) && in(s.src[s.pos.Offset+n]) {
		n++
	}
	return n
}

func (s *scanner) Next() (lexer.Token, error) {
	for {
		rest := s.src[s.pos.Offset:]
		if rest == "" {
			return lexer.EOFToken(s.pos), nil
		}
		c := rest[0]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v':
			s.advance(s.span(isSpace))
		case len(rest) >= 2 && rest[:2] == "//":
			n := s.span(func(b byte) bool { return b != '\n' })
			// Exactly three slashes make a doc comment; //// is an ordinary
			// comment, as in Rust, so that banners of slashes are not docs.
			if len(rest) >= 3 && rest[2] == '/' && (len(rest) == 3 || rest[3] != '/') {
				typ := tokDoc
				if s.pos.Line == s.lastLine {
					typ = tokTrailingDoc
				}
				return s.token(typ, n), nil
			}
			s.advance(n)
		case isLetter(c) || c == '_':
			n := s.span(isIdent)
			return s.token(s.identType(rest[:n], rest[n:]), n), nil
		case isDigit(c):
			// Letters are taken too, so 0x1f and a mistyped 12zz are one token
			// the checker can judge.
			return s.token(tokInt, s.span(isIdent)), nil
		case c == '<':
			if s.depth++; s.depth > maxNesting {
				return lexer.Token{}, &lexer.Error{Pos: s.pos, Msg: fmt.Sprintf("types nest more than %d deep", maxNesting)}
			}
			return s.token(tokPunct, 1), nil
		case c == '>':
			s.depth = max(s.depth-1, 0)
			return s.token(tokPunct, 1), nil
		case c == '{' || c == '}' || c == '(' || c == ')' || c == ',' || c == ':' || c == '?':
			return s.token(tokPunct, 1), nil
		default:
			r, _ := utf8.DecodeRuneInString(rest)
			return lexer.Token{}, &lexer.Error{Pos: s.pos, Msg: fmt.Sprintf("unexpected character %q", r)}
		}
	}
}

// identType tells a type constructor (list<, map<, bytes() from a name, so
// that list, map and bytes stay usable as names elsewhere.
func (s *scanner) identType(word, after string) lexer.TokenType {
	after = strings.TrimLeft(after, " \t")
	switch {
	case (word == "list" || word == "map") && strings.HasPrefix(after, "<"),
		word == "bytes" && strings.HasPrefix(after, "("):
		return tokConstructor
	}
	return tokIdent
}

func (s *scanner) token(typ lexer.TokenType, n int) lexer.Token {
	tok := lexer.Token{Type: typ, Value: s.src[s.pos.Offset : s.pos.Offset+n], Pos: s.pos}
	if typ != tokDoc && typ != tokTrailingDoc {
		s.lastLine = s.pos.Line
	}
	s.advance(n)
	return tok
}

func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\r' || b == '\n' || b == '\f' || b == '\v'
}
func isLetter(b byte) bool { return ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z') }
func isDigit(b byte) bool  { return '0' <= b && b <= '9' }
func isIdent(b byte) bool  { return isLetter(b) || isDigit(b) || b == '_' }
