package check

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/transport-io/tiogen/dsl/ast"
	"github.com/transport-io/tiogen/dsl/ir"
	"github.com/transport-io/tiogen/runtime/wire"
)

// events checks every event declaration and returns the event table sorted
// by name by Unicode code point (§4.3); byte order of UTF-8 is code point
// order.
func (c *checker) events(decls []*ast.Decl) []ir.Event {
	names := newNamespace()
	out := []ir.Event{}
	for _, d := range decls {
		if d.Event == nil {
			continue
		}
		ev, ok := c.event(d.Event, d.Docs)
		if !c.validName("event", d.Event.Name) || !c.unique(names, "event", d.Event.Name) || !ok {
			continue
		}
		out = append(out, ev)
	}
	c.idCollisions(out)
	slices.SortFunc(out, func(a, b ir.Event) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (c *checker) event(e *ast.EventDecl, docs []string) (ir.Event, bool) {
	name := e.Name.Value
	ev := ir.Event{
		Name:      name,
		WireName:  name,
		ID:        wire.EventID(name),
		Lane:      ir.Lane(e.Lane),
		Direction: ir.DirEither,
		Kind:      ir.KindEmit,
		Docs:      docText(docs, e.Trailing),
		Pos:       pos(e.Name.Pos),
	}
	payload, ok := c.slot(e.Payload)
	ev.Payload = payload
	var result *ast.Clause // the first returns or yields
	seen := map[string]ir.Pos{}
	for _, cl := range e.Clauses {
		kw := clauseKeyword(cl)
		at := pos(cl.Pos)
		if first, again := seen[kw]; again {
			c.errorf(at, "keep one", "event '"+name+"' has '"+kw+"' twice (first at "+c.where(first)+")")
			ok = false
			continue
		}
		seen[kw] = at
		switch {
		case cl.Returns != nil || cl.Yields != nil:
			ok = c.callClause(&ev, cl, result) && ok
			if result == nil {
				result = cl
			}
		case cl.Fallback != nil:
			ok = c.fallback(&ev, cl.Fallback) && ok
		case cl.ID != nil:
			ok = c.explicitID(&ev, cl.ID) && ok
		}
	}
	if e.From != nil {
		if result != nil {
			c.errorf(pos(e.From.Pos), "remove 'from "+e.From.Value+"'; calls are always initiated by the client",
				"event '"+name+"' is a call ("+clauseKeyword(result)+") and cannot have 'from'")
			ok = false
		} else {
			ev.Direction = ir.Direction(e.From.Value)
		}
	}
	return ev, ok
}

func clauseKeyword(cl *ast.Clause) string {
	switch {
	case cl.Returns != nil:
		return "returns"
	case cl.Yields != nil:
		return "yields"
	case cl.Fallback != nil:
		return "fallback"
	default:
		return "id"
	}
}

// slot resolves the type of a payload, returns or yields.
func (c *checker) slot(t *ast.TypeRef) (ir.Slot, bool) {
	ref, ok := c.ref(t, true)
	codec := ir.CodecJSON
	if ref.Kind == ir.RefBytesSlot {
		codec = ir.CodecBytes
	}
	return ir.Slot{Type: ref, Codec: codec}, ok
}

// callClause applies a returns or yields clause; earlier is the first such
// clause already applied, if any.
func (c *checker) callClause(ev *ir.Event, cl, earlier *ast.Clause) bool {
	kw, t := clauseKeyword(cl), cl.Returns
	if t == nil {
		t = cl.Yields
	}
	at := pos(cl.Pos)
	if earlier != nil {
		c.errorf(at, "a call either returns one answer (returns) or streams answers (yields); keep one",
			"event '"+ev.Name+"' has both returns and yields")
		return false
	}
	if ev.Lane == ir.Unreliable {
		c.errorf(at, "calls travel on their own reliable stream (§3.2): make the event reliable, or drop '"+kw+"'",
			"event '"+ev.Name+"' is unreliable and cannot have '"+kw+"'")
		return false
	}
	slot, ok := c.slot(t)
	ev.Result = &slot
	ev.Kind = ir.KindReturns
	if kw == "yields" {
		ev.Kind = ir.KindYields
	}
	ev.Direction = ir.DirClient
	return ok
}

func (c *checker) fallback(ev *ir.Event, value *ast.Ident) bool {
	at := pos(value.Pos)
	if value.Value != string(ir.FallbackNewest) {
		c.errorf(at, "write fallback newest, the only fallback (§7.6)", "unknown fallback '"+value.Value+"'")
		return false
	}
	if ev.Lane == ir.Reliable {
		c.errorf(at, "remove it: a fallback says what an unreliable event accepts on a reliable-only transport (§7.6)",
			"event '"+ev.Name+"' is reliable and cannot have a fallback")
		return false
	}
	ev.Fallback = ir.FallbackNewest
	return true
}

func (c *checker) explicitID(ev *ir.Event, lit *ast.IntLit) bool {
	at := pos(lit.Pos)
	text := lit.Text
	var id uint64
	var err error
	if hex, ok := strings.CutPrefix(strings.ToLower(text), "0x"); ok {
		id, err = strconv.ParseUint(hex, 16, 64)
	} else {
		id, err = strconv.ParseUint(text, 10, 64)
	}
	switch {
	case err != nil && strings.Contains(err.Error(), "out of range"), err == nil && id > 0xFFFFFFFF:
		c.errorf(at, "choose an id from 1 to 4294967295 (0xFFFFFFFF)", "id "+text+" does not fit in 32 bits")
		return false
	case err != nil:
		c.errorf(at, "write the id in decimal (12345) or hexadecimal (0x1a2b3c4d)", "id '"+text+"' is not a number")
		return false
	case id == 0:
		c.errorf(at, "choose an id from 1 to 4294967295 (0xFFFFFFFF); 0 means \"no event\" on the wire (§5.4)",
			"id 0 is reserved")
		return false
	}
	ev.ID, ev.ExplicitID = uint32(id), true
	return true
}

// idCollisions reports every event whose id an earlier event already has.
// Both peers compute derived ids from names, so a collision would make two
// events indistinguishable on the wire (§5.4).
func (c *checker) idCollisions(events []ir.Event) {
	byPos := slices.Clone(events)
	slices.SortFunc(byPos, func(a, b ir.Event) int {
		return cmp.Or(cmp.Compare(a.Pos.Line, b.Pos.Line), cmp.Compare(a.Pos.Col, b.Pos.Col))
	})
	used := make(map[uint32]bool, len(events))
	for _, ev := range events {
		used[ev.ID] = true
	}
	first := map[uint32]ir.Event{}
	for _, ev := range byPos {
		prev, taken := first[ev.ID]
		if !taken {
			first[ev.ID] = ev
			continue
		}
		c.errorf(ev.Pos,
			"give one of them an explicit id with an unused value, e.g. `id "+fmt.Sprintf("0x%08x", freeID(used, ev.ID))+
				"`; the id becomes part of the contract, so both peers agree (§5.4)",
			fmt.Sprintf("event '%s' at %s and event '%s' at %s both have id 0x%08x",
				prev.Name, c.where(prev.Pos), ev.Name, c.where(ev.Pos), ev.ID))
	}
}

// freeID suggests an id near taken that no event uses.
func freeID(used map[uint32]bool, taken uint32) uint32 {
	id := taken + 1
	for used[id] || id == 0 {
		id++
	}
	return id
}
