package xlang

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/transport-io/tiogen/runtime/wire"
)

// The Go and TypeScript wire readers must agree on every input, not only on
// the golden vectors: a frame stream, a datagram, a handshake or a control
// payload that one runtime accepts and the other refuses would end a
// session in one language and not the other. This test writes a seeded
// corpus of hostile inputs (the vectors mutated, and JSON built to probe
// the strict readers' edges), asks each runtime for its verdict on every
// input, and compares them. TIO_WIRE_SEED picks another corpus; the seed
// is printed, so a failure reproduces.

// wireCase is one input: its kind names the reader, and the bytes are hex.
// Table and features cases hold two inputs, the local side then the peer's.
type wireCase struct {
	Kind string   `json:"kind"`
	Hex  []string `json:"hex"`
}

// Cases per kind: enough to reach every branch of the readers many times
// over (the whole corpus takes about a second in each language).
const casesPerKind = 3000

func TestWireReadersAgreeAcrossLanguages(t *testing.T) {
	r, seed := corpusRand(t, "TIO_WIRE_SEED")
	cases := wireCorpus(t, r)

	theirs := verdictsInNode[string](t, "wire-verdicts.ts", cases)
	if len(theirs) != len(cases) {
		t.Fatalf("%d TypeScript verdicts for %d cases", len(theirs), len(cases))
	}
	failures := 0
	for i, c := range cases {
		ours := goVerdict(t, c)
		if ours == theirs[i] {
			continue
		}
		if failures++; failures <= 20 {
			t.Errorf("%s %s:\n  Go:         %s\n  TypeScript: %s", c.Kind, strings.Join(c.Hex, " "), ours, theirs[i])
		}
	}
	if failures > 0 {
		t.Fatalf("%d of %d inputs read differently (seed %d)", failures, len(cases), seed)
	}
}

// goVerdict is what the Go runtime makes of c, in the form the TypeScript
// side writes (runtime/ts/test/xlang/wire-verdicts.ts): what was read, in
// its canonical encoding, or the WT_* code of the refusal. Messages are not
// compared, except a table conflict's, which travels as a close reason.
func goVerdict(t *testing.T, c wireCase) string {
	in := make([][]byte, len(c.Hex))
	for i, h := range c.Hex {
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		in[i] = b
	}
	switch c.Kind {
	case "frames":
		var out []string
		r := wire.NewReader(bytes.NewReader(in[0]))
		for {
			f, err := r.Next()
			switch {
			case err == io.EOF:
				return strings.Join(append(out, "EOF"), " ")
			case err == io.ErrUnexpectedEOF:
				return strings.Join(append(out, "UnexpectedEOF"), " ")
			case err != nil:
				return strings.Join(append(out, codeOf(t, err)), " ")
			}
			again, err := wire.AppendFrame(nil, f.Type, f.Codec, f.EventID, f.Payload)
			if err != nil {
				t.Fatalf("frame read from %x does not encode: %v", in[0], err)
			}
			out = append(out, hex.EncodeToString(again))
		}
	case "datagram":
		d, ok, err := wire.ParseDatagram(in[0])
		switch {
		case err != nil:
			return codeOf(t, err)
		case !ok:
			return "discard"
		}
		return hex.EncodeToString(wire.AppendDatagram(nil, d))
	case "handshake":
		h, err := wire.DecodeHandshake(in[0])
		if err != nil {
			return codeOf(t, err)
		}
		return string(wire.AppendHandshake(nil, h))
	case "credit":
		n, ok := wire.ParseCredit(in[0])
		if !ok {
			return "ignored"
		}
		return strconv.Itoa(n)
	case "room":
		room, err := wire.ParseRoom(in[0])
		if err != nil {
			return codeOf(t, err)
		}
		return string(wire.AppendRoom(nil, room))
	case "callError":
		e, err := wire.ParseCallError(in[0])
		if err != nil {
			return codeOf(t, err)
		}
		return string(wire.AppendCallError(nil, e))
	case "tables":
		local, err1 := wire.DecodeHandshake(in[0])
		peer, err2 := wire.DecodeHandshake(in[1])
		if err1 != nil || err2 != nil {
			t.Fatalf("tables case of a handshake Go refuses: %v, %v", err1, err2)
		}
		if err := wire.CompareTables(local.Events, peer.Events); err != nil {
			var e *wire.Error
			if !errors.As(err, &e) {
				t.Fatalf("CompareTables: %T %v", err, err)
			}
			return string(e.Code) + " " + e.Message
		}
		return "ok"
	case "features":
		local, err1 := wire.DecodeHandshake(in[0])
		peer, err2 := wire.DecodeHandshake(in[1])
		if err1 != nil || err2 != nil {
			t.Fatalf("features case of a handshake Go refuses: %v, %v", err1, err2)
		}
		b := []byte{'['}
		for i, f := range wire.NegotiateFeatures(local.Feat, peer.Feat) {
			if i > 0 {
				b = append(b, ',')
			}
			b = wire.AppendJSONString(b, f)
		}
		return string(append(b, ']'))
	}
	t.Fatalf("unknown kind %q", c.Kind)
	return ""
}

