package tio

import (
	"fmt"

	"github.com/transport-io/tiogen/runtime/wire"
)

// Direction is which side may send an emit (§4.3 permits either unless the
// contract says otherwise). Calls are always initiated by the client.
type Direction uint8

const (
	// Either side may send the event.
	Either Direction = iota
	// FromClient events are sent by the client only.
	FromClient
	// FromServer events are sent by the server only.
	FromServer
)

// Kind is the shape of an event: fire-and-forget, or a call (§3.2).
type Kind uint8

const (
	// Emit is fire and forget: EMIT frames on the reliable lane (§6.1), or
	// datagrams on the unreliable lane (§7).
	Emit Kind = iota
	// Returns is a call answered by exactly one response (§3.2).
	Returns
	// Yields is a call answered by a stream of elements under credit (§3.2,
	// §6.6).
	Yields
)

func (k Kind) String() string {
	switch k {
	case Emit:
		return "emit"
	case Returns:
		return "returns"
	case Yields:
		return "yields"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Fallback is what an unreliable event accepts on a reliable-only mapping
// (§7.6).
type Fallback uint8

const (
	// NoFallback: no session over the WebSocket mapping is possible for a
	// contract with this event (§2).
	NoFallback Fallback = iota
	// Newest: carried on the emit lane as DATAGRAM frames, oldest dropped on
	// overflow and stale dropped at dequeue (§7.6, §9).
	Newest
)

// Event is one event of a contract.
type Event struct {
	Name string
	// ID is the event id; 0 derives it from the name (§5.4).
	ID       uint32
	Lane     wire.Lane
	From     Direction
	Kind     Kind
	Payload  wire.Codec // codec of the payload (the request, for calls)
	Result   wire.Codec // codec of the returns or yields slot; 0 for emits
	Fallback Fallback
}

// Contract is a validated event table: the runtime form of a .tio contract.
// It is immutable and shared by every session that uses it.
type Contract struct {
	name   string
	events []Event
	byID   map[uint32]*Event
	// index is byID for the per-frame lookups (Event).
	index  idTable[*Event]
	byName map[string]*Event
	table  []wire.EventEntry
	// firstUndeclared is the first unreliable event, in name order, with no
	// fallback: a WebSocket session is refused naming it (§2, §7.6).
	firstUndeclared string
}

// NewContract validates events and builds a contract. Names and ids must be
// unique (two names whose derived ids collide are an error naming both,
// §5.4); calls are reliable and never declare a direction (the client
// initiates them); fallbacks belong to unreliable events; every slot's codec
// is JSON or bytes (§5.3).
func NewContract(name string, events ...Event) (*Contract, error) {
	c := &Contract{
		name:   name,
		events: make([]Event, len(events)),
		byID:   make(map[uint32]*Event, len(events)),
		byName: make(map[string]*Event, len(events)),
	}
	copy(c.events, events)
	for i := range c.events {
		e := &c.events[i]
		if e.ID == 0 {
			e.ID = wire.EventID(e.Name)
		}
		if err := checkEvent(e); err != nil {
			return nil, fmt.Errorf("contract %s: %w", name, err)
		}
		if _, dup := c.byName[e.Name]; dup {
			return nil, fmt.Errorf("contract %s: event '%s' is declared twice", name, e.Name)
		}
		if other, dup := c.byID[e.ID]; dup {
			return nil, fmt.Errorf("contract %s: events '%s' and '%s' share id %d; give one an explicit id (§5.4)", name, other.Name, e.Name, e.ID)
		}
		c.byID[e.ID] = e
		c.byName[e.Name] = e
		c.table = append(c.table, wire.EventEntry{Name: e.Name, ID: e.ID, Lane: e.Lane})
		if e.Lane == wire.Unreliable && e.Fallback == NoFallback && (c.firstUndeclared == "" || e.Name < c.firstUndeclared) {
			c.firstUndeclared = e.Name
		}
	}
	c.index = newIDTable[*Event](len(c.events))
	for i := range c.events {
		c.index.put(c.events[i].ID, &c.events[i])
	}
	return c, nil
}

// idTable finds a value by event id in about one probe, with no hashing
// beyond a multiply: an open-addressed table at most half full, never
// written once built (a contract's events; a client's subscriptions, built
// anew whenever they change).
type idTable[V any] struct {
	slots []idSlot[V]
	shift uint8
}

type idSlot[V any] struct {
	v    V
	id   uint32
	used bool
}

// newIDTable makes an empty table for n ids.
func newIDTable[V any](n int) idTable[V] {
	bits := uint8(1)
	for 1<<bits < 2*n {
		bits++
	}
	return idTable[V]{slots: make([]idSlot[V], 1<<bits), shift: 32 - bits}
}

// home is id's first slot: Fibonacci hashing, so that explicit ids in a
// run (1, 2, 3) spread as well as derived ones (§5.4).
func (x *idTable[V]) home(id uint32) int { return int((id * 0x9E3779B1) >> x.shift) }

// put adds id, not in x yet, while x is built.
func (x *idTable[V]) put(id uint32, v V) {
	j := x.home(id)
	for x.slots[j].used {
		j = (j + 1) & (len(x.slots) - 1)
	}
	x.slots[j] = idSlot[V]{v: v, id: id, used: true}
}

func (x *idTable[V]) get(id uint32) (V, bool) {
	for j := x.home(id); ; j = (j + 1) & (len(x.slots) - 1) {
		if s := &x.slots[j]; !s.used || s.id == id {
			return s.v, s.used
		}
	}
}

// MustContract is NewContract for generated code, whose contracts the
// generator already checked: it panics on an error.
func MustContract(name string, events ...Event) *Contract {
	c, err := NewContract(name, events...)
	if err != nil {
		panic(err)
	}
	return c
}

func checkEvent(e *Event) error {
	if e.Name == "" {
		return fmt.Errorf("an event has no name")
	}
	if e.Lane != wire.Reliable && e.Lane != wire.Unreliable {
		return fmt.Errorf("event '%s' has lane %q, not reliable or unreliable", e.Name, e.Lane)
	}
	if !e.Payload.Known() {
		return fmt.Errorf("event '%s' payload has %s (§5.3)", e.Name, e.Payload)
	}
	switch e.Kind {
	case Emit:
		if e.Result != 0 {
			return fmt.Errorf("event '%s' is an emit and has no result slot", e.Name)
		}
	case Returns, Yields:
		if e.Lane != wire.Reliable {
			return fmt.Errorf("event '%s' is a call and must be reliable", e.Name)
		}
		if e.From != Either {
			return fmt.Errorf("event '%s' is a call; calls are initiated by the client and declare no direction", e.Name)
		}
		if !e.Result.Known() {
			return fmt.Errorf("event '%s' %s slot has %s (§5.3)", e.Name, e.Kind, e.Result)
		}
	default:
		return fmt.Errorf("event '%s' has unknown kind %d", e.Name, e.Kind)
	}
	if e.Fallback != NoFallback && e.Lane != wire.Unreliable {
		return fmt.Errorf("event '%s' declares a fallback but is reliable (§7.6)", e.Name)
	}
	if e.Fallback > Newest {
		return fmt.Errorf("event '%s' has unknown fallback %d", e.Name, e.Fallback)
	}
	return nil
}

// Name is the contract's name.
func (c *Contract) Name() string { return c.name }

// Events returns the events in declaration order, with derived ids filled in.
func (c *Contract) Events() []Event { return append([]Event(nil), c.events...) }

// Event looks an event up by id.
func (c *Contract) Event(id uint32) (*Event, bool) { return c.index.get(id) }

// EventByName looks an event up by name.
func (c *Contract) EventByName(name string) (*Event, bool) {
	e, ok := c.byName[name]
	return e, ok
}

// Table is the handshake event table (§4.3).
func (c *Contract) Table() []wire.EventEntry { return append([]wire.EventEntry(nil), c.table...) }

// role is which side of a session this engine plays.
type role uint8

const (
	roleClient role = iota
	roleServer
)

func (r role) String() string {
	if r == roleServer {
		return "server"
	}
	return "client"
}

func (r role) peer() role { return 1 - r }

// sentBy reports whether side r may send e: an emit per its direction, a
// call only from the client.
func (e *Event) sentBy(r role) bool {
	if e.Kind != Emit {
		return r == roleClient
	}
	switch e.From {
	case FromClient:
		return r == roleClient
	case FromServer:
		return r == roleServer
	}
	return true
}

// slotName names a slot for protocol-error reasons (§5.3).
func (e *Event) slotName(result bool) string {
	if !result {
		if e.Kind == Emit {
			return "payload"
		}
		return "request"
	}
	return e.Kind.String()
}
