package typed

import (
	"bytes"
	"slices"

	"github.com/transport-io/tiogen/runtime/wire"
)

// canonicalValue writes the JSON value d is at in canonical form (see
// Encoder.JSON). Most values are canonical already (what a tiogen peer
// sent): they are written in one pass as they are read. At the first
// object whose keys are out of order or repeated, that pass stops and the
// value is read again into a tree that is written sorted, so a payload
// with unordered objects nested in unordered objects costs time linear in
// its size, not in its size times its depth.
func (e *Encoder) canonicalValue(d *Decoder) {
	d.ws()
	start, depth, mark := d.i, d.depth, len(e.b)
	e.canonical(d)
	if !e.unsorted {
		return
	}
	e.unsorted = false
	// Read again from the start, a failure the first pass met too (it
	// stops at a key out of order, the failure not yet named by its path).
	d.i, d.depth, d.err, e.b = start, depth, nil, e.b[:mark]
	var t tree
	t.build(d, nil)
	if d.err == nil {
		e.comma()
		t.write(e, 0)
	}
}

// canonical writes the value d is at as it reads it, and sets e.unsorted
// (writing no further) at an object that is not in canonical order.
func (e *Encoder) canonical(d *Decoder) {
	switch c := d.peek(); {
	case d.err != nil:
	case c == '{':
		e.comma()
		e.b = append(e.b, '{')
		var prev []byte
		o := d.Object()
		for n := 0; o.Next(d); n++ {
			key := o.key[1 : len(o.key)-1]
			if bytes.IndexByte(key, '\\') >= 0 {
				key = []byte(o.text(d))
			}
			if n > 0 {
				if bytes.Compare(prev, key) >= 0 {
					e.unsorted = true
					return
				}
				e.b = append(e.b, ',')
			}
			prev = key
			e.b = wire.AppendJSONString(e.b, string(key))
			e.b = append(e.b, ':')
			if e.canonical(d); e.unsorted {
				return
			}
		}
		e.b = append(e.b, '}')
	case c == '[':
		it := e.Array()
		a := d.Array()
		for a.Next(d) {
			it.Item(e)
			if e.canonical(d); e.unsorted {
				return
			}
		}
		it.End(e)
	case c == '"':
		raw, ok := d.rawString("a value")
		if !ok {
			return
		}
		if bytes.IndexByte(raw, '\\') < 0 {
			// Without escapes it is already as String writes it: the
			// decoder refused raw control characters.
			e.comma()
			e.b = append(e.b, raw...)
			return
		}
		e.String(d.text(raw))
	case c == 't' || c == 'f':
		e.Bool(d.Bool())
	case c == 'n':
		if d.literal("null") {
			e.comma()
			e.b = append(e.b, "null"...)
		}
	case c == 0:
		d.syntax("unexpected end")
	default:
		if tok, ok := d.shortInteger(); ok {
			e.comma()
			e.b = append(e.b, tok...)
			return
		}
		e.Float64(d.Float64())
	}
}

// tree is a JSON value read for sorting: its nodes in document order, a
// container followed by its subtree, and the canonical text of its scalars.
type tree struct {
	nodes   []node
	scalars Encoder
}

type node struct {
	key        []byte // the member's key, for a member of an object
	kind       byte   // '{', '[' or 0 for a scalar
	start, end int    // a scalar's canonical text in scalars.b
	size       int    // nodes in the subtree, this one included
}

func (t *tree) build(d *Decoder, key []byte) {
	i := len(t.nodes)
	t.nodes = append(t.nodes, node{key: key})
	switch c := d.peek(); {
	case d.err != nil:
	case c == '{':
		t.nodes[i].kind = '{'
		o := d.Object()
		for o.Next(d) {
			k := o.key[1 : len(o.key)-1]
			if bytes.IndexByte(k, '\\') >= 0 {
				k = []byte(o.text(d))
			}
			t.build(d, k)
		}
	case c == '[':
		t.nodes[i].kind = '['
		a := d.Array()
		for a.Next(d) {
			t.build(d, nil)
		}
	default:
		t.scalars.start = len(t.scalars.b) // no separator before it
		t.nodes[i].start = len(t.scalars.b)
		t.scalars.canonical(d)
		t.nodes[i].end = len(t.scalars.b)
	}
	t.nodes[i].size = len(t.nodes) - i
}

// write writes node i and its subtree, object members sorted by key with
// the last of equal keys kept, as JSON.parse keeps it.
func (t *tree) write(e *Encoder, i int) {
	n := t.nodes[i]
	switch n.kind {
	case 0:
		e.b = append(e.b, t.scalars.b[n.start:n.end]...)
	case '[':
		e.b = append(e.b, '[')
		for j := i + 1; j < i+n.size; j += t.nodes[j].size {
			if j > i+1 {
				e.b = append(e.b, ',')
			}
			t.write(e, j)
		}
		e.b = append(e.b, ']')
	case '{':
		var members []int
		for j := i + 1; j < i+n.size; j += t.nodes[j].size {
			members = append(members, j)
		}
		slices.SortStableFunc(members, func(a, b int) int { return bytes.Compare(t.nodes[a].key, t.nodes[b].key) })
		e.b = append(e.b, '{')
		first := true
		for k, j := range members {
			if k+1 < len(members) && bytes.Equal(t.nodes[j].key, t.nodes[members[k+1]].key) {
				continue
			}
			if !first {
				e.b = append(e.b, ',')
			}
			first = false
			e.b = wire.AppendJSONString(e.b, string(t.nodes[j].key))
			e.b = append(e.b, ':')
			t.write(e, j)
		}
		e.b = append(e.b, '}')
	}
}
