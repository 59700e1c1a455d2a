// Package check turns a parsed contract into the IR, reporting every
// problem it finds in one run, ordered by position.
package check

import (
	"strings"

	"github.com/transport-io/tiogen/dsl/ast"
	"github.com/transport-io/tiogen/dsl/ir"
)

// Source parses and checks one contract. The contract is nil exactly when
// there are diagnostics.
func Source(filename string, src []byte) (*ir.Contract, []Diagnostic) {
	f, err := ast.Parse(filename, src)
	if err != nil {
		se := err.(*ast.SyntaxError)
		return nil, []Diagnostic{{File: filename, Pos: pos(se.Pos), Message: se.Message, Hint: se.Hint}}
	}
	return File(filename, f)
}

// File checks a parsed contract. The contract is nil exactly when there are
// diagnostics.
func File(filename string, f *ast.File) (*ir.Contract, []Diagnostic) {
	c := &checker{
		file:  filename,
		types: map[string]*ast.TypeDecl{},
		enums: map[string]*ast.EnumDecl{},
	}
	out := &ir.Contract{
		Name:   f.Name.Value,
		Docs:   docText(f.Docs, f.Trailing),
		Source: filename,
		Events: []ir.Event{},
		Types:  []ir.Type{},
		Enums:  []ir.Enum{},
	}
	c.validName("contract", f.Name)
	c.declare(f.Decls)
	for _, d := range f.Decls {
		switch {
		case d.Type != nil:
			out.Types = append(out.Types, c.typeDecl(d.Type, d.Docs))
		case d.Enum != nil:
			out.Enums = append(out.Enums, c.enumDecl(d.Enum, d.Docs))
		}
	}
	c.recursion(f.Decls)
	out.Events = c.events(f.Decls)
	if len(c.diags) > 0 {
		Sort(c.diags)
		return nil, c.diags
	}
	return out, nil
}

type checker struct {
	file  string
	diags []Diagnostic
	// The first declaration of each type and enum name.
	types map[string]*ast.TypeDecl
	enums map[string]*ast.EnumDecl
	// known is every declared and built-in type name, sorted, built on
	// the first unknown reference; suggestions counts the searches in it.
	known       []string
	suggestions int
}

func (c *checker) errorf(at ir.Pos, hint, message string) {
	c.diags = append(c.diags, Diagnostic{File: c.file, Pos: at, Message: message, Hint: hint})
}

// where is a position another diagnostic refers to, as file:line:col.
func (c *checker) where(p ir.Pos) string { return c.file + ":" + p.String() }

// declare records every type and enum name, reporting duplicates, built-in
// names and names that collide once converted to Go or TypeScript.
func (c *checker) declare(decls []*ast.Decl) {
	names := newNamespace()
	for _, d := range decls {
		var name *ast.Ident
		kind := "type"
		switch {
		case d.Type != nil:
			name = d.Type.Name
		case d.Enum != nil:
			name, kind = d.Enum.Name, "enum"
		default:
			continue
		}
		if ir.IsPrimitive(name.Value) || name.Value == "list" || name.Value == "map" {
			c.errorf(pos(name.Pos), "choose another name; the built-in types are "+builtins(),
				kind+" '"+name.Value+"' has the name of a built-in type")
			continue
		}
		if !c.validName(kind, name) || !c.unique(names, kind, name) {
			continue
		}
		if d.Type != nil {
			c.types[name.Value] = d.Type
		} else {
			c.enums[name.Value] = d.Enum
		}
	}
}

func (c *checker) typeDecl(t *ast.TypeDecl, docs []string) ir.Type {
	out := ir.Type{
		Name:   t.Name.Value,
		Docs:   docText(docs, t.Opening, t.Trailing),
		Fields: []ir.Field{},
		Pos:    pos(t.Name.Pos),
	}
	names := newNamespace()
	for _, f := range t.Fields {
		if !c.validName("field", f.Name) {
			continue
		}
		c.unique(names, "field", f.Name)
		ref, _ := c.ref(f.Type, false)
		out.Fields = append(out.Fields, ir.Field{
			Name:     f.Name.Value,
			Type:     ref,
			Optional: f.Optional,
			Docs:     docText(f.Docs, f.Trailing),
			Pos:      pos(f.Name.Pos),
		})
	}
	return out
}

func (c *checker) enumDecl(e *ast.EnumDecl, docs []string) ir.Enum {
	out := ir.Enum{
		Name:   e.Name.Value,
		Docs:   docText(docs, e.Opening, e.Trailing),
		Values: []ir.EnumValue{},
		Pos:    pos(e.Name.Pos),
	}
	if len(e.Values) == 0 {
		c.errorf(out.Pos, "list its values: enum "+e.Name.Value+" { first second }",
			"enum '"+e.Name.Value+"' has no values")
	}
	names := newNamespace()
	for _, v := range e.Values {
		if !c.validName("enum value", v.Name) {
			continue
		}
		c.unique(names, "enum value", v.Name)
		out.Values = append(out.Values, ir.EnumValue{
			Name: v.Name.Value,
			Docs: docText(v.Docs, v.Trailing),
			Pos:  pos(v.Name.Pos),
		})
	}
	return out
}

// docText joins doc comment lines, dropping each `///` and one space after
// it. Empty parts (no trailing doc) are skipped.
func docText(lines []string, trailing ...string) string {
	var parts []string
	add := func(l string) {
		l = strings.TrimPrefix(l, "///")
		l = strings.TrimPrefix(l, " ")
		parts = append(parts, strings.TrimRight(l, " \t\r"))
	}
	for _, l := range lines {
		add(l)
	}
	for _, l := range trailing {
		if l != "" {
			add(l)
		}
	}
	return strings.Join(parts, "\n")
}
