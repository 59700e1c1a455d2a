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
	f.Comment(lineComment(fmt.Sprintf("Contract is contract %s as the runtime uses it: each event's id, lane,\n"+
		"direction, kind, slot codecs and fallback. Both peers must use the same\n"+
		"contract, or the handshake refuses the session (§4.3).", g.c.Name)))
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
	seen := map[string]bool{}
	var defs []jen.Code
	add := func(s *ir.Slot) {
		if s == nil || s.Type.Kind == ir.RefBytesSlot || seen[g.slotName(s.Type)] {
			return
		}
		seen[g.slotName(s.Type)] = true
		defs = append(defs, jen.Id(g.slotName(s.Type)).Op("=").Qual(typedPath, "JSON").Types(g.goType(s.Type)).Values(jen.Dict{
			jen.Id("Encode"): g.encodeFunc(s.Type),
			jen.Id("Decode"): g.decodeFunc(s.Type),
		}))
	}
	for _, e := range g.c.Events {
		add(&e.Payload)
		add(e.Result)
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

func peerParam() *jen.Statement { return jen.Id("peer").Id("Peer") }
func ctxParam() *jen.Statement  { return jen.Id("ctx").Qual("context", "Context") }

// handlerSignature is a Handler method's parameters and results.
func (g *generator) handlerSignature(e ir.Event, named bool) (params, results []jen.Code) {
	id := func(n string) *jen.Statement {
		if named {
			return jen.Id(n)
		}
		return jen.Null()
	}
	payload := g.goType(e.Payload.Type)
	switch e.Kind {
	case ir.KindEmit:
		return []jen.Code{id("peer").Id("Peer"), id("v").Add(payload)}, []jen.Code{jen.Error()}
	case ir.KindReturns:
		return []jen.Code{id("ctx").Qual("context", "Context"), id("peer").Id("Peer"), id("req").Add(payload)},
			[]jen.Code{g.goType(e.Result.Type), jen.Error()}
	default:
		return []jen.Code{id("ctx").Qual("context", "Context"), id("peer").Id("Peer"), id("req").Add(payload),
			id("send").Func().Params(g.goType(e.Result.Type)).Error()}, []jen.Code{jen.Error()}
	}
}

func (g *generator) server(f *jen.File) {
	var handled []ir.Event
	for _, e := range g.c.Events {
		if sentByClient(e) {
			handled = append(handled, e)
		}
	}

	f.Comment(lineComment("Handler serves what clients send: one method per call and per emit the\n" +
		"server receives. Embed UnimplementedHandler to implement only some."))
	f.Type().Id("Handler").InterfaceFunc(func(i *jen.Group) {
		for _, e := range handled {
			i.Add(eventDoc(handlerDoc(e), e))
			params, results := g.handlerSignature(e, true)
			i.Id(g.methods["handler "+e.Name]).Params(params...).Params(results...)
		}
	})

	f.Comment(lineComment("UnimplementedHandler answers every event with WT_HANDLER_ERROR \"'event' is\n" +
		"not implemented by this server\": a call gets it as its CALL_ERROR at once\n" +
		"(§6.4), an emit reports it to ServerOptions.OnHandlerError."))
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

	f.Comment(lineComment(wrap("Server is a runtime server for this contract with a Handler bound. Serve " +
		"sessions with its Serve (runtime/endpoint.Listen does that over " +
		"WebTransport and the WebSocket mapping); Room adds typed broadcasts.")))
	f.Type().Id("Server").Struct(jen.Op("*").Qual(tioPath, "Server"))

	f.Comment(lineComment("NewServer binds h to a new runtime server of Contract."))
	f.Func().Id("NewServer").Params(jen.Id("h").Id("Handler"), jen.Id("opts").Qual(tioPath, "ServerOptions")).Params(jen.Op("*").Id("Server"), jen.Error()).BlockFunc(func(b *jen.Group) {
		b.List(jen.Id("srv"), jen.Id("err")).Op(":=").Qual(tioPath, "NewServer").Call(jen.Id("Contract"), jen.Id("opts"))
		b.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err()))
		for _, e := range handled {
			b.Add(g.bind(e))
		}
		b.Return(jen.Op("&").Id("Server").Values(jen.Id("srv")), jen.Nil())
	})
	f.Comment(lineComment("Room is the named room with typed broadcasts."))
	f.Func().Params(jen.Id("s").Op("*").Id("Server")).Id("Room").Params(jen.Id("name").String()).Id("Room").Block(
		jen.Return(jen.Id("Room").Values(jen.Id("s").Dot("Server").Dot("Room").Call(jen.Id("name")))),
	)

	f.Comment(lineComment("Peer is the server's side of one session, with typed emitters for the\n" +
		"events the server sends."))
	f.Type().Id("Peer").Struct(jen.Op("*").Qual(tioPath, "Peer"))
	f.Comment(lineComment("Room is a room of the server, with typed broadcasts of the events the\n" +
		"server sends; each is encoded once for every member (§6.5)."))
	f.Type().Id("Room").Struct(jen.Op("*").Qual(tioPath, "Room"))
	for _, e := range g.c.Events {
		if !sentByServer(e) {
			continue
		}
		codec := g.slotCodec(e.Payload)
		payload := g.goType(e.Payload.Type)
		send, roomSend, how := "Emit", "RoomEmit", "on the emit lane (§6.1); a full queue closes the session WT_PEER_TOO_SLOW (§9)"
		if e.Lane == ir.Unreliable {
			send, roomSend, how = "SendDatagram", "RoomSendDatagram", "as a datagram (§7); over the path's size limit it fails with\nWT_DATAGRAM_TOO_LARGE and nothing is sent (§7.4)"
		}
		f.Add(eventDoc(fmt.Sprintf("%s sends '%s' to this peer %s.", g.methods["peer "+e.Name], e.Name, how), e))
		f.Func().Params(jen.Id("p").Id("Peer")).Id(g.methods["peer "+e.Name]).Params(jen.Id("v").Add(payload)).Error().Block(
			jen.Return(jen.Qual(typedPath, send).Call(jen.Id("p").Dot("Peer"), jen.Id(idName(e)), codec, jen.Id("v"))),
		)
		f.Add(eventDoc(fmt.Sprintf("%s sends '%s' to every member of the room except the listed peers.", g.methods["room "+e.Name], e.Name), e))
		f.Func().Params(jen.Id("r").Id("Room")).Id(g.methods["room "+e.Name]).Params(jen.Id("v").Add(payload), jen.Id("except").Op("...").Id("Peer")).Error().Block(
			jen.Return(jen.Qual(typedPath, roomSend).Call(jen.Id("r").Dot("Room"), jen.Id(idName(e)), codec, jen.Id("v"), jen.Qual(typedPath, "Except").Call(jen.Id("except")))),
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
		return fmt.Sprintf("%s answers the call '%s'. An error becomes its CALL_ERROR: a *tio.Error\nkeeps its code, any other error is WT_HANDLER_ERROR (§6.4). ctx ends when\nthe caller cancels or the session ends.", goName(e.Name), e.Name)
	case ir.KindYields:
		return fmt.Sprintf("%s answers the streaming call '%s' by calling send once per element.\nsend waits while the caller's credit is zero (§6.6) and fails once the\ncaller cancelled or the session ended; return then. An error returned\nafter elements is sent after them as CALL_ERROR (§6.4).", goName(e.Name), e.Name)
	}
	how := "emit"
	if e.Lane == ir.Unreliable {
		how = "datagram"
	}
	return fmt.Sprintf("%s receives the %s '%s' from a client, validated. It runs on the\nsession's reader: return quickly.", goName(e.Name), how, e.Name)
}

