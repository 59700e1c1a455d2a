package golang

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/transport-io/tiogen/dsl/ir"
)

func idName(e ir.Event) string { return "id" + goName(e.Name) }

// contract declares the event ids and the runtime contract value.
func (g *generator) contract(f *jen.File) {
	if len(g.c.Events) > 0 {
		f.Comment("Event ids (§5.4): the first four bytes of SHA-256 of the name, or the contract's explicit id.")
		f.Const().DefsFunc(func(d *jen.Group) {
			for _, e := range g.c.Events {
				d.Id(idName(e)).Uint32().Op("=").Op(fmt.Sprintf("0x%08x", e.ID))
			}
		})
	}
	f.Comment(lineComment(wrap(fmt.Sprintf("Contract is contract %s as the runtime uses it: [tio.Contract]. "+
		"Both peers must use the same contract, or the handshake refuses the session (§4.3).", g.c.Name))))
	args := []jen.Code{jen.Lit(g.c.Name)}
	for _, e := range g.c.Events {
		args = append(args, jen.Line().Add(g.runtimeEvent(e)))
	}
	if len(g.c.Events) > 0 {
		args = append(args, jen.Line())
	}
	f.Var().Id("Contract").Op("=").Qual(tioPath, "MustContract").Call(args...)
}

func (g *generator) runtimeEvent(e ir.Event) jen.Code {
	lane := map[ir.Lane]string{ir.Reliable: "Reliable", ir.Unreliable: "Unreliable"}[e.Lane]
	from := map[ir.Direction]string{ir.DirEither: "Either", ir.DirClient: "FromClient", ir.DirServer: "FromServer"}[e.Direction]
	kind := map[ir.Kind]string{ir.KindEmit: "Emit", ir.KindReturns: "Returns", ir.KindYields: "Yields"}[e.Kind]
	codec := func(c ir.Codec) jen.Code {
		if c == ir.CodecBytes {
			return jen.Qual(wirePath, "CodecBytes")
		}
		return jen.Qual(wirePath, "CodecJSON")
	}
	field := func(name string, val jen.Code) jen.Code { return jen.Id(name).Op(":").Add(val) }
	items := []jen.Code{
		field("Name", jen.Lit(e.WireName)),
		field("ID", jen.Id(idName(e))),
		field("Lane", jen.Qual(wirePath, lane)),
	}
	if e.Kind == ir.KindEmit {
		// A call has no direction at run time: the client initiates it.
		items = append(items, field("From", jen.Qual(tioPath, from)))
	}
	items = append(items, field("Kind", jen.Qual(tioPath, kind)), field("Payload", codec(e.Payload.Codec)))
	if e.Result != nil {
		items = append(items, field("Result", codec(e.Result.Codec)))
	}
	if e.Fallback == ir.FallbackNewest {
		items = append(items, field("Fallback", jen.Qual(tioPath, "Newest")))
	}
	return jen.Qual(tioPath, "Event").Values(items...)
}

// slotName is the name of a slot codec variable: codecX for a declared
// type, codec_ plus the type as written otherwise (names.go, rule 4).
func (g *generator) slotName(t ir.TypeRef) string {
	if t.Kind == ir.RefNamed {
		return "codec" + g.typeNames[t.Name]
	}
	return "codec_" + g.slug(t)
}

func (g *generator) slug(t ir.TypeRef) string {
	switch t.Kind {
	case ir.RefPrimitive:
		return string(t.Primitive)
	case ir.RefNamed:
		return g.typeNames[t.Name]
	case ir.RefList:
		return "list_" + g.slug(*t.Elem)
	default:
		return "map_" + g.slug(*t.Elem)
	}
}

// slotCodec is the typed.Codec of one event slot.
func (g *generator) slotCodec(s ir.Slot) jen.Code {
	if s.Type.Kind == ir.RefBytesSlot {
		return jen.Qual(typedPath, "Raw").Values()
	}
	return jen.Id(g.slotName(s.Type))
}

// codecs declares one codec per distinct JSON slot type, in event order.
func (g *generator) codecs(f *jen.File) {
	var defs []jen.Code
	for _, t := range g.c.JSONSlotTypes() {
		defs = append(defs, jen.Id(g.slotName(t)).Op("=").Qual(typedPath, "JSON").Types(g.goType(t)).Values(jen.Dict{
			jen.Id("Encode"): g.encodeFunc(t),
			jen.Id("Decode"): g.decodeFunc(t),
		}))
	}
	if len(defs) == 0 {
		return
	}
	f.Comment("Codecs of the event slots (§5.3).")
	f.Var().DefsFunc(func(d *jen.Group) {
		for _, def := range defs {
			d.Add(def)
		}
	})
}

