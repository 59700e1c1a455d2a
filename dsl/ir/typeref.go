package ir

// RefKind says what a TypeRef points at.
type RefKind string

const (
	RefPrimitive RefKind = "primitive"
	RefNamed     RefKind = "named"
	RefList      RefKind = "list"
	RefMap       RefKind = "map"
	// RefBytesSlot is bytes(): a whole event slot of raw bytes, codec 0x02.
	RefBytesSlot RefKind = "bytes()"
)

// Primitive is a built-in type.
type Primitive string

const (
	Bool    Primitive = "bool"
	String  Primitive = "string"
	Int32   Primitive = "int32"
	Int64   Primitive = "int64"
	Uint32  Primitive = "uint32"
	Uint64  Primitive = "uint64"
	Float64 Primitive = "float64"
	Bytes   Primitive = "bytes"
	JSON    Primitive = "json"
)

// Primitives lists every built-in type in the order the docs give them.
var Primitives = []Primitive{Bool, String, Int32, Int64, Uint32, Uint64, Float64, Bytes, JSON}

// JSONForm is how a primitive value is written in JSON. Both generators
// encode and decode by it, so Go and TypeScript peers agree.
type JSONForm string

const (
	FormBoolean JSONForm = "boolean"
	FormString  JSONForm = "string"
	// FormNumber is a JSON number; for int32/uint32 one whose value is an
	// integer in range (1.0 and 1e2 too, as JSON.parse cannot tell them from 1
	// and 100).
	FormNumber JSONForm = "number"
	// FormDecimalString is a 64-bit integer written as a JSON string of
	// decimal digits ("-12"), as protobuf's JSON mapping does, so that a
	// TypeScript peer never rounds it through a float64. Decoders also accept
	// a JSON number with an integer value within ±(2^53-1).
	FormDecimalString JSONForm = "decimal-string"
	// FormBase64 is a JSON string of standard, padded base64 (RFC 4648 §4).
	FormBase64 JSONForm = "base64"
	// FormAny is any JSON value, written in canonical form
	// (docs/contract-language.md, "JSON on the wire").
	FormAny JSONForm = "any"
)

// Form returns how p travels inside JSON.
func (p Primitive) Form() JSONForm {
	switch p {
	case Bool:
		return FormBoolean
	case String:
		return FormString
	case Int64, Uint64:
		return FormDecimalString
	case Bytes:
		return FormBase64
	case JSON:
		return FormAny
	default: // Int32, Uint32, Float64
		return FormNumber
	}
}

// IsPrimitive reports whether name is a built-in type.
func IsPrimitive(name string) bool {
	for _, p := range Primitives {
		if string(p) == name {
			return true
		}
	}
	return false
}

// NamedKind says whether a named reference is a record or an enum.
type NamedKind string

const (
	NamedType NamedKind = "type"
	NamedEnum NamedKind = "enum"
)

// TypeRef is the type of a field or an event slot.
type TypeRef struct {
	Kind RefKind `json:"kind"`
	// Primitive and JSONForm are set for RefPrimitive.
	Primitive Primitive `json:"primitive,omitempty"`
	JSONForm  JSONForm  `json:"json,omitempty"`
	// Name and Decl are set for RefNamed.
	Name string    `json:"name,omitempty"`
	Decl NamedKind `json:"decl,omitempty"`
	// Elem is the element of a list or the value of a map (keys are strings).
	Elem *TypeRef `json:"elem,omitempty"`
}

// PrimitiveRef refers to a built-in type.
func PrimitiveRef(p Primitive) TypeRef {
	return TypeRef{Kind: RefPrimitive, Primitive: p, JSONForm: p.Form()}
}

// NamedRef refers to a declared type or enum.
func NamedRef(name string, decl NamedKind) TypeRef {
	return TypeRef{Kind: RefNamed, Name: name, Decl: decl}
}

// ListRef is list<elem>.
func ListRef(elem TypeRef) TypeRef { return TypeRef{Kind: RefList, Elem: &elem} }

// MapRef is map<string, value>.
func MapRef(value TypeRef) TypeRef { return TypeRef{Kind: RefMap, Elem: &value} }

// BytesSlotRef is bytes().
func BytesSlotRef() TypeRef { return TypeRef{Kind: RefBytesSlot} }

// String is the reference as written in a contract.
func (t TypeRef) String() string {
	switch t.Kind {
	case RefPrimitive:
		return string(t.Primitive)
	case RefNamed:
		return t.Name
	case RefList:
		return "list<" + t.Elem.String() + ">"
	case RefMap:
		return "map<string, " + t.Elem.String() + ">"
	default:
		return "bytes()"
	}
}