func codeOf(t *testing.T, err error) string {
	code := wire.CodeOf(err)
	if code == "" {
		t.Fatalf("an error without a WT_* code: %v", err)
	}
	return string(code)
}

// wireCorpus builds casesPerKind inputs of each kind from the golden
// vectors and from generated JSON, each mutated or not.
func wireCorpus(t *testing.T, r *rand.Rand) []wireCase {
	v := readVectors(t)
	var frames, datagrams [][]byte
	for _, x := range v.Frames {
		frames = append(frames, unhexT(t, x.Hex))
	}
	for _, x := range v.InvalidFrames {
		frames = append(frames, unhexT(t, x.Hex))
	}
	for _, x := range v.TruncatedFrames {
		frames = append(frames, unhexT(t, x.Hex))
	}
	for _, x := range v.Datagrams {
		datagrams = append(datagrams, unhexT(t, x.Hex))
	}
	for _, x := range v.InvalidDatagrams {
		datagrams = append(datagrams, unhexT(t, x.Hex))
	}
	var handshakes [][]byte
	for _, x := range v.Handshakes {
		handshakes = append(handshakes, []byte(x.JSON))
	}
	for _, x := range v.InvalidHandshakes {
		handshakes = append(handshakes, []byte(x.JSON))
	}

	var cases []wireCase
	add := func(kind string, in ...[]byte) {
		c := wireCase{Kind: kind}
		for _, b := range in {
			c.Hex = append(c.Hex, hex.EncodeToString(b))
		}
		cases = append(cases, c)
	}
	for range casesPerKind {
		// A stream of one to four frames, golden or built, then mutated.
		var stream []byte
		for range 1 + r.IntN(4) {
			if r.IntN(2) == 0 {
				stream = append(stream, pick(r, frames)...)
			} else {
				stream = append(stream, builtFrame(r)...)
			}
		}
		add("frames", maybeMutate(r, stream))

		d := pick(r, datagrams)
		if r.IntN(2) == 0 {
			d = builtDatagram(r)
		}
		add("datagram", maybeMutate(r, d))

		h := pick(r, handshakes)
		if r.IntN(4) != 0 {
			h = []byte(genHandshake(r))
		}
		add("handshake", maybeMutate(r, h))

		add("credit", maybeMutate(r, []byte(genControl(r, "credit"))))
		add("room", maybeMutate(r, []byte(genControl(r, "room"))))
		add("callError", maybeMutate(r, []byte(genControl(r, "code", "message"))))
	}
	// Pairs of tables both runtimes accept (Go's side is checked in
	// goVerdict; a TypeScript refusal shows as a verdict that differs).
	for range casesPerKind {
		local, peer := []byte(wellFormedHandshake(r)), []byte(wellFormedHandshake(r))
		add("tables", local, peer)
		add("features", local, peer)
	}
	return cases
}

