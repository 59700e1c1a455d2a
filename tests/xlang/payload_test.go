package xlang

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/transport-io/tiogen/dsl/check"
	"github.com/transport-io/tiogen/dsl/ir"
	"github.com/transport-io/tiogen/runtime/typed"
	"github.com/transport-io/tiogen/runtime/wire"
)

// The generated Go and TypeScript codecs must accept, refuse and write the
// same JSON (docs/contract-language.md, "JSON on the wire") on every
// payload, not only on the fixtures. This test builds a seeded corpus of
// payloads for every type that has fixtures (the fixtures' inputs mutated
// byte by byte and as JSON, and values built from the type with each
// rule's edges), decodes and re-encodes each with the generated Go and, in
// Node, with the generated TypeScript as a received message is read (UTF-8,
// JSON.parse, the decoder), and compares the bytes written or the
// refusal's field path and rule. TIO_PAYLOAD_SEED picks another corpus;
// the seed is printed, so a failure reproduces.

// payloadCase is one payload (hex) for one type of one golden case.
type payloadCase struct {
	Case string `json:"case"`
	Type string `json:"type"`
	Hex  string `json:"hex"`
}

// payloadVerdict is what a runtime made of a payload: "ok" with the bytes
// it wrote, "refused" with the path and rule (TypeScript) or the message
// (Go), "not UTF-8", "not JSON", or "crash" with what was thrown.
type payloadVerdict struct {
	V       string `json:"v"`
	Out     string `json:"out,omitempty"`
	Path    string `json:"path,omitempty"`
	Rule    string `json:"rule,omitempty"`
	Message string `json:"message,omitempty"`
}

func (v payloadVerdict) String() string {
	b, _ := json.Marshal(v)
	return short(string(b))
}

// Payloads per type: about 25,000 in all, a few seconds in each language.
const payloadsPerType = 1500

func TestSpec5_3_PayloadCodecsAgreeAcrossLanguages(t *testing.T) {
	r, seed := corpusRand(t, "TIO_PAYLOAD_SEED")
	var cases []payloadCase
	var payloads [][]byte
	for _, name := range slices.Sorted(maps.Keys(generated)) {
		f, c := readFixtures(t, name), readContract(t, name)
		for _, ty := range c.Types {
			g := payloadGen{r: r, c: c}
			for _, p := range g.corpus(f, ty.Name) {
				cases = append(cases, payloadCase{Case: name, Type: ty.Name, Hex: hex.EncodeToString(p)})
				payloads = append(payloads, p)
			}
		}
	}

	theirs := verdictsInNode[payloadVerdict](t, "payload-verdicts.ts", cases)
	if len(theirs) != len(cases) {
		t.Fatalf("%d TypeScript verdicts for %d cases", len(theirs), len(cases))
	}
	failures, duplicates := 0, 0
	for i, c := range cases {
		run := generated[c.Case][c.Type]
		ours := goPayloadVerdict(run, payloads[i])
		if agree(ours, theirs[i]) {
			continue
		}
		// A key given twice whose earlier value Go refuses is outside the
		// rules (JSON.parse never sees that value): the payload with only
		// the last of each key must then be read alike.
		if last, ok := lastOfEachKey(payloads[i]); ok && ours.V == "refused" && agree(goPayloadVerdict(run, last), theirs[i]) {
			duplicates++
			continue
		}
		if failures++; failures <= 20 {
			t.Errorf("%s %s %s:\n  Go:         %s\n  TypeScript: %s", c.Case, c.Type, strconv.Quote(short(string(payloads[i]))), ours, theirs[i])
		}
	}
	t.Logf("%d payloads, %d of them read alike only without the earlier values of duplicate keys", len(cases), duplicates)
	if failures > 0 {
		t.Fatalf("%d of %d payloads read differently (seed %d)", failures, len(cases), seed)
	}
}

