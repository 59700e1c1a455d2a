package golang

import (
	"github.com/dave/jennifer/jen"

	"github.com/transport-io/tiogen/dsl/ir"
)

// primitiveMethod is the Encoder and Decoder method of each primitive.
var primitiveMethod = map[ir.Primitive]string{
	ir.Bool: "Bool", ir.String: "String", ir.Int32: "Int32", ir.Int64: "Int64",
	ir.Uint32: "Uint32", ir.Uint64: "Uint64", ir.Float64: "Float64",
	ir.Bytes: "Bytes", ir.JSON: "JSON",
}

// goType is the Go type of a reference: int64 and uint64 stay Go integers
// (their decimal-string JSON form is the codec's business), bytes is
// []byte, json is json.RawMessage.
func (g *generator) goType(t ir.TypeRef) *jen.Statement {
	switch t.Kind {
	case ir.RefPrimitive:
		switch t.Primitive {
		case ir.Bytes:
			return jen.Index().Byte()
		case ir.JSON:
			return jen.Qual("encoding/json", "RawMessage")
		}
		return jen.Id(string(t.Primitive))
	case ir.RefNamed:
		return jen.Id(g.typeNames[t.Name])
	case ir.RefList:
		return jen.Index().Add(g.goType(*t.Elem))
	case ir.RefMap:
		return jen.Map(jen.String()).Add(g.goType(*t.Elem))
	default: // bytes()
		return jen.Index().Byte()
	}
}

// nilable reports whether the Go type's zero value is nil, which then means
// "absent" for an optional field instead of a pointer.
func nilable(t ir.TypeRef) bool {
	switch t.Kind {
	case ir.RefList, ir.RefMap:
		return true
	case ir.RefPrimitive:
		return t.Primitive == ir.Bytes || t.Primitive == ir.JSON
	}
	return false
}

func encoder() *jen.Statement { return jen.Op("*").Qual(typedPath, "Encoder") }
func decoder() *jen.Statement { return jen.Op("*").Qual(typedPath, "Decoder") }

// encodeFunc is a func(*typed.Encoder, T) writing values of t.
func (g *generator) encodeFunc(t ir.TypeRef) *jen.Statement {
	switch t.Kind {
	case ir.RefPrimitive:
		return jen.Parens(encoder()).Dot(primitiveMethod[t.Primitive])
	case ir.RefNamed:
		return jen.Id("encode" + g.typeNames[t.Name])
	}
	return jen.Func().Params(jen.Id("e").Add(encoder()), jen.Id("v").Add(g.goType(t))).Block(
		g.encodeStmt(t, jen.Id("v")),
	)
}

// decodeFunc is a func(*typed.Decoder) T reading values of t.
func (g *generator) decodeFunc(t ir.TypeRef) *jen.Statement {
	switch t.Kind {
	case ir.RefPrimitive:
		return jen.Parens(decoder()).Dot(primitiveMethod[t.Primitive])
	case ir.RefNamed:
		return jen.Id("decode" + g.typeNames[t.Name])
	}
	return jen.Func().Params(jen.Id("d").Add(decoder())).Add(g.goType(t)).Block(
		jen.Return(g.decodeExpr(t)),
	)
}

// encodeStmt writes val, of type t, with the encoder e.
func (g *generator) encodeStmt(t ir.TypeRef, val jen.Code) *jen.Statement {
	switch t.Kind {
	case ir.RefPrimitive:
		return jen.Id("e").Dot(primitiveMethod[t.Primitive]).Call(val)
	case ir.RefNamed:
		return jen.Id("encode"+g.typeNames[t.Name]).Call(jen.Id("e"), val)
	case ir.RefList:
		return jen.Qual(typedPath, "EncodeList").Call(jen.Id("e"), val, g.encodeFunc(*t.Elem))
	default: // map
		return jen.Qual(typedPath, "EncodeMap").Call(jen.Id("e"), val, g.encodeFunc(*t.Elem))
	}
}

// decodeExpr reads a value of t with the decoder d.
func (g *generator) decodeExpr(t ir.TypeRef) *jen.Statement {
	switch t.Kind {
	case ir.RefPrimitive:
		return jen.Id("d").Dot(primitiveMethod[t.Primitive]).Call()
	case ir.RefNamed:
		return jen.Id("decode" + g.typeNames[t.Name]).Call(jen.Id("d"))
	case ir.RefList:
		return jen.Qual(typedPath, "List").Call(jen.Id("d"), g.decodeFunc(*t.Elem))
	default: // map
		return jen.Qual(typedPath, "Map").Call(jen.Id("d"), g.decodeFunc(*t.Elem))
	}
}

// types declares every record and enum with its codec and validation.
func (g *generator) types(f *jen.File) {
	for _, t := range g.c.Types {
		g.record(f, t)
	}
	for _, e := range g.c.Enums {
		g.enum(f, e)
	}
}