// bind registers one handler method with the runtime server.
func (g *generator) bind(e ir.Event) jen.Code {
	method := jen.Id("h").Dot(g.methods["handler "+e.Name])
	wrap := jen.Id("Peer").Values(jen.Id("p"))
	peer := jen.Id("p").Op("*").Qual(tioPath, "Peer")
	payload := g.goType(e.Payload.Type)
	reqCodec := g.slotCodec(e.Payload)
	switch e.Kind {
	case ir.KindEmit:
		return jen.Qual(typedPath, "HandleEmit").Call(jen.Id("srv"), jen.Id(idName(e)), reqCodec,
			jen.Func().Params(peer, jen.Id("v").Add(payload)).Error().Block(
				jen.Return(method.Call(wrap, jen.Id("v"))),
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
	f.Comment(lineComment(wrap("Client is the client's side of a session of this contract, with typed "+
		"emits, subscriptions, calls and streams. The embedded runtime client "+
		"has the rest: Close, Wait, Err, Rooms, Stats.") + "\n\n" + wrap("On a WebSocket "+
		"session (endpoint.DialWebSocket, or Dial's fallback) only the emit lane "+
		"exists: calls and streams fail at once with WT_LANE_UNAVAILABLE and the "+
		"session stays up (§3.3). A session is never resumed (§11): to stay "+
		"connected, endpoint.Run dials a new one after a session ends and hands it "+
		"to a function that sets up the application's state again (subscriptions, "+
		"the requests that put it in rooms).")))
	f.Type().Id("Client").Struct(jen.Op("*").Qual(tioPath, "Client"))

	f.Comment(lineComment("NewClient wraps a runtime client made with Contract over any transport\n" +
		"(tio.NewClient)."))
	f.Func().Id("NewClient").Params(jen.Id("c").Op("*").Qual(tioPath, "Client")).Op("*").Id("Client").Block(
		jen.Return(jen.Op("&").Id("Client").Values(jen.Id("c"))),
	)

	f.Comment(lineComment(wrap("Dial opens a session of this contract at url (https://host:port/path) " +
		"over WebTransport and returns once the handshake is accepted (§4). With " +
		"endpoint.WithWebSocketFallback it opens one over the WebSocket mapping when " +
		"WebTransport cannot be had; endpoint.WithReport says which mapping carries " +
		"the session and why.")))
	f.Func().Id("Dial").Params(ctxParam(), jen.Id("url").String(), jen.Id("opts").Op("...").Qual(endpointPath, "DialOption")).Params(jen.Op("*").Id("Client"), jen.Error()).Block(
		jen.List(jen.Id("c"), jen.Err()).Op(":=").Qual(endpointPath, "Dial").Call(jen.Id("ctx"), jen.Id("url"), jen.Id("Contract"), jen.Id("opts").Op("...")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Return(jen.Op("&").Id("Client").Values(jen.Id("c")), jen.Nil()),
	)

	recv := jen.Id("c").Op("*").Id("Client")
	self := jen.Id("c").Dot("Client")
	for _, e := range g.c.Events {
		payload := g.goType(e.Payload.Type)
		codec := g.slotCodec(e.Payload)
		switch e.Kind {
		case ir.KindReturns:
			name := g.methods["client "+e.Name]
			f.Add(eventDoc(fmt.Sprintf("%s calls '%s' (§3.2). Cancelling ctx resets the call WT_ABORTED (§8);\na CALL_ERROR comes back as a *tio.Error with the server's code (§6.4).\nOn a WebSocket session it fails with WT_LANE_UNAVAILABLE and the session\nstays up (§3.3).", name, e.Name), e))
			f.Func().Params(recv.Clone()).Id(name).Params(ctxParam(), jen.Id("req").Add(payload)).Params(g.goType(e.Result.Type), jen.Error()).Block(
				jen.Return(jen.Qual(typedPath, "Call").Call(jen.Id("ctx"), self.Clone(), jen.Id(idName(e)), codec, g.slotCodec(*e.Result), jen.Id("req"))),
			)
			continue
		case ir.KindYields:
			name := g.methods["client "+e.Name]
			f.Add(eventDoc(fmt.Sprintf("%s calls '%s' and yields its elements (§3.2), then an error if the\ncall fails. Credit is granted as the loop consumes (§6.6); breaking out\nof the loop or cancelling ctx cancels the call with WT_ABORTED (§8). On a\nWebSocket session it yields WT_LANE_UNAVAILABLE and the session stays up\n(§3.3).", name, e.Name), e))
			f.Func().Params(recv.Clone()).Id(name).Params(ctxParam(), jen.Id("req").Add(payload)).Qual("iter", "Seq2").Types(g.goType(e.Result.Type), jen.Error()).Block(
				jen.Return(jen.Qual(typedPath, "Stream").Call(jen.Id("ctx"), self.Clone(), jen.Id(idName(e)), codec, g.slotCodec(*e.Result), jen.Id("req"))),
			)
			continue
		}
		if sentByClient(e) {
			name := g.methods["emit "+e.Name]
			send, how := "Emit", "on the emit lane (§6.1)"
			if e.Lane == ir.Unreliable {
				send, how = "SendDatagram", "as a datagram (§7), on a WebSocket session as a DATAGRAM frame on the\nemit lane (§3.3); over the path's size limit it fails with\nWT_DATAGRAM_TOO_LARGE and nothing is sent (§7.4)"
			}
			f.Add(eventDoc(fmt.Sprintf("%s sends '%s' %s.", name, e.Name, how), e))
			f.Func().Params(recv.Clone()).Id(name).Params(jen.Id("v").Add(payload)).Error().Block(
				jen.Return(jen.Qual(typedPath, send).Call(self.Clone(), jen.Id(idName(e)), codec, jen.Id("v"))),
			)
		}
		if sentByServer(e) {
			name := g.methods["on "+e.Name]
			f.Add(eventDoc(fmt.Sprintf("%s calls fn with each '%s' the server sends, validated (one that\nfails validation is dropped and counted), until unsubscribe is called.\nfn runs on the session's reader, in order: return quickly.", name, e.Name), e))
			f.Func().Params(recv.Clone()).Id(name).Params(jen.Id("fn").Func().Params(payload)).Params(jen.Id("unsubscribe").Func().Params()).Block(
				jen.Return(jen.Qual(typedPath, "On").Call(self.Clone(), jen.Id(idName(e)), codec, jen.Id("fn"))),
			)
		}
	}
}