// readContract checks a case's contract for its types and enums.
func readContract(t *testing.T, name string) *ir.Contract {
	file := "contract.tio"
	if name == "conformance" {
		file = "conformance.tio"
	}
	path := filepath.Join(dirOf(name), file)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, diags := check.Source(path, src)
	if len(diags) > 0 {
		t.Fatalf("%s: %v", path, diags)
	}
	return c
}

// goPayloadVerdict reads a payload with the generated Go and writes it back.
func goPayloadVerdict(run codec, payload []byte) payloadVerdict {
	out, err := run(payload)
	if err == nil {
		return payloadVerdict{V: "ok", Out: string(out)}
	}
	var werr *wire.Error
	if !errors.As(err, &werr) || werr.Code != wire.ValidationFailed {
		return payloadVerdict{V: "crash", Message: err.Error()}
	}
	switch {
	case strings.HasPrefix(werr.Message, "the payload is not UTF-8"):
		return payloadVerdict{V: "not UTF-8"}
	case strings.Contains(werr.Message, " is not valid JSON: "):
		return payloadVerdict{V: "not JSON", Message: werr.Message}
	}
	return payloadVerdict{V: "refused", Message: werr.Message}
}

// agree compares Go's verdict with TypeScript's. A refusal agrees when Go's
// message is TypeScript's path and rule, as the fixtures are checked
// (checkInvalid); the value shown after ", not" is each language's own. A
// payload that is not JSON is refused by both, but Go, which checks the
// syntax as it decodes, may first refuse a field before the bad byte.
func agree(ours, theirs payloadVerdict) bool {
	switch theirs.V {
	case "ok":
		return ours.V == "ok" && ours.Out == theirs.Out
	case "refused":
		return ours.V == "refused" && checkInvalid(func([]byte) ([]byte, error) {
			return nil, wire.Errorf(wire.ValidationFailed, "%s", ours.Message)
		}, "", theirs.Path, theirs.Rule) == nil
	case "not JSON":
		return ours.V == "not JSON" || ours.V == "refused"
	case "not UTF-8":
		return ours.V == "not UTF-8"
	}
	return false
}

// payloadGen builds the payloads of one type of a contract.
type payloadGen struct {
	r *rand.Rand
	c *ir.Contract
}

// corpus is payloadsPerType payloads for type name: half of them the
// fixtures' inputs and canonical forms, half values built from the type;
// each changed as JSON up to three times, spaced or not, and a third of
// them changed byte by byte.
func (g payloadGen) corpus(f fixtures, name string) [][]byte {
	var seeds []*jnode
	e := f.Types[name]
	for _, v := range e.Valid {
		seeds = appendParsed(seeds, v.Input, v.Canonical)
	}
	for _, v := range e.Invalid {
		seeds = appendParsed(seeds, v.Input)
	}
	ref := ir.TypeRef{Kind: ir.RefNamed, Name: name, Decl: ir.NamedType}
	out := make([][]byte, 0, payloadsPerType)
	for i := range payloadsPerType {
		var n *jnode
		if i%2 == 0 && len(seeds) > 0 {
			n = pick(g.r, seeds).clone()
		} else {
			n = jsonNode(g.value(ref, 0))
		}
		for range g.r.IntN(4) {
			g.mutate(n)
		}
		out = append(out, maybeMutate(g.r, []byte(spaced(g.r, n.String()))))
	}
	return out
}

func appendParsed(to []*jnode, inputs ...string) []*jnode {
	for _, in := range inputs {
		if n := parseJSON(in); n != nil {
			to = append(to, n)
		}
	}
	return to
}