// eventDoc is the doc comment of a generated method: its sentence, then the
// event's /// docs.
func eventDoc(sentence string, e ir.Event) jen.Code {
	sentence = wrap(sentence)
	if strings.TrimSpace(e.Docs) != "" {
		sentence += "\n\n" + e.Docs
	}
	return jen.Comment(lineComment(sentence))
}

// wrap refills the generator's own sentences to lines of at most 76
// characters; the contract's docs keep the lines they were written with.
func wrap(text string) string {
	var out strings.Builder
	line := 0
	for i, w := range strings.Fields(text) {
		if i > 0 {
			if line+1+len(w) > 76 {
				out.WriteByte('\n')
				line = 0
			} else {
				out.WriteByte(' ')
				line++
			}
		}
		out.WriteString(w)
		line += len(w)
	}
	return out.String()
}

func ctxParam() *jen.Statement { return jen.Id("ctx").Qual("context", "Context") }

// handlerSignature is a Handler method's parameters and results.
func (g *generator) handlerSignature(e ir.Event, named bool) (params, results []jen.Code) {
	id := func(n string) *jen.Statement {
		if named {
			return jen.Id(n)
		}
		return jen.Null()
	}
	ctx := id("ctx").Qual("context", "Context")
	peer := id("peer").Id("Peer")
	payload := g.goType(e.Payload.Type)
	switch e.Kind {
	case ir.KindEmit:
		return []jen.Code{ctx, peer, id("v").Add(payload)}, []jen.Code{jen.Error()}
	case ir.KindReturns:
		return []jen.Code{ctx, peer, id("req").Add(payload)},
			[]jen.Code{g.goType(e.Result.Type), jen.Error()}
	default:
		return []jen.Code{ctx, peer, id("req").Add(payload),
			id("send").Func().Params(g.goType(e.Result.Type)).Error()}, []jen.Code{jen.Error()}
	}
}

func (g *generator) server(f *jen.File) {
	var handled []ir.Event
	for _, e := range g.c.Events {
		if e.SentByClient() {
			handled = append(handled, e)
		}
	}

	f.Comment(lineComment(wrap("Handler serves what clients send: one method per call and per emit the " +
		"server receives, with its payload decoded and validated. Embed UnimplementedHandler to " +
		"implement only some. Contexts, errors and when each method runs are as for " +
		"[tio.EmitHandler], [tio.CallHandler] and [tio.StreamHandler].")))
	f.Type().Id("Handler").InterfaceFunc(func(i *jen.Group) {
		for _, e := range handled {
			i.Add(eventDoc(handlerDoc(e), e))
			params, results := g.handlerSignature(e, true)
			i.Id(g.methods["handler "+e.Name]).Params(params...).Params(results...)
		}
	})

	f.Comment(lineComment(wrap("UnimplementedHandler answers every event with WT_HANDLER_ERROR, " +
		"as [typed.Unimplemented] words it.")))
	f.Type().Id("UnimplementedHandler").Struct()
	for _, e := range handled {
		params, results := g.handlerSignature(e, false)
		ret := []jen.Code{jen.Qual(typedPath, "Unimplemented").Call(jen.Lit(e.Name))}
		if e.Kind == ir.KindReturns {
			ret = []jen.Code{jen.Add(g.goType(e.Result.Type)).Values(), ret[0]}
			if zero := g.zero(e.Result.Type); zero != nil {
				ret[0] = zero
			}
		}
		f.Line()
		f.Func().Params(jen.Id("UnimplementedHandler")).Id(g.methods["handler "+e.Name]).Params(params...).Params(results...).Block(
			jen.Return(ret...),
		)
	}
	f.Line()
	f.Var().Id("_").Id("Handler").Op("=").Id("UnimplementedHandler").Values()

	serverWrapper.declare(f, "Server serves contract "+g.c.Name+" with a Handler bound. A listener serves "+
		"its Runtime (endpoint.Listen(srv.Runtime(), ...)); Room gives typed broadcasts.")
	f.Comment(lineComment(wrap("NewServer binds h to a new runtime server of Contract: [tio.NewServer].")))
	f.Func().Id("NewServer").Params(jen.Id("h").Id("Handler"), jen.Id("opts").Qual(tioPath, "ServerOptions")).Params(jen.Op("*").Id("Server"), jen.Error()).BlockFunc(func(b *jen.Group) {
		b.List(jen.Id("srv"), jen.Id("err")).Op(":=").Qual(tioPath, "NewServer").Call(jen.Id("Contract"), jen.Id("opts"))
		b.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err()))
		for _, e := range handled {
			b.Add(g.bind(e))
		}
		b.Return(serverWrapper.wrap(jen.Id("srv")), jen.Nil())
	})
	f.Comment(lineComment(wrap("Room is the named room, with typed broadcasts: [tio.Server.Room].")))
	f.Func().Params(serverWrapper.receiver()).Id("Room").Params(jen.Id("name").String()).Id("Room").Block(
		jen.Return(roomWrapper.wrap(serverWrapper.rt().Dot("Room").Call(jen.Id("name")))),
	)

	peerWrapper.declare(f, "Peer is the server's side of one session, with typed emitters for the "+
		"events the server sends. Handlers receive it; see [tio.Peer] for the session.")
	f.Comment(lineComment(wrap("NewPeer wraps a runtime peer of a Server of this contract, as " +
		"tio.ServerOptions.OnSession and OnSessionEnd receive it.")))
	f.Func().Id("NewPeer").Params(jen.Id("p").Op("*").Qual(tioPath, "Peer")).Id("Peer").Block(
		jen.Return(peerWrapper.wrap(jen.Id("p"))),
	)
	roomWrapper.declare(f, "Room is a room of the server, with typed broadcasts of the events the "+
		"server sends, each encoded once for every member: see [tio.Room].")
	for _, e := range g.c.Events {
		if !e.SentByServer() {
			continue
		}
		codec := g.slotCodec(e.Payload)
		payload := g.goType(e.Payload.Type)
		send, roomSend := "Emit", "RoomEmit"
		if e.Lane == ir.Unreliable {
			send, roomSend = "SendDatagram", "RoomSendDatagram"
		}
		f.Add(eventDoc(fmt.Sprintf("%s sends '%s' to this peer: [tio.Peer.%s].", g.methods["peer "+e.Name], e.Name, send), e))
		f.Func().Params(peerWrapper.receiver()).Id(g.methods["peer "+e.Name]).Params(jen.Id("v").Add(payload)).Error().Block(
			jen.Return(jen.Qual(typedPath, send).Call(peerWrapper.rt(), jen.Id(idName(e)), codec, jen.Id("v"))),
		)
		f.Add(eventDoc(fmt.Sprintf("%s sends '%s' to every member of the room except the listed peers; ctx bounds the hand-off to other nodes: [tio.Room.%s].", g.methods["room "+e.Name], e.Name, send), e))
		f.Func().Params(roomWrapper.receiver()).Id(g.methods["room "+e.Name]).Params(ctxParam(), jen.Id("v").Add(payload), jen.Id("except").Op("...").Id("Peer")).Error().Block(
			jen.Return(jen.Qual(typedPath, roomSend).Call(jen.Id("ctx"), roomWrapper.rt(), jen.Id(idName(e)), codec, jen.Id("v"), jen.Qual(typedPath, "Except").Call(jen.Id("except")))),
		)
	}
}

