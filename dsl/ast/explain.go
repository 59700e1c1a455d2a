package ast

import (
	"fmt"

	"github.com/alecthomas/participle/v2/lexer"
)

// A grammar error is found where the parser could not go on, which is often
// a line after the mistake: a declaration missing its payload type takes the
// next line's `event` for its type and fails on the name after it, and an
// unclosed { fails at the end of the file. explain looks back from there
// to the declaration the user left unfinished.

// declKeywords start a top-level declaration.
var declKeywords = map[string]bool{"event": true, "type": true, "enum": true}

// openDecl is the declaration the tokens so far are inside.
type openDecl struct {
	kind, name string
	pos        lexer.Position
	tokens     []lexer.Token // from the keyword on, doc comments left out
	brace      bool          // its { is open
}

// explain returns a better error than the parser's for the mistake that
// stopped it at stop, expecting expected, or nil.
func explain(filename string, src []byte, stop lexer.Token, expected string) *SyntaxError {
	tokens, ok := tokensUpTo(filename, src, stop.Pos.Offset)
	if !ok {
		return nil
	}
	var d *openDecl
	var decls []*openDecl
	for i, t := range tokens {
		isDoc := t.Type == tokDoc || t.Type == tokTrailingDoc
		switch {
		case d != nil && d.brace:
			if t.Type == tokPunct && t.Value == "}" {
				d.brace = false
			}
		case t.Type == tokIdent && declKeywords[t.Value] && startsLine(tokens, i) && (d == nil || !d.brace):
			d = &openDecl{kind: t.Value, pos: t.Pos}
			if i+1 < len(tokens) && tokens[i+1].Type == tokIdent {
				d.name = tokens[i+1].Value
			}
			decls = append(decls, d)
		case d != nil && t.Type == tokPunct && t.Value == "{" && !isDoc:
			d.brace = true
		}
		if d != nil && !isDoc {
			d.tokens = append(d.tokens, t)
		}
	}
	// A } is missing when the parser wanted one and found the end of the
	// file or a line starting a declaration.
	newDecl := stop.EOF() || (declKeywords[stop.Value] && len(tokens) > 0 && tokens[len(tokens)-1].Pos.Line < stop.Pos.Line)
	if d != nil && d.brace && d.name != "" && expected == "'}'" && newDecl {
		return unclosed(d)
	}
	// An event missing its type swallows the next line's keyword as its
	// type, so the parser stops in the declaration after it: the first
	// event that ends without its type is the mistake.
	for i, e := range decls {
		end := stop
		if i+1 < len(decls) {
			end = decls[i+1].tokens[0]
		}
		if e.kind != "event" || e.name == "" {
			continue
		}
		if err := missingType(e, end); err != nil {
			return err
		}
	}
	return nil
}

// missingType reports an event whose lane, returns or yields is followed by
// no type: by the next declaration, a doc comment or the end of the file.
// end is the token after the event's own.
func missingType(d *openDecl, end lexer.Token) *SyntaxError {
	for i, t := range d.tokens {
		next := end
		if i+1 < len(d.tokens) {
			next = d.tokens[i+1]
		}
		if t.Type != tokIdent || (next.Pos.Line == t.Pos.Line && !next.EOF()) {
			continue
		}
		endsHere := next.EOF() || next.Type == tokDoc || next.Type == tokTrailingDoc || declKeywords[next.Value]
		if !endsHere {
			continue
		}
		at := after(t)
		switch t.Value {
		case "reliable", "unreliable":
			return &SyntaxError{Pos: at,
				Message: fmt.Sprintf("event '%s' has no payload type after '%s'", d.name, t.Value),
				Hint:    "write the type the event carries after its lane, as in event " + d.name + " " + t.Value + " Message (bytes() carries raw bytes)"}
		case "returns", "yields":
			return &SyntaxError{Pos: at,
				Message: fmt.Sprintf("event '%s' has no type after '%s'", d.name, t.Value),
				Hint:    "write the type of what the call " + t.Value + ", as in " + t.Value + " Result"}
		}
	}
	return nil
}

// unclosed reports a type or enum whose { is never closed. The } belongs
// before the first line that starts with a declaration keyword, or at the
// end of the file.
func unclosed(d *openDecl) *SyntaxError {
	last := d.tokens[len(d.tokens)-1]
	for i := 1; i < len(d.tokens); i++ {
		t := d.tokens[i]
		if t.Type == tokIdent && declKeywords[t.Value] && t.Pos.Line > d.tokens[i-1].Pos.Line {
			last = d.tokens[i-1]
			break
		}
	}
	what := "field"
	if d.kind == "enum" {
		what = "value"
	}
	return &SyntaxError{Pos: after(last),
		Message: fmt.Sprintf("%s '%s' (line %d) is missing its closing '}'", d.kind, d.name, d.pos.Line),
		Hint:    fmt.Sprintf("close %s with } after its last %s", d.name, what)}
}

// tokensUpTo lexes src up to offset, doc comments included.
func tokensUpTo(filename string, src []byte, offset int) ([]lexer.Token, bool) {
	lex, _ := tioLexer{}.LexBytes(filename, src)
	var out []lexer.Token
	for {
		t, err := lex.Next()
		if err != nil || t.EOF() || t.Pos.Offset >= offset {
			return out, err == nil
		}
		out = append(out, t)
	}
}

// startsLine reports whether tokens[i] is the first token of its line.
func startsLine(tokens []lexer.Token, i int) bool {
	return i == 0 || tokens[i-1].Pos.Line < tokens[i].Pos.Line
}

// after is the position just past a token on its line.
func after(t lexer.Token) lexer.Position {
	p := t.Pos
	p.Column += len([]rune(t.Value))
	p.Offset += len(t.Value)
	return p
}