// Numbers at the edges of each rule: 2^31, 2^32, 2^53 and 2^63 and their
// neighbours, integers written with a fraction or an exponent, -0, the
// float64 extremes and the shortest forms ECMAScript switches notation at.
var payloadNumbers = []string{
	"0", "-0", "0.0", "-0.0", "0e0", "-0e-0", "1", "-1", "1.0", "1.5", "1e0", "1E2", "1e+2", "10e-1", "0.5", "2e-1",
	"2147483647", "2147483648", "-2147483648", "-2147483649", "2147483647.0", "2.147483647e9", "4294967295", "4294967296", "4.294967295e9",
	"9007199254740991", "9007199254740992", "9007199254740993", "-9007199254740991", "-9007199254740992", "-9007199254740993",
	"9.007199254740991e15", "9007199254740991.0", "9007199254740992.5", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
	"18446744073709551615", "18446744073709551616", "9.2233720368547758e18", "1e19", "1e20", "-1e19",
	"1e21", "1e+21", "999999999999999999999", "100000000000000000000", "1e-7", "1e-6", "0.000001", "0.0000001", "1.0000000000000002",
	"0.1", "0.30000000000000004", "123456789012345678901234567890", "5e-324", "2.5e-324", "1e-400", "-1e-400",
	"1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308", "1e308", "1e309", "1e400", "-1e400",
	"123e-2", "1E-2", "-5e-1", "0.9999999999999999", "4.35", "1e16", "12345678901234567", "1e15",
	"01", "1.", ".5", "+1", "-", "1e", "0x10", "NaN", "Infinity", "-Infinity",
}

// Decimal strings for int64 and uint64 at their edges and in forms the
// grammar refuses (a sign, a leading zero, space, an escape, an exponent).
var payloadDecimals = []string{
	`"0"`, `"-0"`, `"1"`, `"-1"`, `"9007199254740993"`, `"9223372036854775807"`, `"9223372036854775808"`, `"-9223372036854775808"`,
	`"-9223372036854775809"`, `"18446744073709551615"`, `"18446744073709551616"`, `"-18446744073709551615"`, `"00"`, `"01"`, `"-00"`,
	`"+1"`, `" 1"`, `"1 "`, `"1.0"`, `"1e3"`, `""`, `"-"`, `"\u0031"`, `"\u002d1"`, `"1\u0000"`, `"٣"`, `"0x1"`, `"99999999999999999999999"`,
}

// Base64 strings: valid ones, and the neighbours the strict reading refuses.
var payloadBase64 = []string{
	`""`, `"AA=="`, `"AB=="`, `"AAA="`, `"AAB="`, `"AAAA"`, `"AA"`, `"AAA"`, `"A"`, `"===="`, `"AA=A"`, `"AA==AA=="`, `"_-8="`, `"+/8="`,
	`"AA\u003d\u003d"`, `"\/\/8="`, `"AA==\n"`, `"AA\nAA=="`, `"AA AA=="`, `" AAAA"`, `"AAAA\r\n"`, `"Zm9v"`, `"Zm9vYg=="`, `"Zm9vYmE="`, `"Zm9vYmE"`, `"Zm9vYmE=="`,
}

// Strings: escapes of every kind, surrogate pairs written raw, escaped
// in either case or cut, characters ECMAScript and Go order differently,
// and bytes that are not UTF-8.
var payloadPieces = []string{
	"", "a", "é", "😀", "\U0010ffff", "\uffff", "\ue000", "\u2028\u2029", "\u007f", "<>&", `\"`, `\\`, `\/`, `\b\f\n\r\t`, `\u0000`, `\u001f`,
	`\u00e9`, `\ud83d\ude00`, `\uD83D\uDE00`, `\ud800`, `\udfff`, `\udc00\ud800`, `\ud800\u0041`, `\ud800\\`, `\uDBFF\uDFFF`, `\u2028`, `\ufeff`,
	"\xff", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80", "\x01", "\t", `\x`, `\u12`, `\U0041`, strings.Repeat("x", 50),
}

func (g payloadGen) str() string {
	var b strings.Builder
	b.WriteByte('"')
	for range 1 + g.r.IntN(3) {
		b.WriteString(pick(g.r, payloadPieces))
	}
	b.WriteByte('"')
	return b.String()
}