// zero is the zero value of a result type for UnimplementedHandler, or nil
// when T{} is one.
func (g *generator) zero(t ir.TypeRef) jen.Code {
	switch t.Kind {
	case ir.RefPrimitive:
		switch t.Primitive {
		case ir.Bool:
			return jen.False()
		case ir.String:
			return jen.Lit("")
		case ir.Bytes, ir.JSON:
			return jen.Nil()
		}
		return jen.Lit(0)
	case ir.RefNamed:
		if t.Decl == ir.NamedEnum {
			return jen.Lit("")
		}
		return nil
	}
	return jen.Nil()
}

func handlerDoc(e ir.Event) string {
	switch e.Kind {
	case ir.KindReturns:
		return fmt.Sprintf("%s answers the call '%s': [tio.CallHandler].", goName(e.Name), e.Name)
	case ir.KindYields:
		return fmt.Sprintf("%s answers the streaming call '%s' by calling send once per element: [tio.StreamHandler].", goName(e.Name), e.Name)
	}
	how := "emit"
	if e.Lane == ir.Unreliable {
		how = "datagram"
	}
	return fmt.Sprintf("%s receives the %s '%s' from a client: [tio.EmitHandler].", goName(e.Name), how, e.Name)
}

// bind registers one handler method with the runtime server.
func (g *generator) bind(e ir.Event) jen.Code {
	method := jen.Id("h").Dot(g.methods["handler "+e.Name])
	wrap := peerWrapper.wrap(jen.Id("p"))
	peer := jen.Id("p").Op("*").Qual(tioPath, "Peer")
	payload := g.goType(e.Payload.Type)
	reqCodec := g.slotCodec(e.Payload)
	switch e.Kind {
	case ir.KindEmit:
		return jen.Qual(typedPath, "HandleEmit").Call(jen.Id("srv"), jen.Id(idName(e)), reqCodec,
			jen.Func().Params(ctxParam(), peer, jen.Id("v").Add(payload)).Error().Block(
				jen.Return(method.Call(jen.Id("ctx"), wrap, jen.Id("v"))),
			))
	case ir.KindReturns:
		return jen.Qual(typedPath, "HandleCall").Call(jen.Id("srv"), jen.Id(idName(e)), reqCodec, g.slotCodec(*e.Result),
			jen.Func().Params(ctxParam(), peer, jen.Id("req").Add(payload)).Params(g.goType(e.Result.Type), jen.Error()).Block(
				jen.Return(method.Call(jen.Id("ctx"), wrap, jen.Id("req"))),
			))
	default:
		return jen.Qual(typedPath, "HandleStream").Call(jen.Id("srv"), jen.Id(idName(e)), reqCodec, g.slotCodec(*e.Result),
			jen.Func().Params(ctxParam(), peer, jen.Id("req").Add(payload), jen.Id("send").Func().Params(g.goType(e.Result.Type)).Error()).Error().Block(
				jen.Return(method.Call(jen.Id("ctx"), wrap, jen.Id("req"), jen.Id("send"))),
			))
	}
}