type goldenVectors struct {
	Frames, InvalidFrames, TruncatedFrames, Datagrams, InvalidDatagrams []struct {
		Hex string `json:"hex"`
	}
	Handshakes, InvalidHandshakes []struct {
		JSON string `json:"json"`
	}
}

func readVectors(t *testing.T) goldenVectors {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "wire", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v goldenVectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func unhexT(t *testing.T, s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pick[T any](r *rand.Rand, from []T) T { return from[r.IntN(len(from))] }

// Bytes a reader's edges turn on: JSON's structure and escapes, UTF-8 lead
// and continuation bytes, surrogates' lead byte, and the extremes.
var edgeBytes = []byte(`{}[]":,\ 0123456789-+.eEtfnu` + "\x00\x01\x1f\x7f\x80\xbf\xc0\xc2\xed\xef\xf0\xf4\xf5\xff\t\n\r\x0c")

// maybeMutate returns b unchanged two times in three, else with one to
// four byte-level changes.
func maybeMutate(r *rand.Rand, b []byte) []byte {
	out := bytes.Clone(b)
	if r.IntN(3) != 0 {
		return out
	}
	for range 1 + r.IntN(4) {
		i := 0
		if len(out) > 0 {
			i = r.IntN(len(out))
		}
		switch r.IntN(6) {
		case 0: // replace a byte
			if len(out) > 0 {
				out[i] = pick(r, edgeBytes)
			}
		case 1: // insert a byte
			out = append(out[:i], append([]byte{pick(r, edgeBytes)}, out[i:]...)...)
		case 2: // delete a byte
			if len(out) > 0 {
				out = append(out[:i], out[i+1:]...)
			}
		case 3: // cut the end off
			out = out[:i]
		case 4: // flip a bit
			if len(out) > 0 {
				out[i] ^= 1 << r.IntN(8)
			}
		case 5: // repeat a slice
			if len(out) > 0 {
				j := i + r.IntN(len(out)-i)
				out = append(out[:j], append(bytes.Clone(out[i:j+1]), out[j:]...)...)
			}
		}
	}
	return out
}

// builtFrame is a frame header with values near each §5 rule's edge,
// and a payload of the length it declares or about it.
func builtFrame(r *rand.Rand) []byte {
	payload := []byte(pick(r, []string{`{"credit":16}`, `{"room":"lobby"}`, `{"code":"WT_X","message":"m"}`, "\x01\x02", "", `"x"`, genJSON(r, 2)}))
	length := uint32(8 + len(payload))
	switch r.IntN(8) {
	case 0:
		length = pick(r, []uint32{0, 1, 8, 9, 1<<20 + 8, 1<<20 + 9, 16<<20 + 8, 16<<20 + 9, 0xffffffff})
	case 1:
		length += uint32(r.IntN(3)) - 1
	}
	h := make([]byte, 12)
	h[0], h[1], h[2], h[3] = byte(length>>24), byte(length>>16), byte(length>>8), byte(length)
	h[4] = byte(1 + r.IntN(9))
	if r.IntN(8) == 0 {
		h[4] = pick(r, []byte{0, 10, 0x80, 0xff})
	}
	h[5] = byte(1 + r.IntN(2))
	if r.IntN(8) == 0 {
		h[5] = pick(r, []byte{0, 3, 0xff})
	}
	if r.IntN(8) == 0 {
		h[6+r.IntN(2)] = byte(1 << r.IntN(8)) // reserved bits
	}
	id := pick(r, []uint32{0, 1, 836792189, 0xffffffff, r.Uint32()})
	h[8], h[9], h[10], h[11] = byte(id>>24), byte(id>>16), byte(id>>8), byte(id)
	return append(h, payload...)
}

// builtDatagram is a §7.1 datagram with its fields near their edges.
func builtDatagram(r *rand.Rand) []byte {
	b := []byte{pick(r, []byte{0, 1, 2, 3, 0xff})}
	for range 3 { // event id, origin, sequence
		v := pick(r, []uint32{0, 1, 0x400001, 0xffffffff, r.Uint32()})
		b = append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return append(b, pick(r, []string{"", "{}", `{"x":1}`, "\xff"})...)
}

// genHandshake is a §4.1 handshake, mostly well-formed, with names,
// ids, lanes and numbers drawn from the edges the readers must agree on.
func genHandshake(r *rand.Rand) string {
	var members []string
	if r.IntN(10) != 0 {
		v := "0"
		if r.IntN(4) == 0 {
			v = pick(r, []string{"1", "-0", "0.0", "0e0", "-1", "9007199254740991", "-9007199254740991", "9007199254740992", "9007199254740993", "9223372036854775807", "9223372036854775808", `"0"`, "null"})
		}
		members = append(members, `"v":`+v)
	}
	if r.IntN(10) != 0 {
		var feats []string
		for range r.IntN(4) {
			feats = append(feats, genString(r))
		}
		members = append(members, `"feat":[`+strings.Join(feats, ",")+`]`)
	}
	if r.IntN(10) != 0 {
		var rows []string
		for i := range r.IntN(6) {
			// Names and ids distinct but now and then.
			name := genString(r)
			if r.IntN(8) != 0 {
				name = name[:len(name)-1] + strconv.Itoa(i) + `"`
			}
			id := strconv.Itoa(1 + i + r.IntN(2)*r.IntN(3))
			if r.IntN(8) == 0 {
				id = pick(r, []string{"836792189", "4294967295", "4294967296", "0", "-0", "1.0", "1e0", "-1", `"1"`, "01"})
			}
			lane := pick(r, []string{`"reliable"`, `"unreliable"`})
			if r.IntN(16) == 0 {
				lane = pick(r, []string{`"Reliable"`, `""`, "1", "null"})
			}
			row := []string{name, id, lane}
			switch r.IntN(12) {
			case 0:
				row = row[:2]
			case 1:
				row = append(row, "0")
			}
			rows = append(rows, "["+strings.Join(row, ",")+"]")
		}
		members = append(members, `"events":[`+strings.Join(rows, ",")+`]`)
	}
	if r.IntN(10) == 0 {
		members = append(members, `"x":`+genJSON(r, 1))
	}
	if r.IntN(12) == 0 && len(members) > 0 {
		members = append(members, pick(r, members)) // a field twice
	}
	r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	return spaced(r, "{"+strings.Join(members, ",")+"}")
}

// wellFormedHandshake is a handshake both runtimes accept, its names and
// ids drawn from small sets so two tables often conflict: names that sort
// differently in UTF-16 and by code point, and one long enough that the
// close reason naming it is cut (§4).
func wellFormedHandshake(r *rand.Rand) string {
	names := []string{"a", "b", "chat", "é", "😀", "\uffff", "\ue000", "\u2028", `\"q`, strings.Repeat("n", 60), strings.Repeat("é", 60)}
	seenName, seenID := map[string]bool{}, map[int]bool{}
	var rows []string
	for range r.IntN(6) {
		name, id := pick(r, names), 1+r.IntN(6)
		if seenName[name] || seenID[id] {
			continue
		}
		seenName[name], seenID[id] = true, true
		rows = append(rows, fmt.Sprintf(`["%s",%d,"%s"]`, name, id, pick(r, []string{"reliable", "unreliable"})))
	}
	var feats []string
	for range r.IntN(4) {
		feats = append(feats, `"`+pick(r, names)+`"`)
	}
	return `{"v":0,"feat":[` + strings.Join(feats, ",") + `],"events":[` + strings.Join(rows, ",") + `]}`
}

// genControl is a control payload: an object whose members are keys (some
// missing, some twice) with values of any type, plus strangers.
func genControl(r *rand.Rand, keys ...string) string {
	var members []string
	for _, k := range keys {
		if r.IntN(8) == 0 {
			continue
		}
		members = append(members, strconv.Quote(k)+":"+genValueFor(r, k))
	}
	for range r.IntN(2) {
		members = append(members, genString(r)+":"+genJSON(r, 1))
	}
	if r.IntN(12) == 0 && len(members) > 0 {
		members = append(members, pick(r, members))
	}
	r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	return spaced(r, "{"+strings.Join(members, ",")+"}")
}

func genValueFor(r *rand.Rand, key string) string {
	if r.IntN(6) == 0 {
		return genJSON(r, 1)
	}
	switch key {
	case "credit":
		return pick(r, numbers)
	case "code":
		return pick(r, []string{`"WT_X"`, `"WT_"`, `"WT_ABORTED"`, `"wt_x"`, `"WT_\u00e9"`, `"\u0057T_X"`, `"WT_\ud800"`, genString(r)})
	}
	return genString(r)
}

var numbers = []string{"0", "-0", "1", "16", "1.0", "1.5", "1e0", "1E2", "1e-2", "0.5", "-1", "2147483646", "2147483647", "2147483648", "4294967296", "9007199254740993", "1e308", "1e400", "-1e400", "123456789012345678901234567890", "0.0000001", "1e+1", "5e-324", "01", "1.", "-", "+1", ".5", "NaN", "Infinity"}

// Pieces of JSON strings: escapes and raw UTF-8 both readers must accept
// alike, and now and then (badPieces) a mistake they must refuse alike.
var (
	goodPieces = []string{"", "lobby", "a", "é", "😀", "\uffff", "\u007f", "<>&", `\"`, `\\`, `\/`, `\b\f\n\r\t`, `\u0000`, `\u00e9`, `\ud83d\ude00`, `\uD83D\uDE00`, `\u2028`, `\\ud800`, strings.Repeat("x", 130), strings.Repeat("é", 70)}
	badPieces  = []string{`\ud800`, `\udc00`, `\ud800\u0041`, `\udbff\ud800`, `\x`, `\u12`, "\x01", "\t", "\xff", "\xed\xa0\x80", "\xc0\xaf"}
)

// genString is a JSON string of one to three pieces.
func genString(r *rand.Rand) string {
	var b strings.Builder
	b.WriteByte('"')
	for range 1 + r.IntN(3) {
		if r.IntN(16) == 0 {
			b.WriteString(pick(r, badPieces))
		} else {
			b.WriteString(pick(r, goodPieces))
		}
	}
	b.WriteByte('"')
	return b.String()
}

// genJSON is any JSON value (or near-JSON) of at most depth levels.
func genJSON(r *rand.Rand, depth int) string {
	switch n := r.IntN(8); {
	case n < 2:
		return pick(r, numbers)
	case n < 4:
		return genString(r)
	case n < 5:
		return pick(r, []string{"true", "false", "null", "tru", "nul"})
	case depth > 0 && n < 6:
		var items []string
		for range r.IntN(3) {
			items = append(items, genJSON(r, depth-1))
		}
		return "[" + strings.Join(items, ",") + "]"
	case depth > 0:
		var members []string
		for range r.IntN(3) {
			members = append(members, genString(r)+":"+genJSON(r, depth-1))
		}
		return "{" + strings.Join(members, ",") + "}"
	}
	return "{}"
}

// spaced puts JSON whitespace, and now and then a byte that is not JSON
// whitespace, around the text and after its structural characters.
func spaced(r *rand.Rand, s string) string {
	ws := []string{" ", "\t", "\n", "\r", "\r\n  "}
	odd := []string{"\x0c", "\v", "\u00a0", "\ufeff", "\x00"}
	space := func() string {
		switch r.IntN(64) {
		case 0:
			return pick(r, odd)
		case 1, 2, 3, 4, 5, 6, 7, 8:
			return pick(r, ws)
		}
		return ""
	}
	if r.IntN(3) != 0 {
		return s // compact, as peers send it
	}
	var b strings.Builder
	b.WriteString(space())
	inString := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		b.WriteByte(c)
		switch {
		case inString && c == '\\':
			i++
			if i < len(s) {
				b.WriteByte(s[i])
			}
		case c == '"':
			inString = !inString
		case !inString && strings.IndexByte("{}[],:", c) >= 0:
			b.WriteString(space())
		}
	}
	b.WriteString(space())
	return b.String()
}