// value is JSON for ref, mostly of the right shape with values near each
// rule's edge, now and then of another shape.
func (g payloadGen) value(ref ir.TypeRef, depth int) string {
	if g.r.IntN(24) == 0 {
		return pick(g.r, []string{"null", "true", "0", `"x"`, "[]", "{}"})
	}
	switch ref.Kind {
	case ir.RefList:
		var items []string
		for range g.r.IntN(4) {
			if depth > 6 {
				break
			}
			items = append(items, g.value(*ref.Elem, depth+1))
		}
		return "[" + strings.Join(items, ",") + "]"
	case ir.RefMap:
		keys := []string{`"a"`, `"b"`, `"__proto__"`, `"constructor"`, `"toString"`, `""`, `"10"`, `"9"`, `"😀"`, `"\ue000"`, `"é"`, `"e\u0301"`, `"\u0061"`}
		var members []string
		for range g.r.IntN(4) {
			if depth > 6 {
				break
			}
			k := pick(g.r, keys)
			if g.r.IntN(8) == 0 {
				k = g.str()
			}
			members = append(members, k+":"+g.value(*ref.Elem, depth+1))
		}
		return "{" + strings.Join(members, ",") + "}"
	case ir.RefNamed:
		if ref.Decl == ir.NamedEnum {
			return g.enum(ref.Name)
		}
		return g.record(ref.Name, depth)
	}
	switch ref.Primitive {
	case ir.Bool:
		return pick(g.r, []string{"true", "false", "True", `"true"`, "1"})
	case ir.String:
		return g.str()
	case ir.Int32, ir.Uint32, ir.Float64:
		if ref.Primitive == ir.Float64 && g.r.IntN(3) == 0 {
			return randomFloat(g.r)
		}
		return pick(g.r, payloadNumbers)
	case ir.Int64, ir.Uint64:
		if g.r.IntN(2) == 0 {
			return pick(g.r, payloadNumbers)
		}
		return pick(g.r, payloadDecimals)
	case ir.Bytes:
		if g.r.IntN(2) == 0 {
			b := make([]byte, g.r.IntN(7))
			for i := range b {
				b[i] = byte(g.r.IntN(256))
			}
			enc := pick(g.r, []*base64.Encoding{base64.StdEncoding, base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding})
			return `"` + enc.EncodeToString(b) + `"`
		}
		return pick(g.r, payloadBase64)
	case ir.JSON:
		return g.anyJSON(depth)
	}
	panic("no JSON for " + string(ref.Kind) + " " + string(ref.Primitive))
}

