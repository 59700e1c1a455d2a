package ast

import (
	"errors"
	"strings"
	"testing"
)

func TestDocCommentsAttach(t *testing.T) {
	src := `/// contract doc
contract c /// contract trailing
//// banner, not a doc
/// type doc
type T { /// opening doc
  a: int32 /// a trailing
  /// b leading
  b?: string
}
event e reliable T /// event trailing
`
	f, err := Parse("c.tio", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, got []string, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s docs %q, want %q", what, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s docs %q, want %q", what, got, want)
			}
		}
	}
	check("contract", f.Docs, "/// contract doc")
	if f.Trailing != "/// contract trailing" {
		t.Fatalf("contract trailing %q", f.Trailing)
	}
	typ := f.Decls[0]
	check("type", typ.Docs, "/// type doc")
	if typ.Type.Opening != "/// opening doc" {
		t.Fatalf("opening %q", typ.Type.Opening)
	}
	a, b := typ.Type.Fields[0], typ.Type.Fields[1]
	check("a", a.Docs)
	if a.Trailing != "/// a trailing" {
		t.Fatalf("a trailing %q", a.Trailing)
	}
	check("b", b.Docs, "/// b leading")
	if b.Trailing != "" || !b.Optional {
		t.Fatalf("b trailing %q optional %v", b.Trailing, b.Optional)
	}
	if f.Decls[1].Event.Trailing != "/// event trailing" {
		t.Fatalf("event trailing %q", f.Decls[1].Event.Trailing)
	}
}

func TestPositions(t *testing.T) {
	f, err := Parse("c.tio", []byte("contract c\n\n  event  ping reliable string id 0x2cf24dba\n"))
	if err != nil {
		t.Fatal(err)
	}
	ev := f.Decls[0].Event
	if ev.Name.Pos.Line != 3 || ev.Name.Pos.Column != 10 {
		t.Fatalf("name at %d:%d, want 3:10", ev.Name.Pos.Line, ev.Name.Pos.Column)
	}
	id := ev.Clauses[0].ID
	if id.Text != "0x2cf24dba" || id.Pos.Column != 34 {
		t.Fatalf("id %q at column %d", id.Text, id.Pos.Column)
	}
}

func TestBytesTypeAndBytesSlot(t *testing.T) {
	f, err := Parse("c.tio", []byte("contract c\ntype T { a: bytes }\nevent e reliable bytes() returns bytes\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Decls[0].Type.Fields[0].Type; got.Name != "bytes" || got.BytesSlot {
		t.Fatalf("field type %+v, want the name bytes", got)
	}
	ev := f.Decls[1].Event
	if !ev.Payload.BytesSlot || ev.Clauses[0].Returns.Name != "bytes" {
		t.Fatalf("payload %+v returns %+v", ev.Payload, ev.Clauses[0].Returns)
	}
}

func TestSyntaxErrorIsPositioned(t *testing.T) {
	_, err := Parse("c.tio", []byte("contract c\nevent chat string\n"))
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *SyntaxError", err)
	}
	if se.Pos.Line != 2 || se.Pos.Column != 12 || se.Message != "unexpected 'string', expected 'reliable' or 'unreliable'" || se.Hint == "" {
		t.Fatalf("got %d:%d %q (hint %q)", se.Pos.Line, se.Pos.Column, se.Message, se.Hint)
	}
}

func TestNestingIsBounded(t *testing.T) {
	deep := func(n int) []byte {
		return []byte("contract c\nevent e reliable " + strings.Repeat("list<", n) + "string" + strings.Repeat(">", n) + "\n")
	}
	if _, err := Parse("c.tio", deep(maxNesting)); err != nil {
		t.Fatalf("%d levels: %v", maxNesting, err)
	}
	_, err := Parse("c.tio", deep(1_000_000))
	var se *SyntaxError
	if !errors.As(err, &se) || se.Message != "types nest more than 64 deep" || se.Pos.Column != 18+5*maxNesting+4 {
		t.Fatalf("got %v", err)
	}
}

func TestTypeRefSyntaxErrors(t *testing.T) {
	cases := map[string]string{
		"map<string>":     "3:14: unexpected '>', expected ','",
		"list<string":     "4:1: unexpected '}', expected '>'",
		"list<>":          "3:9: unexpected '>', expected a type",
		"bytes(":          "4:1: unexpected '}', expected ')'",
		"map<string, >":   "3:16: unexpected '>', expected a type",
		"list<list<T>":    "4:1: unexpected '}', expected '>'",
		"list <string>":   "",
		"map < string,T>": "",
	}
	for typ, want := range cases {
		_, err := Parse("c.tio", []byte("contract c\ntype T {\na: "+typ+"\n}\n"))
		got := ""
		if err != nil {
			se := err.(*SyntaxError)
			got = se.Pos.String()[len("c.tio:"):] + ": " + se.Message
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", typ, got, want)
		}
	}
}

// TestSyntaxErrorsPointAtTheUnfinishedDeclaration: the parser stops a line
// late (the next declaration's keyword taken for a missing type, the end of
// the file for a missing }); the error names the declaration and points
// where the type or } belongs.
func TestSyntaxErrorsPointAtTheUnfinishedDeclaration(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"contract c\nevent chat reliable\nevent next reliable string\n", "2:20: event 'chat' has no payload type after 'reliable'"},
		{"contract c\nevent chat reliable\ntype T { a: string }\n", "2:20: event 'chat' has no payload type after 'reliable'"},
		{"contract c\nevent chat reliable\n/// doc\nevent next reliable string\n", "2:20: event 'chat' has no payload type after 'reliable'"},
		{"contract c\nevent save reliable", "2:20: event 'save' has no payload type after 'reliable'"},
		{"contract c\nevent save reliable string yields\n", "2:34: event 'save' has no type after 'yields'"},
		{"contract c\ntype T {\n  a: string\n\nevent e reliable T\n", "3:12: type 'T' (line 2) is missing its closing '}'"},
		{"contract c\ntype T { a: string", "2:19: type 'T' (line 2) is missing its closing '}'"},
		{"contract c\nenum E { a b\nevent e reliable E\n", "2:13: enum 'E' (line 2) is missing its closing '}'"},
		// A mistake inside a declaration is still reported where it is.
		{"contract c\ntype T { a string }\n", "2:12: unexpected 'string', expected ':'"},
		{"contract c\ntype T {\n  a: string\n  /// documents nothing\n}\n", "4:3: unexpected '/// documents nothing', expected '}'"},
	} {
		_, err := Parse("t.tio", []byte(c.src))
		if err == nil || !strings.HasPrefix(err.Error(), "t.tio:"+c.want) {
			t.Errorf("%q: %v, want t.tio:%s", c.src, err, c.want)
		}
	}
}
