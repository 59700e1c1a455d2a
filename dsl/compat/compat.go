// Package compat says what happens between a peer built from an old
// contract and a peer built from a new one during a rolling deploy, by the
// rules of §4.3: what the handshake refuses, what fails per message, and
// what is safe.
package compat

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/transport-io/tiogen/dsl/ir"
	"github.com/transport-io/tiogen/runtime/wire"
)

// Level is how much a change matters to two peers that differ by it.
type Level int

const (
	// Refuse: the handshake refuses every session between the peers (§4.3).
	Refuse Level = iota
	// Warn: sessions open, but some messages fail on arrival.
	Warn
	// Safe: nothing fails.
	Safe
)

// MarshalText writes the level as its word, as `tiogen compat --json` does.
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads a level written by MarshalText.
func (l *Level) UnmarshalText(b []byte) error {
	for _, v := range []Level{Refuse, Warn, Safe} {
		if v.String() == string(b) {
			*l = v
			return nil
		}
	}
	return fmt.Errorf("compat: unknown level %q (refuse, warn or safe)", b)
}

func (l Level) String() string {
	switch l {
	case Refuse:
		return "refuse"
	case Warn:
		return "warn"
	default:
		return "safe"
	}
}

// Change is one difference between the contracts.
type Change struct {
	Level Level `json:"level"`
	// Subject is what changed: "event 'cursor'" or "Message.sentAt".
	Subject string `json:"subject"`
	// Message says what changed and what a peer will see.
	Message string `json:"message"`
	// Events lists the shared events whose messages carry a changed type.
	Events []string `json:"events,omitempty"`
}

func (c Change) String() string {
	s := fmt.Sprintf("%-7s %s: %s", c.Level.String()+":", c.Subject, c.Message)
	if len(c.Events) > 0 {
		s += " (events: " + strings.Join(c.Events, ", ") + ")"
	}
	return s
}

// Refuses reports whether any change makes the handshake refuse.
func Refuses(changes []Change) bool {
	return slices.ContainsFunc(changes, func(c Change) bool { return c.Level == Refuse })
}

// Compare lists every difference between old and new that a peer can see,
// refusals first, then warnings, then safe changes, each by subject.
func Compare(old, new *ir.Contract) []Change {
	d := &differ{old: old, new: new, byKey: map[string]*Change{}}
	d.events()
	out := make([]Change, 0, len(d.changes))
	for _, c := range d.changes {
		slices.Sort(c.Events)
		c.Events = slices.Compact(c.Events)
		out = append(out, *c)
	}
	slices.SortStableFunc(out, func(a, b Change) int {
		return cmp.Or(cmp.Compare(a.Level, b.Level), strings.Compare(a.Subject, b.Subject),
			strings.Compare(a.Message, b.Message))
	})
	return out
}

type differ struct {
	old, new *ir.Contract
	changes  []*Change
	// byKey merges a type change reached from several events into one.
	byKey map[string]*Change
	// seen holds the (old, new) named-type pairs the current event reached.
	seen map[[2]string]bool
}

func (d *differ) add(level Level, event, subject, message string) {
	key := subject + "\x00" + message
	if c, ok := d.byKey[key]; ok {
		if event != "" {
			c.Events = append(c.Events, event)
		}
		return
	}
	c := &Change{Level: level, Subject: subject, Message: message}
	if event != "" {
		c.Events = []string{event}
	}
	d.byKey[key] = c
	d.changes = append(d.changes, c)
}

// events applies the handshake's own comparison (wire.CompareTables, §4.3)
// to each event of old against new's table, then compares what the tables
// agree on.
func (d *differ) events() {
	newTable := d.new.Table()
	for _, o := range d.old.Events {
		subject := "event '" + o.Name + "'"
		entry := wire.EventEntry{Name: o.WireName, ID: o.ID, Lane: o.Lane}
		if err := wire.CompareTables([]wire.EventEntry{entry}, newTable); err != nil {
			d.add(Refuse, "", subject, refusal(err))
			continue
		}
		n := d.new.Event(o.Name)
		if n == nil {
			d.add(Safe, "", subject, "removed in new; a peer built from old that sends it gets WT_UNKNOWN_EVENT for that message (§4.3)")
			continue
		}
		d.shared(o, *n)
	}
	for _, n := range d.new.Events {
		if d.old.Event(n.Name) == nil {
			d.add(Safe, "", "event '"+n.Name+"'", "added in new; a peer built from old answers it with WT_UNKNOWN_EVENT for that message (§4.3)")
		}
	}
}

// refusal says what a refusal looks like to the peer built from old.
func refusal(err error) string {
	var werr *wire.Error
	if !errors.As(err, &werr) {
		return "the handshake refuses every session between the two peers (§4.3): " + err.Error()
	}
	return fmt.Sprintf("the handshake refuses every session between the two peers (§4.3); the peer built from old closes with %s %q", werr.Code, werr.Message)
}

// shared compares an event both tables agree on.
func (d *differ) shared(o, n ir.Event) {
	subject := "event '" + o.Name + "'"
	if o.Kind != n.Kind {
		d.add(Warn, "", subject, fmt.Sprintf("is %s in old and %s in new; its messages are different frames (§6) on each side, so every use of it fails between the two peers", kindWords(o.Kind), kindWords(n.Kind)))
		return
	}
	if o.Direction != n.Direction {
		d.add(Warn, "", subject, fmt.Sprintf("may be sent by %s in old and by %s in new; a message sent by a side the receiver's contract does not allow fails on arrival", dirWords(o.Direction), dirWords(n.Direction)))
	}
	if o.Fallback != n.Fallback {
		d.add(Safe, "", subject, fmt.Sprintf("fallback is %s in old and %s in new; each sender applies its own (§7.6)", fallbackWords(o.Fallback), fallbackWords(n.Fallback)))
	}
	// Each event walks its own types, so a type change lists every event
	// that carries it.
	d.seen = map[[2]string]bool{}
	d.slot(o.Name, "payload", o.Payload, n.Payload)
	if o.Result != nil && n.Result != nil {
		d.slot(o.Name, string(n.Kind), *o.Result, *n.Result)
	}
}