func (g payloadGen) anyJSON(depth int) string {
	switch n := g.r.IntN(8); {
	case n < 2:
		return pick(g.r, payloadNumbers)
	case n < 4:
		return g.str()
	case n < 5 || depth > 6:
		return pick(g.r, []string{"true", "false", "null"})
	case n < 6:
		var items []string
		for range g.r.IntN(3) {
			items = append(items, g.anyJSON(depth+1))
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	var members []string
	for range g.r.IntN(4) {
		k := pick(g.r, []string{`"a"`, `"b"`, `"__proto__"`, `"10"`, `"9"`, `"😀"`, `"\ue000"`})
		if g.r.IntN(4) == 0 {
			k = g.str()
		}
		members = append(members, k+":"+g.anyJSON(depth+1))
	}
	return "{" + strings.Join(members, ",") + "}"
}

// randomFloat is a float64 drawn over its whole range, written as Go's
// shortest form in one of its notations.
func randomFloat(r *rand.Rand) string {
	f := math.Float64frombits(r.Uint64())
	if math.IsNaN(f) || math.IsInf(f, 0) {
		f = r.NormFloat64() * math.Pow(10, float64(r.IntN(44)-22))
	}
	return strconv.FormatFloat(f, pick(r, []byte{'g', 'e', 'E', 'f'}), -1, 64)
}

func (g payloadGen) enum(name string) string {
	for _, e := range g.c.Enums {
		if e.Name != name {
			continue
		}
		v := pick(g.r, e.Values).Name
		switch g.r.IntN(8) {
		case 0:
			return `"` + strings.ToUpper(v) + `"`
		case 1:
			return `"` + strings.ToUpper(v[:1]) + v[1:] + `"`
		case 2:
			return `"\u` + strconv.FormatInt(int64(v[0])+0x10000, 16)[1:] + v[1:] + `"` // an escape, the same value
		case 3:
			return pick(g.r, []string{`""`, `" ` + v + `"`, `"` + v + `\u0000"`, `0`, `"__proto__"`, `"toString"`})
		}
		return `"` + v + `"`
	}
	panic("no enum " + name)
}

func (g payloadGen) record(name string, depth int) string {
	for _, ty := range g.c.Types {
		if ty.Name != name {
			continue
		}
		var members []string
		for _, f := range ty.Fields {
			switch {
			case f.Optional && (depth > 4 || g.r.IntN(3) == 0):
				if g.r.IntN(4) == 0 {
					members = append(members, strconv.Quote(f.Name)+":null")
				}
				continue
			case g.r.IntN(40) == 0:
				continue // a required field missing
			}
			members = append(members, strconv.Quote(f.Name)+":"+g.value(f.Type, depth+1))
		}
		if g.r.IntN(6) == 0 {
			members = append(members, pick(g.r, []string{`"zz"`, `"__proto__"`, `"constructor"`, g.str()})+":"+g.anyJSON(depth+1))
		}
		if g.r.IntN(3) == 0 {
			g.r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		}
		return "{" + strings.Join(members, ",") + "}"
	}
	panic("no type " + name)
}

// mutate changes one node of the tree n, JSON-structurally: a value
// replaced by one at a rule's edge or by nesting at the depth limit, a
// member repeated, added, dropped or moved, a string re-escaped or changed.
func (g payloadGen) mutate(n *jnode) {
	var nodes []*jnode
	var depths []int
	n.walk(0, func(x *jnode, d int) { nodes, depths = append(nodes, x), append(depths, d) })
	i := g.r.IntN(len(nodes))
	x, d := nodes[i], depths[i]
	switch g.r.IntN(10) {
	case 0:
		*x = *jsonNode(pick(g.r, payloadNumbers))
	case 1:
		*x = *jsonNode(pick(g.r, []string{"null", "true", "[]", "{}", `""`, pick(g.r, payloadDecimals), pick(g.r, payloadBase64), g.str()}))
	case 2: // nesting around the limit: the node is at level d+1 if a container
		levels := typed.MaxDepth - d + g.r.IntN(3) - 1
		inner := pick(g.r, []string{"[", `{"a":`})
		closing := map[string]string{"[": "]", `{"a":`: "}"}[inner]
		if levels < 1 {
			levels = 1
		}
		*x = *jsonNode(strings.Repeat(inner, levels) + "0" + strings.Repeat(closing, levels))
	case 3, 4:
		if x.kind == '{' && len(x.keys) > 0 {
			j := g.r.IntN(len(x.keys))
			v := x.vals[j].clone()
			if g.r.IntN(2) == 0 {
				v = jsonNode(g.anyJSON(2))
			}
			at := g.r.IntN(len(x.keys) + 1)
			x.keys = slices.Insert(x.keys, at, x.keys[j])
			x.vals = slices.Insert(x.vals, at, v)
		} else if x.kind == '[' && len(x.vals) > 0 {
			at := g.r.IntN(len(x.vals) + 1)
			x.vals = slices.Insert(x.vals, at, jsonNode(pick(g.r, []string{"null", "0", `"x"`, "{}", "[]", g.anyJSON(1)})))
		}
	case 5:
		if x.kind == '{' {
			k := pick(g.r, []string{`"__proto__"`, `"zz"`, `"constructor"`, `"hasOwnProperty"`, g.str()})
			x.keys = append(x.keys, k)
			x.vals = append(x.vals, jsonNode(g.anyJSON(1)))
		}
	case 6:
		if (x.kind == '{' || x.kind == '[') && len(x.vals) > 0 {
			j := g.r.IntN(len(x.vals))
			if x.kind == '{' {
				x.keys = slices.Delete(x.keys, j, j+1)
			}
			x.vals = slices.Delete(x.vals, j, j+1)
		}
	case 7:
		if x.kind == '{' {
			g.r.Shuffle(len(x.keys), func(i, j int) {
				x.keys[i], x.keys[j] = x.keys[j], x.keys[i]
				x.vals[i], x.vals[j] = x.vals[j], x.vals[i]
			})
		}
	case 8, 9:
		if x.kind == '"' {
			x.raw = g.restring(x.raw)
		} else if x.kind == '{' && len(x.keys) > 0 {
			j := g.r.IntN(len(x.keys))
			x.keys[j] = g.restring(x.keys[j])
		}
	}
}

// restring changes a JSON string token: a character escaped (the same
// value), its case toggled, a piece added.
func (g payloadGen) restring(raw string) string {
	inner := raw[1 : len(raw)-1]
	switch g.r.IntN(4) {
	case 0:
		if i := strings.IndexFunc(inner, func(c rune) bool { return c != '\\' && c < 0x80 }); i >= 0 && (i == 0 || inner[i-1] != '\\') {
			inner = inner[:i] + `\u` + strconv.FormatInt(int64(inner[i])+0x10000, 16)[1:] + inner[i+1:]
		}
	case 1:
		if len(inner) > 0 && !strings.Contains(inner, `\`) {
			i := g.r.IntN(len(inner))
			c := inner[i]
			switch {
			case 'a' <= c && c <= 'z':
				c -= 32
			case 'A' <= c && c <= 'Z':
				c += 32
			}
			inner = inner[:i] + string(c) + inner[i+1:]
		}
	case 2:
		inner += pick(g.r, payloadPieces)
	case 3:
		inner = pick(g.r, payloadPieces) + inner
	}
	return `"` + inner + `"`
}

// jnode is a JSON value with its scalars and keys as they were written
// (escapes in place), members in order, duplicates kept.
type jnode struct {
	kind byte     // '{', '[', '"', or 0 for a number or literal
	raw  string   // a scalar's text
	keys []string // an object's keys, quoted
	vals []*jnode // an object's values or an array's elements
}

func (n *jnode) clone() *jnode {
	c := &jnode{kind: n.kind, raw: n.raw, keys: slices.Clone(n.keys)}
	for _, v := range n.vals {
		c.vals = append(c.vals, v.clone())
	}
	return c
}

func (n *jnode) walk(depth int, f func(*jnode, int)) {
	f(n, depth)
	for _, v := range n.vals {
		v.walk(depth+1, f)
	}
}

func (n *jnode) String() string {
	var b strings.Builder
	n.write(&b)
	return b.String()
}

func (n *jnode) write(b *strings.Builder) {
	if n.kind != '{' && n.kind != '[' {
		b.WriteString(n.raw)
		return
	}
	b.WriteByte(n.kind)
	for i, v := range n.vals {
		if i > 0 {
			b.WriteByte(',')
		}
		// An object's members each have their key (quoted JSON) first.
		if n.kind == '{' {
			b.WriteString(n.keys[i])
			b.WriteByte(':')
		}
		v.write(b)
	}
	if n.kind == '{' {
		b.WriteByte('}')
	} else {
		b.WriteByte(']')
	}
}

// jsonNode is s as a tree, or as one opaque token when it is not JSON.
func jsonNode(s string) *jnode {
	if n := parseJSON(s); n != nil {
		return n
	}
	return &jnode{raw: s}
}

// parseJSON reads s as JSON into a tree, or returns nil when it is not
// JSON (invalid UTF-8 and lone surrogates are kept: they are the point).
func parseJSON(s string) *jnode {
	p := jparser{s: s}
	n := p.value()
	if n == nil || p.ws() < len(p.s) {
		return nil
	}
	return n
}

type jparser struct {
	s     string
	i     int
	depth int
}

func (p *jparser) ws() int {
	for p.i < len(p.s) && strings.IndexByte(" \t\n\r", p.s[p.i]) >= 0 {
		p.i++
	}
	return p.i
}

func (p *jparser) value() *jnode {
	if p.ws() >= len(p.s) || p.depth > 2000 {
		return nil
	}
	switch c := p.s[p.i]; c {
	case '{', '[':
		p.depth++
		defer func() { p.depth-- }()
		n := &jnode{kind: c}
		p.i++
		closing := byte(']')
		if c == '{' {
			closing = '}'
		}
		for first := true; ; first = false {
			if p.ws() < len(p.s) && p.s[p.i] == closing {
				p.i++
				return n
			}
			if !first {
				if p.i >= len(p.s) || p.s[p.i] != ',' {
					return nil
				}
				p.i++
			}
			if c == '{' {
				if p.ws() >= len(p.s) || p.s[p.i] != '"' {
					return nil
				}
				k := p.str()
				if k == "" || p.ws() >= len(p.s) || p.s[p.i] != ':' {
					return nil
				}
				p.i++
				n.keys = append(n.keys, k)
			}
			v := p.value()
			if v == nil {
				return nil
			}
			n.vals = append(n.vals, v)
		}
	case '"':
		if s := p.str(); s != "" {
			return &jnode{kind: '"', raw: s}
		}
		return nil
	}
	start := p.i
	for p.i < len(p.s) && strings.IndexByte("{}[],: \t\n\r\"", p.s[p.i]) < 0 {
		p.i++
	}
	tok := p.s[start:p.i]
	if tok == "true" || tok == "false" || tok == "null" || jsonNumber.MatchString(tok) {
		return &jnode{raw: tok}
	}
	return nil
}

// str reads a quoted string token, escapes unchecked but for their
// length, or returns "" when there is none.
func (p *jparser) str() string {
	start := p.i
	p.i++
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == '"':
			p.i++
			return p.s[start:p.i]
		case c == '\\':
			p.i += 2
		case c < 0x20:
			return ""
		default:
			p.i++
		}
	}
	return ""
}

// jsonNumber is the number grammar of RFC 8259 §6.
var jsonNumber = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$`)

// lastOfEachKey is the payload with every key given twice in an object
// kept only at its last place, as JSON.parse reads it; ok is false when
// no key is given twice.
func lastOfEachKey(payload []byte) ([]byte, bool) {
	n := parseJSON(string(payload))
	if n == nil {
		return nil, false
	}
	dup := false
	n.walk(0, func(x *jnode, _ int) {
		if x.kind != '{' {
			return
		}
		seen := map[string]bool{}
		var keys []string
		var vals []*jnode
		for i := len(x.keys) - 1; i >= 0; i-- {
			k := utf16Key(x.keys[i])
			if seen[k] {
				dup = true
				continue
			}
			seen[k] = true
			keys, vals = append(keys, x.keys[i]), append(vals, x.vals[i])
		}
		slices.Reverse(keys)
		slices.Reverse(vals)
		x.keys, x.vals = keys, vals
	})
	return []byte(n.String()), dup
}

// utf16Key is a quoted key's value as the UTF-16 code units JavaScript
// compares, so "\ud800" and "\udc00" stay two keys.
func utf16Key(quoted string) string {
	s := quoted[1 : len(quoted)-1]
	var units []uint16
	for i := 0; i < len(s); {
		if s[i] != '\\' || i+1 == len(s) {
			r, size := utf8.DecodeRuneInString(s[i:])
			units = utf16.AppendRune(units, r)
			i += size
			continue
		}
		c := s[i+1]
		i += 2
		if c == 'u' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i:i+4], 16, 16); err == nil {
				units = append(units, uint16(v))
				i += 4
				continue
			}
		}
		if j := strings.IndexByte("bfnrt", c); j >= 0 {
			c = "\b\f\n\r\t"[j]
		}
		units = append(units, uint16(c))
	}
	return fmt.Sprint(units)
}
