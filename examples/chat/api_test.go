package chat_test

import (
	"context"
	"errors"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/transport-io/tiogen/examples/chat"
	"github.com/transport-io/tiogen/runtime/tio"
	"github.com/transport-io/tiogen/runtime/transport/loopback"
	"github.com/transport-io/tiogen/runtime/typed"
	"github.com/transport-io/tiogen/runtime/wire"
)

// These tests drive the generated API of examples/chat over the in-memory
// transport: what a user of the generated code writes, end to end through
// the engine.

type handler struct {
	chat.UnimplementedHandler
	srv      *chat.Server
	chats    chan chat.Message
	streamed chan error // what the history handler's send returned last
}

func (h *handler) Chat(ctx context.Context, peer chat.Peer, m chat.Message) error {
	h.chats <- m
	return h.srv.Room(m.Room).EmitMessage(ctx, m, peer)
}

func (h *handler) Save(_ context.Context, _ chat.Peer, req chat.SaveRequest) (chat.SaveResult, error) {
	return chat.SaveResult{Revision: int32(len(req.Text))}, nil
}

func (h *handler) History(ctx context.Context, peer chat.Peer, req chat.HistoryRequest, send func(chat.Message) error) error {
	if err := peer.Join(req.Room); err != nil {
		return err
	}
	for i := int32(0); req.Limit == 0 || i < req.Limit; i++ {
		if err := send(chat.Message{Room: req.Room, Body: strings.Repeat("x", int(i)), Mood: chat.MoodSad}); err != nil {
			h.streamed <- err
			return err
		}
	}
	return nil
}

type fixture struct {
	h   *handler
	srv *chat.Server
}

func newFixture(t *testing.T, opts tio.ServerOptions) *fixture {
	t.Helper()
	h := &handler{chats: make(chan chat.Message, 16), streamed: make(chan error, 1)}
	srv, err := chat.NewServer(h, opts)
	if err != nil {
		t.Fatal(err)
	}
	h.srv = srv
	t.Cleanup(func() { srv.Close() })
	return &fixture{h: h, srv: srv}
}

// connect runs one session between the fixture's server and a new client.
func (f *fixture) connect(t *testing.T, opts loopback.Options) *chat.Client {
	t.Helper()
	cc, sc, _ := loopback.Pair(opts)
	served := make(chan struct{})
	go func() { defer close(served); f.srv.Runtime().Serve(sc, nil) }()
	raw, err := tio.NewClient(context.Background(), cc, chat.Contract, tio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := chat.NewClient(raw)
	t.Cleanup(func() {
		c.Close(tio.NoError, "test over")
		c.Wait()
		<-served
	})
	return c
}

func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("nothing arrived in 5 s")
		panic("unreachable")
	}
}

