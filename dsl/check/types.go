package check

import (
	"cmp"
	"slices"
	"strings"

	"github.com/transport-io/tiogen/dsl/ast"
	"github.com/transport-io/tiogen/dsl/ir"
)

// ref resolves a written type. slot is true for a whole event slot, the
// only place bytes() may stand. ok is false when something was reported.
func (c *checker) ref(t *ast.TypeRef, slot bool) (ref ir.TypeRef, ok bool) {
	at := pos(t.Pos)
	switch {
	case t.List != nil:
		elem, ok := c.ref(t.List, false)
		return ir.ListRef(elem), ok
	case t.Map != nil:
		keyOK := true
		if t.Map.Key.Name != string(ir.String) {
			c.errorf(pos(t.Map.Key.Pos), "write map<string, T>; JSON object keys are strings",
				"map keys must be string, not "+written(t.Map.Key))
			keyOK = false
		}
		value, ok := c.ref(t.Map.Value, false)
		return ir.MapRef(value), ok && keyOK
	case t.BytesSlot:
		if !slot {
			c.errorf(at, "inside a type, list or map use bytes, which JSON carries as base64",
				"bytes() is allowed only as a whole event payload, returns or yields")
			return ir.BytesSlotRef(), false
		}
		return ir.BytesSlotRef(), true
	}
	switch name := t.Name; {
	case ir.IsPrimitive(name):
		return ir.PrimitiveRef(ir.Primitive(name)), true
	case c.types[name] != nil:
		return ir.NamedRef(name, ir.NamedType), true
	case c.enums[name] != nil:
		return ir.NamedRef(name, ir.NamedEnum), true
	case name == "list":
		c.errorf(at, "write list<T>, for example list<string>", "list needs an element type")
	case name == "map":
		c.errorf(at, "write map<string, T>, for example map<string, int32>", "map needs a value type")
	default:
		hint := "declare it (type " + name + " { ... } or enum " + name + " { ... }) or use a built-in type: " + builtins()
		if near := c.suggest(name); near != "" {
			hint = "did you mean '" + near + "'? Otherwise " + hint
		}
		c.errorf(at, hint, "unknown type '"+name+"'")
	}
	return ir.TypeRef{}, false
}

// written is a type as the contract wrote it, for messages.
func written(t *ast.TypeRef) string {
	switch {
	case t.List != nil:
		return "list<" + written(t.List) + ">"
	case t.Map != nil:
		return "map<" + written(t.Map.Key) + ", " + written(t.Map.Value) + ">"
	case t.BytesSlot:
		return "bytes()"
	}
	return t.Name
}

// maxSuggestions bounds the "did you mean" searches of one run, so that a
// huge contract full of unknown names cannot make the check quadratic.
const maxSuggestions = 100

// suggest is the declared or built-in name closest to an unknown one.
func (c *checker) suggest(name string) string {
	if c.suggestions >= maxSuggestions {
		return ""
	}
	c.suggestions++
	if c.known == nil {
		c.known = make([]string, 0, len(c.types)+len(c.enums)+len(ir.Primitives))
		for n := range c.types {
			c.known = append(c.known, n)
		}
		for n := range c.enums {
			c.known = append(c.known, n)
		}
		for _, p := range ir.Primitives {
			c.known = append(c.known, string(p))
		}
		slices.Sort(c.known) // a tie picks the same suggestion every run
	}
	return closest(name, c.known)
}

// edge is a required field whose type is directly a record: a value of the
// field's type cannot exist without a value of the target.
type edge struct {
	from, to string
	field    *ast.Field
}

// recursion reports each group of types that contain themselves only
// through required, direct fields: no finite value of them exists. Going
// through an optional field, a list or a map lets a value end.
func (c *checker) recursion(decls []*ast.Decl) {
	edges := map[string][]edge{}
	var order []string
	for _, d := range decls {
		if d.Type == nil || c.types[d.Type.Name.Value] != d.Type {
			continue
		}
		from := d.Type.Name.Value
		order = append(order, from)
		for _, f := range d.Type.Fields {
			if !f.Optional && f.Type.Name != "" && c.types[f.Type.Name] != nil {
				edges[from] = append(edges[from], edge{from: from, to: f.Type.Name, field: f})
			}
		}
	}
	for _, group := range components(order, edges) {
		cycle := cycleThrough(group, edges)
		if cycle == nil {
			continue
		}
		steps := make([]string, len(cycle))
		for i, e := range cycle {
			steps[i] = e.from + "." + e.field.Name.Value
		}
		c.errorf(pos(cycle[0].field.Name.Pos),
			"make one of these fields optional (name?: T), or hold it in a list or map, so a value can end",
			"type '"+cycle[0].from+"' contains itself through required fields: "+
				strings.Join(steps, " -> ")+" -> "+cycle[0].from)
	}
}

// components returns the strongly connected components of the graph
// (Tarjan), each sorted by declaration order, in declaration order of their
// first type.
func components(order []string, edges map[string][]edge) [][]string {
	index := map[string]int{}
	low := map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var out [][]string
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		onStack[v] = true
		for _, e := range edges[v] {
			if _, seen := index[e.to]; !seen {
				visit(e.to)
				low[v] = min(low[v], low[e.to])
			} else if onStack[e.to] {
				low[v] = min(low[v], index[e.to])
			}
		}
		if low[v] != index[v] {
			return
		}
		var group []string
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			group = append(group, w)
			if w == v {
				break
			}
		}
		out = append(out, group)
	}
	for _, v := range order {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	rank := map[string]int{}
	for i, v := range order {
		rank[v] = i
	}
	for _, g := range out {
		slices.SortFunc(g, func(a, b string) int { return cmp.Compare(rank[a], rank[b]) })
	}
	slices.SortFunc(out, func(a, b []string) int { return cmp.Compare(rank[a[0]], rank[b[0]]) })
	return out
}

// cycleThrough finds a shortest cycle from the group's first type back to
// itself inside the group, or nil when the group is one type without a
// field of its own type.
func cycleThrough(group []string, edges map[string][]edge) []edge {
	start := group[0]
	in := map[string]bool{}
	for _, v := range group {
		in[v] = true
	}
	// Breadth-first over the group, remembering the edge that reached each type.
	via := map[string]edge{}
	queue := []string{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, e := range edges[v] {
			if !in[e.to] {
				continue
			}
			if e.to == start {
				cycle := []edge{e}
				for at := v; at != start; at = via[at].from {
					cycle = append(cycle, via[at])
				}
				slices.Reverse(cycle)
				return cycle
			}
			if _, seen := via[e.to]; !seen {
				via[e.to] = e
				queue = append(queue, e.to)
			}
		}
	}
	return nil
}