func fallbackWords(f ir.Fallback) string {
	if f == ir.FallbackNone {
		return "none"
	}
	return string(f)
}

func kindWords(k ir.Kind) string {
	switch k {
	case ir.KindReturns:
		return "a call (returns)"
	case ir.KindYields:
		return "a streaming call (yields)"
	default:
		return "an emit"
	}
}

func dirWords(d ir.Direction) string {
	if d == ir.DirEither {
		return "either side"
	}
	return "the " + string(d) + " only"
}

func (d *differ) slot(event, slot string, o, n ir.Slot) {
	subject := "event '" + event + "' " + slot
	if o.Codec != n.Codec {
		d.add(Warn, "", subject, fmt.Sprintf("codec is %s (0x%02x) in old and %s (0x%02x) in new; a frame with the other codec is a protocol error naming the event and slot (§5.3)", o.Codec, o.Codec.Byte(), n.Codec, n.Codec.Byte()))
		return
	}
	d.walkSlot(event, subject, o.Type, n.Type)
}

// walkSlot compares a slot's types: differences at the slot itself are
// named by the slot, those inside a record by type and field.
func (d *differ) walkSlot(event, subject string, o, n ir.TypeRef) {
	if o.Kind == n.Kind && (o.Kind == ir.RefList || o.Kind == ir.RefMap) {
		d.walkSlot(event, subject, *o.Elem, *n.Elem)
		return
	}
	if o.Kind == ir.RefNamed && n.Kind == ir.RefNamed && o.Decl == n.Decl {
		d.ref(event, subject, o, n)
		return
	}
	d.ref("", subject, o, n)
}

// ref compares two types at one place. Type names never travel, so a
// renamed type with the same shape is no change. event is "" while subject
// names an event slot, and the event otherwise.
func (d *differ) ref(event, subject string, o, n ir.TypeRef) {
	switch {
	case o.Kind == ir.RefNamed && n.Kind == ir.RefNamed && o.Decl == n.Decl:
		pair := [2]string{o.Name, n.Name}
		if d.seen[pair] {
			return
		}
		d.seen[pair] = true
		if o.Decl == ir.NamedEnum {
			d.enum(event, d.old.Enum(o.Name), d.new.Enum(n.Name))
		} else {
			d.record(event, d.old.Type(o.Name), d.new.Type(n.Name))
		}
	case o.Kind == n.Kind && (o.Kind == ir.RefList || o.Kind == ir.RefMap):
		d.ref(event, subject, *o.Elem, *n.Elem)
	case o.Kind == n.Kind && o.Primitive == n.Primitive && o.Kind != ir.RefNamed:
		// The same primitive, or bytes() on both sides.
	default:
		d.add(Warn, event, subject, typeChange(o, n))
	}
}

func describe(t ir.TypeRef) string {
	if t.Kind == ir.RefNamed {
		return string(t.Decl) + " " + t.Name
	}
	return t.String()
}

func (d *differ) record(event string, o, n *ir.Type) {
	for _, of := range o.Fields {
		subject := n.Name + "." + of.Name
		nf := field(n, of.Name)
		switch {
		case nf == nil && of.Optional:
			d.add(Safe, event, subject, "optional field removed in new; a peer built from new ignores it")
		case nf == nil:
			d.add(Warn, event, subject, "required field removed in new; a peer built from old rejects a "+o.Name+" from new without it with WT_VALIDATION_FAILED on that message")
		default:
			if of.Optional && !nf.Optional {
				d.add(Warn, event, subject, "optional in old and required in new; a peer built from new rejects a "+n.Name+" from old without it with WT_VALIDATION_FAILED on that message")
			}
			if !of.Optional && nf.Optional {
				d.add(Warn, event, subject, "required in old and optional in new; a peer built from old rejects a "+o.Name+" from new without it with WT_VALIDATION_FAILED on that message")
			}
			d.ref(event, subject, of.Type, nf.Type)
		}
	}
	for _, nf := range n.Fields {
		if field(o, nf.Name) != nil {
			continue
		}
		subject := n.Name + "." + nf.Name
		if nf.Optional {
			d.add(Safe, event, subject, "optional field added in new; a peer built from old ignores it")
		} else {
			d.add(Warn, event, subject, "required field added in new; a peer built from new rejects a "+n.Name+" from old without it with WT_VALIDATION_FAILED on that message")
		}
	}
}

func field(t *ir.Type, name string) *ir.Field {
	for i := range t.Fields {
		if t.Fields[i].Name == name {
			return &t.Fields[i]
		}
	}
	return nil
}

func (d *differ) enum(event string, o, n *ir.Enum) {
	subject := "enum " + n.Name
	for _, v := range o.Values {
		if !hasValue(n, v.Name) {
			d.add(Warn, event, subject, "value '"+v.Name+"' removed in new; a peer built from new rejects it from old with WT_VALIDATION_FAILED on that message")
		}
	}
	for _, v := range n.Values {
		if !hasValue(o, v.Name) {
			d.add(Warn, event, subject, "value '"+v.Name+"' added in new; a peer built from old rejects it from new with WT_VALIDATION_FAILED on that message")
		}
	}
}

func hasValue(e *ir.Enum, name string) bool {
	return slices.ContainsFunc(e.Values, func(v ir.EnumValue) bool { return v.Name == name })
}
