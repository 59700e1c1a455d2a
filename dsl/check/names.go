package check

import (
	"strings"

	"github.com/transport-io/tiogen/dsl/ast"
	"github.com/transport-io/tiogen/dsl/ir"
)

// namespace holds the names declared so far in one scope (events; types
// and enums; the fields of one type; the values of one enum), keyed by the
// name as written and by its Go and TypeScript conversions.
type namespace struct {
	exact, goName, tsName map[string]namedAt
}

type namedAt struct {
	kind, name string
	pos        ir.Pos
}

func newNamespace() *namespace {
	return &namespace{exact: map[string]namedAt{}, goName: map[string]namedAt{}, tsName: map[string]namedAt{}}
}

// unique reports name if it repeats an earlier name of the namespace, or if
// it converts to the same Go or TypeScript identifier as one. It returns
// false after a report.
func (c *checker) unique(ns *namespace, kind string, name *ast.Ident) bool {
	at := pos(name.Pos)
	goName, tsName := ir.GoName(name.Value), ir.TSName(name.Value)
	if prev, ok := ns.exact[name.Value]; ok {
		c.errorf(at, "rename or remove one of them",
			kind+" '"+name.Value+"' is already declared at "+c.where(prev.pos))
		return false
	}
	if prev, ok := ns.goName[goName]; ok {
		c.errorf(at, conversionHint, kind+" '"+name.Value+"' and "+prev.kind+" '"+prev.name+"' at "+
			c.where(prev.pos)+" both become "+goName+" in Go")
		return false
	}
	if prev, ok := ns.tsName[tsName]; ok {
		c.errorf(at, conversionHint, kind+" '"+name.Value+"' and "+prev.kind+" '"+prev.name+"' at "+
			c.where(prev.pos)+" both become "+tsName+" in TypeScript")
		return false
	}
	entry := namedAt{kind: kind, name: name.Value, pos: at}
	ns.exact[name.Value], ns.goName[goName], ns.tsName[tsName] = entry, entry, entry
	return true
}

const conversionHint = "rename one of them; generated code names user_name and userName alike " +
	"(see \"Identifier conversion\" in docs/contract-language.md)"

// validName reports a name that converts to no identifier: one that does
// not start with a letter once underscores are dropped, such as _ or _1.
func (c *checker) validName(kind string, name *ast.Ident) bool {
	words := ir.Words(name.Value)
	if len(words) > 0 && isLetter(words[0][0]) {
		return true
	}
	c.errorf(pos(name.Pos), "start the name with a letter",
		kind+" name '"+name.Value+"' does not start with a letter once its underscores are dropped, so it has no Go or TypeScript name")
	return false
}

func isLetter(b byte) bool { return ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z') }

// builtins lists the built-in types for hints.
func builtins() string {
	names := make([]string, len(ir.Primitives))
	for i, p := range ir.Primitives {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// closest is the candidate nearest to name by edit distance, if it is near
// enough to be a likely typo.
func closest(name string, candidates []string) string {
	best, bestDist := "", len(name)/3+1
	for _, cand := range candidates {
		if abs(len(cand)-len(name)) >= bestDist {
			continue // the distance is at least the difference in length
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(cand)); d < bestDist {
			best, bestDist = cand, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