func (g *generator) record(f *jen.File, t ir.Type) {
	name := g.typeNames[t.Name]
	f.Add(docComment(t.Docs))
	f.Type().Id(name).StructFunc(func(s *jen.Group) {
		for _, fd := range t.Fields {
			typ := g.goType(fd.Type)
			tag := fd.Name
			if fd.Optional {
				tag += ",omitempty"
				if !nilable(fd.Type) {
					typ = jen.Op("*").Add(typ)
				}
			}
			s.Add(docComment(fd.Docs))
			s.Id(g.fieldNames[t.Name+"."+fd.Name]).Add(typ).Tag(map[string]string{"json": tag})
		}
	})
	g.valueMethods(f, name, true)

	f.Line()
	// encodeX writes every required field and each optional one that is
	// present, in declaration order.
	f.Func().Id("encode"+name).Params(jen.Id("e").Add(encoder()), jen.Id("v").Id(name)).BlockFunc(func(b *jen.Group) {
		b.Id("f").Op(":=").Id("e").Dot("Object").Call()
		for _, fd := range t.Fields {
			field := jen.Id("v").Dot(g.fieldNames[t.Name+"."+fd.Name])
			key := jen.Id("f").Dot("Key").Call(jen.Id("e"), jen.Lit(fd.Name))
			switch {
			case !fd.Optional:
				b.Add(key)
				b.Add(g.encodeStmt(fd.Type, field))
			case nilable(fd.Type):
				b.If(field.Clone().Op("!=").Nil()).Block(key, g.encodeStmt(fd.Type, field))
			default:
				b.If(field.Clone().Op("!=").Nil()).Block(key, g.encodeStmt(fd.Type, jen.Op("*").Add(field)))
			}
		}
		b.Id("f").Dot("End").Call(jen.Id("e"))
	})

	// decodeX reads the fields in any order, skips keys the contract does
	// not declare and fails naming the first required field missing.
	var required []jen.Code
	for _, fd := range t.Fields {
		if !fd.Optional {
			required = append(required, jen.Lit(fd.Name))
		}
	}
	f.Line()
	f.Func().Id("decode" + name).Params(jen.Id("d").Add(decoder())).Params(jen.Id("v").Id(name)).BlockFunc(func(b *jen.Group) {
		if len(required) > 0 {
			b.Var().Id("seen").Index(jen.Lit(len(required))).Bool()
		}
		b.Id("m").Op(":=").Id("d").Dot("Object").Call()
		b.For(jen.Id("m").Dot("Next").Call(jen.Id("d"))).BlockFunc(func(loop *jen.Group) {
			if len(t.Fields) == 0 {
				loop.Id("d").Dot("Skip").Call()
				return
			}
			loop.Switch(jen.String().Parens(jen.Id("m").Dot("Key").Call())).BlockFunc(func(sw *jen.Group) {
				index := 0
				for _, fd := range t.Fields {
					field := jen.Id("v").Dot(g.fieldNames[t.Name+"."+fd.Name])
					var stmt jen.Code
					switch {
					case !fd.Optional:
						stmt = jen.List(field, jen.Id("seen").Index(jen.Lit(index))).Op("=").List(g.decodeExpr(fd.Type), jen.True())
						index++
					case nilable(fd.Type):
						// null is the field absent, also after an earlier value for the key (the last wins).
						stmt = jen.If(jen.Id("d").Dot("Null").Call()).Block(field.Clone().Op("=").Nil()).Else().Block(field.Clone().Op("=").Add(g.decodeExpr(fd.Type)))
					default:
						stmt = field.Clone().Op("=").Qual(typedPath, "Optional").Call(jen.Id("d"), g.decodeFunc(fd.Type))
					}
					sw.Case(jen.Lit(fd.Name)).Block(stmt)
				}
				sw.Default().Block(jen.Id("d").Dot("Skip").Call())
			})
		})
		if len(required) > 0 {
			b.Id("d").Dot("Require").Call(append([]jen.Code{jen.Id("seen").Index(jen.Op(":"))}, required...)...)
		}
		b.Return(jen.Id("v"))
	})
}

// valueMethods declares Validate and, for records, the encoding/json
// methods, all through the type's encodeX and decodeX.
func (g *generator) valueMethods(f *jen.File, name string, record bool) {
	enc := jen.Id("encode" + name)
	f.Comment("Validate reports whether v can be sent, naming the field that cannot: [typed.Validate].")
	f.Func().Params(jen.Id("v").Id(name)).Id("Validate").Params().Error().Block(
		jen.Return(jen.Qual(typedPath, "Validate").Call(enc, jen.Id("v"))),
	)
	if !record {
		return
	}
	f.Comment("MarshalJSON writes v as it travels: [typed.Marshal].")
	f.Func().Params(jen.Id("v").Id(name)).Id("MarshalJSON").Params().Params(jen.Index().Byte(), jen.Error()).Block(
		jen.Return(jen.Qual(typedPath, "Marshal").Call(enc, jen.Id("v"))),
	)
	f.Comment("UnmarshalJSON reads and validates v as it travels: [typed.Unmarshal].")
	f.Func().Params(jen.Id("v").Op("*").Id(name)).Id("UnmarshalJSON").Params(jen.Id("b").Index().Byte()).Error().Block(
		jen.Return(jen.Qual(typedPath, "Unmarshal").Call(jen.Id("decode"+name), jen.Id("b"), jen.Id("v"))),
	)
}

func (g *generator) enum(f *jen.File, e ir.Enum) {
	name := g.typeNames[e.Name]
	f.Add(docComment(e.Docs))
	f.Type().Id(name).String()
	var consts []jen.Code
	f.Const().DefsFunc(func(d *jen.Group) {
		for _, v := range e.Values {
			c := g.constNames[e.Name+"."+v.Name]
			consts = append(consts, jen.Id(c))
			d.Add(docComment(v.Docs))
			d.Id(c).Id(name).Op("=").Lit(v.Name)
		}
	})
	f.Var().Id("values" + name).Op("=").Index().Id(name).Values(consts...)
	g.valueMethods(f, name, false)
	f.Line()
	f.Func().Id("encode"+name).Params(jen.Id("e").Add(encoder()), jen.Id("v").Id(name)).Block(
		jen.Qual(typedPath, "EncodeEnum").Call(jen.Id("e"), jen.Id("v"), jen.Id("values"+name)),
	)
	f.Line()
	f.Func().Id("decode" + name).Params(jen.Id("d").Add(decoder())).Id(name).Block(
		jen.Return(jen.Qual(typedPath, "Enum").Call(jen.Id("d"), jen.Id("values"+name))),
	)
}