func (g *generator) client(f *jen.File) {
	clientWrapper.declare(f, "Client is the client's side of a session of contract "+g.c.Name+", with typed "+
		"emits, subscriptions, calls and streams: see [tio.Client] for the session, and "+
		"[endpoint.Run] to dial a new one after a session ends (§11: a session is never resumed).")

	f.Comment(lineComment(wrap("NewClient wraps a runtime client made with Contract over any transport: [tio.NewClient].")))
	f.Func().Id("NewClient").Params(jen.Id("c").Op("*").Qual(tioPath, "Client")).Op("*").Id("Client").Block(
		jen.Return(clientWrapper.wrap(jen.Id("c"))),
	)

	f.Comment(lineComment(wrap("Dial opens a session of contract " + g.c.Name + " at url (https://host:port/path): [endpoint.Dial].")))
	f.Func().Id("Dial").Params(ctxParam(), jen.Id("url").String(), jen.Id("opts").Qual(endpointPath, "DialOptions")).Params(jen.Op("*").Id("Client"), jen.Error()).Block(
		jen.List(jen.Id("c"), jen.Err()).Op(":=").Qual(endpointPath, "Dial").Call(jen.Id("ctx"), jen.Id("url"), jen.Id("Contract"), jen.Id("opts")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Return(clientWrapper.wrap(jen.Id("c")), jen.Nil()),
	)

	recv := clientWrapper.receiver
	self := clientWrapper.rt
	for _, e := range g.c.Events {
		payload := g.goType(e.Payload.Type)
		codec := g.slotCodec(e.Payload)
		switch e.Kind {
		case ir.KindReturns:
			name := g.methods["client "+e.Name]
			f.Add(eventDoc(fmt.Sprintf("%s calls '%s': [tio.Client.Call].", name, e.Name), e))
			f.Func().Params(recv()).Id(name).Params(ctxParam(), jen.Id("req").Add(payload)).Params(g.goType(e.Result.Type), jen.Error()).Block(
				jen.Return(jen.Qual(typedPath, "Call").Call(jen.Id("ctx"), self(), jen.Id(idName(e)), codec, g.slotCodec(*e.Result), jen.Id("req"))),
			)
			continue
		case ir.KindYields:
			name := g.methods["client "+e.Name]
			f.Add(eventDoc(fmt.Sprintf("%s calls '%s' and yields its elements, then an error if the call fails: [tio.Client.Stream].", name, e.Name), e))
			f.Func().Params(recv()).Id(name).Params(ctxParam(), jen.Id("req").Add(payload)).Qual("iter", "Seq2").Types(g.goType(e.Result.Type), jen.Error()).Block(
				jen.Return(jen.Qual(typedPath, "Stream").Call(jen.Id("ctx"), self(), jen.Id(idName(e)), codec, g.slotCodec(*e.Result), jen.Id("req"))),
			)
			continue
		}
		if e.SentByClient() {
			name := g.methods["emit "+e.Name]
			send := "Emit"
			if e.Lane == ir.Unreliable {
				send = "SendDatagram"
			}
			f.Add(eventDoc(fmt.Sprintf("%s sends '%s': [tio.Client.%s].", name, e.Name, send), e))
			f.Func().Params(recv()).Id(name).Params(jen.Id("v").Add(payload)).Error().Block(
				jen.Return(jen.Qual(typedPath, send).Call(self(), jen.Id(idName(e)), codec, jen.Id("v"))),
			)
		}
		if e.SentByServer() {
			name := g.methods["on "+e.Name]
			f.Add(eventDoc(fmt.Sprintf("%s calls fn with each '%s' the server sends, decoded and validated, until unsubscribe is called: [tio.Client.On].", name, e.Name), e))
			f.Func().Params(recv()).Id(name).Params(jen.Id("fn").Func().Params(payload)).Params(jen.Id("unsubscribe").Func().Params()).Block(
				jen.Return(jen.Qual(typedPath, "On").Call(self(), jen.Id(idName(e)), codec, jen.Id("fn"))),
			)
		}
	}
}
