package ir

import (
	"bytes"

	"github.com/transport-io/tiogen/runtime/wire"
)

// Table is the contract's event table in handshake order: ascending by
// name by Unicode code point (§4.3), which is the order of c.Events.
func (c *Contract) Table() []wire.EventEntry {
	t := make([]wire.EventEntry, len(c.Events))
	for i, ev := range c.Events {
		t[i] = wire.EventEntry{Name: ev.WireName, ID: ev.ID, Lane: ev.Lane}
	}
	return t
}

// TableJSON is the handshake's events value as compact JSON, exactly as
// frame 0 carries it: it is cut from the handshake the runtime encodes, so
// there is one encoder of the table.
func (c *Contract) TableJSON() []byte {
	h := wire.AppendHandshake(nil, wire.Handshake{V: wire.ProtocolVersion, Events: c.Table()})
	_, events, ok := bytes.Cut(h, []byte(`"events":`))
	if !ok || !bytes.HasSuffix(events, []byte("}")) {
		panic("ir: unexpected handshake encoding: " + string(h))
	}
	return events[:len(events)-1]
}