func TestEmitsReachHandlerAndRoom(t *testing.T) {
	f := newFixture(t, tio.ServerOptions{})
	ann, bob := f.connect(t, loopback.Options{}), f.connect(t, loopback.Options{})
	heard := make(chan chat.Message, 4)
	defer bob.OnMessage(func(m chat.Message) { heard <- m })()
	annHeard := make(chan chat.Message, 4)
	defer ann.OnMessage(func(m chat.Message) { annHeard <- m })()
	ctx := context.Background()
	for _, c := range []*chat.Client{ann, bob} { // joining happens in the history call
		for _, err := range c.History(ctx, chat.HistoryRequest{Room: "lobby", Limit: 1}) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	sent := int64(1700000000123)
	msg := chat.Message{Room: "lobby", Body: "hi", SentAt: &sent, Tags: []string{"a"}, Meta: map[string]string{"from": "ann"}, Mood: chat.MoodHappy,
		ReplyTo: &chat.Message{Room: "lobby", Body: "earlier", Mood: chat.MoodSad}}
	if err := ann.EmitChat(msg); err != nil {
		t.Fatal(err)
	}
	got := recv(t, f.h.chats)
	if got.Body != "hi" || *got.SentAt != sent || got.ReplyTo.Body != "earlier" || got.Meta["from"] != "ann" {
		t.Fatalf("handler got %+v", got)
	}
	if m := recv(t, heard); m.Body != "hi" || m.Mood != chat.MoodHappy {
		t.Fatalf("bob heard %+v", m)
	}
	select {
	case m := <-annHeard:
		t.Fatalf("the sender was excepted but heard %+v", m)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestCallsAndUnimplemented(t *testing.T) {
	f := newFixture(t, tio.ServerOptions{})
	c := f.connect(t, loopback.Options{})
	ctx := context.Background()
	res, err := c.Save(ctx, chat.SaveRequest{Doc: "d", Text: "hello"})
	if err != nil || res.Revision != 5 {
		t.Fatalf("save: %+v %v", res, err)
	}
	_, err = c.Upload(ctx, []byte{1, 2, 3})
	var te *tio.Error
	if !errors.As(err, &te) || te.Code != tio.HandlerError || !strings.Contains(te.Message, "'upload' is not implemented") {
		t.Fatalf("unimplemented upload: %v", err)
	}
}

// TestSpec6_4_InvalidRequestNamesField sends a request the generated client
// would refuse, through the runtime client, and expects the server's
// CALL_ERROR to name the field.
func TestSpec6_4_InvalidRequestNamesField(t *testing.T) {
	f := newFixture(t, tio.ServerOptions{})
	c := f.connect(t, loopback.Options{})
	save, _ := chat.Contract.EventByName("save")
	_, err := c.Runtime().Call(context.Background(), save.ID, []byte(`{"doc":"d"}`))
	var te *tio.Error
	if !errors.As(err, &te) || te.Code != tio.ValidationFailed || te.Message != "field 'text' is required" {
		t.Fatalf("got %v", err)
	}
}

func TestSendRefusesInvalidValues(t *testing.T) {
	f := newFixture(t, tio.ServerOptions{})
	c := f.connect(t, loopback.Options{})
	err := c.EmitChat(chat.Message{Room: "r", Mood: "bored"})
	if wire.CodeOf(err) != tio.ValidationFailed || !strings.Contains(err.Error(), "field 'mood' must be one of 'happy', 'sad', 'angry', not 'bored'") {
		t.Fatalf("got %v", err)
	}
	if err := (chat.Message{Mood: chat.MoodHappy, ReplyTo: &chat.Message{Mood: "x"}}).Validate(); err == nil || !strings.Contains(err.Error(), "field 'replyTo.mood'") {
		t.Fatalf("Validate: %v", err)
	}
}

// TestSpec6_6_BreakCancelsStream breaks out of a stream whose server would
// send forever: the handler's send must fail (the caller is gone) instead of
// blocking on credit forever.
func TestSpec6_6_BreakCancelsStream(t *testing.T) {
	f := newFixture(t, tio.ServerOptions{})
	c := f.connect(t, loopback.Options{})
	n := 0
	for m, err := range c.History(context.Background(), chat.HistoryRequest{Room: "r"}) {
		if err != nil {
			t.Fatal(err)
		}
		if m.Body != strings.Repeat("x", n) {
			t.Fatalf("element %d: %q", n, m.Body)
		}
		if n++; n == 40 { // past the initial window of 32, so credit was granted
			break
		}
	}
	if err := recv(t, f.h.streamed); wire.CodeOf(err) != tio.Aborted {
		t.Fatalf("send after break returned %v, want WT_ABORTED", err)
	}
}

// TestSpec7_4_DatagramTooLarge checks that a datagram event over the path's
// limit reports WT_DATAGRAM_TOO_LARGE from the typed emitter.
func TestSpec7_4_DatagramTooLarge(t *testing.T) {
	f := newFixture(t, tio.ServerOptions{})
	c := f.connect(t, loopback.Options{MaxDatagramSize: 20})
	err := c.EmitCursor(chat.Cursor{X: 1.0000000001, Y: 2.0000000002})
	if wire.CodeOf(err) != tio.DatagramTooLarge {
		t.Fatalf("got %v", err)
	}
}

func TestJSONMethodsUseTheWireForm(t *testing.T) {
	n := int64(-9007199254740993)
	b, err := chat.Message{Room: "r", Body: "b", SentAt: &n, Mood: chat.MoodAngry}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"room":"r","body":"b","sentAt":"-9007199254740993","tags":[],"meta":{},"mood":"angry"}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var m chat.Message
	if err := m.UnmarshalJSON([]byte(`{"room":"r","body":"b","sentAt":42,"tags":[],"meta":{},"mood":"angry"}`)); err != nil || *m.SentAt != 42 {
		t.Fatalf("%+v %v", m, err)
	}
}

func TestServerSendsToPeer(t *testing.T) {
	peers := make(chan chat.Peer, 1)
	f := newFixture(t, tio.ServerOptions{OnSession: func(p *tio.Peer) { peers <- chat.NewPeer(p) }})
	c := f.connect(t, loopback.Options{})
	avatars := make(chan []byte, 1)
	defer c.OnAvatar(func(b []byte) { avatars <- b })()
	p := recv(t, peers)
	if err := p.EmitAvatar([]byte{0xff, 0}); err != nil {
		t.Fatal(err)
	}
	if b := recv(t, avatars); string(b) != "\xff\x00" {
		t.Fatalf("avatar %x", b)
	}
}

// TestInvalidEmitIsDroppedAndCounted sends a chat emit that fails
// validation through the runtime client: the handler never sees it, the
// server counts it, and the session stays up.
func TestInvalidEmitIsDroppedAndCounted(t *testing.T) {
	peers := make(chan chat.Peer, 1)
	handlerErrors := make(chan string, 1)
	f := newFixture(t, tio.ServerOptions{
		OnSession:      func(p *tio.Peer) { peers <- chat.NewPeer(p) },
		OnHandlerError: func(_ *tio.Peer, event string, _ error) { handlerErrors <- event },
	})
	c := f.connect(t, loopback.Options{})
	p := recv(t, peers)
	ev, _ := chat.Contract.EventByName("chat")
	if err := c.Runtime().Emit(ev.ID, []byte(`{"room":"r","body":"b","tags":[],"meta":{},"mood":"bored"}`)); err != nil {
		t.Fatal(err)
	}
	// ping follows on the same emit stream, so once its (unimplemented)
	// handler reported, the chat before it was handled.
	if err := c.EmitPing("after"); err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, handlerErrors); ev != "ping" {
		t.Fatalf("handler error from %q", ev)
	}
	if n := p.Stats().ValidationDropped; n != 1 {
		t.Fatalf("validationDropped = %d, want 1", n)
	}
	select {
	case m := <-f.h.chats:
		t.Fatalf("the handler got an invalid message: %+v", m)
	default:
	}
}

// TestGeneratedSurfaceIsTyped: the generated types embed their base from
// runtime/typed, which forwards a fixed set of the runtime's methods, and
// add the contract's typed ones; the untyped Emit, SendDatagram, Call,
// Stream and On are reached only through Runtime. Each holds nothing but
// its base, and the base holds the runtime value unexported.
func TestGeneratedSurfaceIsTyped(t *testing.T) {
	methods := func(v any) string {
		var out []string
		typ := reflect.TypeOf(v)
		for i := range typ.NumMethod() {
			out = append(out, typ.Method(i).Name)
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct {
		v    any
		base any
		want string
	}{
		{&chat.Client{}, typed.ClientBase{}, "Close Done EmitChat EmitCursor EmitPing Err History OnAvatar OnCursor OnMessage OnPing Rooms Runtime Save Stats Upload Wait WaitEmit"},
		{chat.Peer{}, typed.PeerBase{}, "Close Data Done EmitAvatar EmitCursor EmitMessage EmitPing Err ID InRoom Join Leave Rooms Runtime Stats WaitEmit"},
		{chat.Room{}, typed.RoomBase{}, "EmitAvatar EmitCursor EmitMessage EmitPing Members Name Runtime"},
		{&chat.Server{}, typed.ServerBase{}, "Close Room Runtime"},
	} {
		if got := methods(c.v); got != c.want {
			t.Errorf("%T methods:\n got %s\nwant %s", c.v, got, c.want)
		}
		typ := reflect.TypeOf(c.v)
		if typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if typ.NumField() != 1 || !typ.Field(0).Anonymous || typ.Field(0).Type != reflect.TypeOf(c.base) {
			t.Errorf("%T holds more than its embedded %T", c.v, c.base)
		}
		base := reflect.TypeOf(c.base)
		if base.NumField() != 1 || base.Field(0).IsExported() {
			t.Errorf("%T holds its runtime value in an exported or extra field", c.base)
		}
	}
}

// TestGeneratedDocShowsNoRuntimeMethods: what `go doc` shows of the
// generated package and of the bases it embeds is the typed API and the
// fixed forwarded set, never the runtime's by-id methods.
func TestGeneratedDocShowsNoRuntimeMethods(t *testing.T) {
	goDoc := func(args ...string) string {
		out, err := exec.Command("go", append([]string{"doc", "-all"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("go doc %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	// documented are the methods the doc shows per receiver type, and the
	// struct bodies it shows per type.
	documented := func(doc string) (map[string]string, map[string]string) {
		methods, bodies := map[string][]string{}, map[string]string{}
		method := regexp.MustCompile(`(?m)^func \(\w* ?\*?(\w+)\) (\w+)\(`)
		for _, m := range method.FindAllStringSubmatch(doc, -1) {
			methods[m[1]] = append(methods[m[1]], m[2])
		}
		for _, m := range regexp.MustCompile(`(?ms)^type (\w+) struct \{\n(.*?)^\}`).FindAllStringSubmatch(doc, -1) {
			bodies[m[1]] = strings.TrimSpace(m[2])
		}
		out := map[string]string{}
		for typ, ms := range methods {
			out[typ] = strings.Join(ms, " ")
		}
		return out, bodies
	}
	methods, bodies := documented(goDoc("."))
	for typ, want := range map[string]string{
		"Client": "EmitChat EmitCursor EmitPing History OnAvatar OnCursor OnMessage OnPing Save Upload",
		"Peer":   "EmitAvatar EmitCursor EmitMessage EmitPing",
		"Room":   "EmitAvatar EmitCursor EmitMessage EmitPing",
		"Server": "Room",
	} {
		if methods[typ] != want {
			t.Errorf("go doc shows %s methods %q, want %q", typ, methods[typ], want)
		}
		if body := bodies[typ]; body != "typed."+typ+"Base" {
			t.Errorf("go doc shows type %s struct {%s}, want only its embedded typed.%sBase", typ, body, typ)
		}
	}
	bases, _ := documented(goDoc("github.com/transport-io/tiogen/runtime/typed"))
	for typ, want := range map[string]string{
		"ClientBase": "Close Done Err Rooms Runtime Stats Wait WaitEmit",
		"PeerBase":   "Close Data Done Err ID InRoom Join Leave Rooms Runtime Stats WaitEmit",
		"RoomBase":   "Members Name Runtime",
		"ServerBase": "Close Runtime",
	} {
		if bases[typ] != want {
			t.Errorf("go doc shows typed.%s methods %q, want %q", typ, bases[typ], want)
		}
	}
}
