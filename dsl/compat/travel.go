package compat

import (
	"fmt"
	"math"

	"github.com/transport-io/tiogen/dsl/ir"
)

// How a value travels in the JSON codec (docs/contract-language.md, "JSON
// forms"), and so which values one side writes that the other side reads.
// A type change is judged per direction of a rolling deploy: what a peer
// built from old writes, read by a peer built from new, and the reverse.

// reach says how many of the values one side writes the other side reads.
type reach int

const (
	readsAll  reach = iota // every value is accepted
	readsSome              // some values fail with WT_VALIDATION_FAILED
	readsNone              // every value fails: a JSON form the reader never accepts
)

// form is the JSON form a type travels as.
type form int

const (
	formBool form = iota
	formNumber
	formString
	formObject
	formArray
	formAny // json: whatever the writer holds
)

// numbers is the set of JSON numbers a primitive writes or reads.
type numbers struct {
	integral bool
	lo, hi   float64
}

var numberSets = map[ir.Primitive]numbers{
	ir.Int32:   {true, math.MinInt32, math.MaxInt32},
	ir.Uint32:  {true, 0, math.MaxUint32},
	ir.Int64:   {true, math.MinInt64, math.MaxInt64},
	ir.Uint64:  {true, 0, math.MaxUint64},
	ir.Float64: {false, -math.MaxFloat64, math.MaxFloat64},
}

// formOf is the form t is written in.
func formOf(t ir.TypeRef) form {
	switch t.Kind {
	case ir.RefNamed:
		if t.Decl == ir.NamedEnum {
			return formString
		}
		return formObject
	case ir.RefMap:
		return formObject
	case ir.RefList:
		return formArray
	case ir.RefBytesSlot:
		return formString // never compared: bytes() is its own codec
	}
	switch t.Primitive.Form() {
	case ir.FormBoolean:
		return formBool
	case ir.FormNumber:
		return formNumber
	case ir.FormAny:
		return formAny
	}
	return formString // string, base64 and decimal strings
}

// formWords names a form as a user reads it.
func formWords(t ir.TypeRef) string {
	switch t.Kind {
	case ir.RefNamed:
		if t.Decl == ir.NamedEnum {
			return "a JSON string (one of its values)"
		}
		return "a JSON object"
	case ir.RefMap:
		return "a JSON object"
	case ir.RefList:
		return "a JSON array"
	}
	return primitiveWords[t.Primitive.Form()]
}

var primitiveWords = map[ir.JSONForm]string{
	ir.FormBoolean:       "a JSON boolean",
	ir.FormString:        "a JSON string",
	ir.FormNumber:        "a JSON number",
	ir.FormDecimalString: "a decimal string",
	ir.FormBase64:        "a base64 string",
	ir.FormAny:           "any JSON value",
}

// reads says how many of the values writer produces reader accepts. Both
// are types that differ (the caller handles equal ones and walks named
// types of the same kind).
func reads(writer, reader ir.TypeRef) reach {
	if formOf(reader) == formAny {
		return readsAll
	}
	if formOf(writer) == formAny {
		return readsSome
	}
	w, r := formOf(writer), formOf(reader)
	// int64 and uint64 read integer numbers (within ±(2^53-1), which every
	// 32-bit value is) as well as decimal strings.
	if w == formNumber && r == formString && reader.Kind == ir.RefPrimitive && (reader.Primitive == ir.Int64 || reader.Primitive == ir.Uint64) {
		return subset(numberSets[writer.Primitive], numberSets[reader.Primitive])
	}
	if w != r {
		return readsNone
	}
	switch w {
	case formNumber:
		return subset(numberSets[writer.Primitive], numberSets[reader.Primitive])
	case formString:
		// Any string is read by string; an enum's values are strings; a
		// decimal string is read by the other 64-bit type only in range.
		if reader.Kind == ir.RefPrimitive && reader.Primitive == ir.String {
			return readsAll
		}
		return readsSome
	}
	// Objects and arrays of different kinds (record and map) may share
	// some values: an empty map is an object a record without required
	// fields reads.
	return readsSome
}

func subset(w, r numbers) reach {
	if (w.integral || !r.integral) && r.lo <= w.lo && w.hi <= r.hi {
		return readsAll
	}
	return readsSome
}

// typeChange says what a changed type does to messages in each direction.
func typeChange(o, n ir.TypeRef) string {
	how := fmt.Sprintf("type is %s in old and %s in new", describe(o), describe(n))
	if fo, fn := formWords(o), formWords(n); fo != fn {
		how += fmt.Sprintf(" (%s travels as %s, %s as %s)", describe(o), fo, describe(n), fn)
	}
	return how + "; " + direction(reads(o, n), "old", "new") + "; " + direction(reads(n, o), "new", "old")
}

func direction(r reach, from, to string) string {
	switch r {
	case readsNone:
		return fmt.Sprintf("every message from a peer built from %s that carries it fails at a peer built from %s with WT_VALIDATION_FAILED", from, to)
	case readsSome:
		return fmt.Sprintf("a value from a peer built from %s that the type in %s cannot hold fails there with WT_VALIDATION_FAILED", from, to)
	}
	return fmt.Sprintf("every value from a peer built from %s is accepted by one built from %s", from, to)
}
