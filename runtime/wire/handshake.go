package wire

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// ProtocolVersion is the protocol major version this package speaks (§4.2).
const ProtocolVersion = 0

// Lane is an event's delivery guarantee as the contract declares it (§3).
type Lane string

// Lanes (§3, §4.3).
const (
	Reliable   Lane = "reliable"
	Unreliable Lane = "unreliable"
)

// EventEntry is one row of a handshake's event table (§4.3).
type EventEntry struct {
	Name string
	ID   uint32
	Lane Lane
}

// Handshake is the payload of the HANDSHAKE frame (§4.1).
type Handshake struct {
	V      int
	Feat   []string
	Events []EventEntry
}

// AppendHandshake appends h as the compact JSON of §4.1 to dst, e.g.
// {"v":0,"feat":[],"events":[["chat",836792189,"reliable"]]}. Events are
// written sorted by name in Unicode code point order (§4.3), which for
// UTF-8 is byte order; h is not modified. A nil Feat is written as [].
func AppendHandshake(dst []byte, h Handshake) []byte {
	events := slices.Clone(h.Events)
	slices.SortStableFunc(events, func(a, b EventEntry) int { return cmp.Compare(a.Name, b.Name) })
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, int64(h.V), 10)
	dst = append(dst, `,"feat":[`...)
	for i, f := range h.Feat {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSONString(dst, f)
	}
	dst = append(dst, `],"events":[`...)
	for i, e := range events {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '[')
		dst = AppendJSONString(dst, e.Name)
		dst = append(dst, ',')
		dst = strconv.AppendUint(dst, uint64(e.ID), 10)
		dst = append(dst, ',')
		dst = AppendJSONString(dst, string(e.Lane))
		dst = append(dst, ']')
	}
	return append(dst, "]}"...)
}

// DecodeHandshake decodes a HANDSHAKE payload strictly (§4.1, §4.3): a JSON
// object with exactly the fields v (an integer), feat (an array of strings)
// and events (an array of [name, id, lane] triples, the id a u32 other than
// 0, the lane "reliable" or "unreliable"), no field twice, no name or id
// twice in the table, nothing after the object. Anything else is a
// WT_PROTOCOL_ERROR naming what is wrong, the fields judged in that order
// and any other field after them. The table's order is not checked, since
// it carries no meaning. A v other than ProtocolVersion is a
// WT_PROTOCOL_VERSION_MISMATCH, judged before anything but the JSON itself:
// the rest of another version's handshake is that version's (§4.2).
func DecodeHandshake(b []byte) (Handshake, error) {
	var rawV, rawFeat, rawEvents []byte
	unknown := ""
	err := decodeObject(b, func(key string, raw []byte) error {
		switch key {
		case "v":
			rawV = raw
		case "feat":
			rawFeat = raw
		case "events":
			rawEvents = raw
		default:
			if unknown == "" {
				unknown = key
			}
		}
		return nil
	})
	var h Handshake
	if err == nil {
		h, err = readHandshake(rawV, rawFeat, rawEvents, unknown)
	}
	if err != nil {
		if CodeOf(err) == ProtocolVersionMismatch {
			return Handshake{}, err
		}
		return Handshake{}, Errorf(ProtocolError, "handshake: %v (§4.1)", err)
	}
	return h, nil
}

// readHandshake reads the raw fields of a handshake (nil where absent), v
// first; unknown is the first field it does not define, or "".
func readHandshake(rawV, rawFeat, rawEvents []byte, unknown string) (Handshake, error) {
	var h Handshake
	if rawV == nil {
		return h, errors.New("field 'v' is missing")
	}
	v, err := jsonInt(rawV)
	if err != nil {
		return h, fmt.Errorf("field 'v' %v", err)
	}
	if v != ProtocolVersion {
		return h, Errorf(ProtocolVersionMismatch, "version %d here, %d at the peer", ProtocolVersion, v)
	}
	h.V = v
	if rawFeat == nil {
		return h, errors.New("field 'feat' is missing")
	}
	items, err := jsonArray(rawFeat)
	if err != nil {
		return h, fmt.Errorf("field 'feat' %v", err)
	}
	h.Feat = make([]string, 0, len(items))
	for i, item := range items {
		s, err := jsonString(item)
		if err != nil {
			return h, fmt.Errorf("feat[%d] %v", i, err)
		}
		h.Feat = append(h.Feat, s)
	}
	if rawEvents == nil {
		return h, errors.New("field 'events' is missing")
	}
	if h.Events, err = decodeEvents(rawEvents); err != nil {
		return h, err
	}
	if unknown != "" {
		return h, fmt.Errorf("unknown field %s", quoteShort(unknown))
	}
	return h, nil
}

func decodeEvents(raw []byte) ([]EventEntry, error) {
	rows, err := jsonArray(raw)
	if err != nil {
		return nil, fmt.Errorf("field 'events' %v", err)
	}
	events := make([]EventEntry, 0, len(rows))
	names := make(map[string]bool, len(rows))
	ids := make(map[uint32]string, len(rows))
	for i, row := range rows {
		cells, err := jsonArray(row)
		if err != nil {
			return nil, fmt.Errorf("events[%d] %v", i, err)
		}
		if len(cells) != 3 {
			return nil, fmt.Errorf("events[%d] has %d elements, not [name, id, lane]", i, len(cells))
		}
		name, err := jsonString(cells[0])
		if err != nil {
			return nil, fmt.Errorf("events[%d] name %v", i, err)
		}
		id, err := jsonUint32(cells[1])
		if err != nil {
			return nil, fmt.Errorf("event %s id %v", quoteShort(name), err)
		}
		if id == 0 {
			return nil, fmt.Errorf("event %s has id 0, which means no event (§5.4)", quoteShort(name))
		}
		lane, err := jsonString(cells[2])
		if err != nil {
			return nil, fmt.Errorf("event %s lane %v", quoteShort(name), err)
		}
		if Lane(lane) != Reliable && Lane(lane) != Unreliable {
			return nil, fmt.Errorf("event %s has lane %s, not 'reliable' or 'unreliable'", quoteShort(name), quoteShort(lane))
		}
		if names[name] {
			return nil, fmt.Errorf("event %s appears twice", quoteShort(name))
		}
		if other, dup := ids[id]; dup {
			return nil, fmt.Errorf("events %s and %s share id %d", quoteShort(other), quoteShort(name), id)
		}
		names[name] = true
		ids[id] = name
		events = append(events, EventEntry{Name: name, ID: id, Lane: Lane(lane)})
	}
	return events, nil
}

// CompareTables compares this peer's event table with the peer's (§4.3).
// Same name with a different lane or id, or same id with a different name,
// refuses the session: it returns WT_CONTRACT_MISMATCH whose message is the
// close reason, naming the event in the spec's style, e.g. "event 'cursor'
// is 'unreliable' here and 'reliable' at the peer", cut to 123 bytes on a
// character boundary like every refusal reason (§3.3, §4). A name known to
// one side only is not a conflict. When there are several conflicts the one
// reported is the first in name order of the local table, lane before id.
//
// The engine calls CompareTables before NegotiateFeatures: the table is
// validated first and its conflicts are fatal; features never are (§4.4).
func CompareTables(local, peer []EventEntry) error {
	byName := make(map[string]EventEntry, len(peer))
	byID := make(map[uint32]EventEntry, len(peer))
	for _, p := range peer {
		byName[p.Name] = p
		byID[p.ID] = p
	}
	sorted := slices.Clone(local)
	slices.SortStableFunc(sorted, func(a, b EventEntry) int { return cmp.Compare(a.Name, b.Name) })
	for _, l := range sorted {
		var reason string
		if p, ok := byName[l.Name]; ok && p.Lane != l.Lane {
			reason = fmt.Sprintf("event '%s' is '%s' here and '%s' at the peer", l.Name, l.Lane, p.Lane)
		} else if ok && p.ID != l.ID {
			reason = fmt.Sprintf("event '%s' has id %d here and %d at the peer", l.Name, l.ID, p.ID)
		} else if p, ok := byID[l.ID]; ok && p.Name != l.Name {
			reason = fmt.Sprintf("id %d is event '%s' here and '%s' at the peer", l.ID, l.Name, p.Name)
		}
		if reason != "" {
			return &Error{
				Code:    ContractMismatch,
				Message: CutReason(reason, MaxWebSocketReason),
				Remedy:  ContractMismatch.Remedy(),
			}
		}
	}
	return nil
}

// NegotiateFeatures returns the feature tokens both peers support, sorted and
// without duplicates (§4.2). A token only one side knows is ignored, never an
// error. The result is empty, not nil, when nothing is shared.
func NegotiateFeatures(local, peer []string) []string {
	theirs := make(map[string]bool, len(peer))
	for _, f := range peer {
		theirs[f] = true
	}
	shared := []string{}
	for _, f := range local {
		if theirs[f] {
			shared = append(shared, f)
		}
	}
	slices.Sort(shared)
	return slices.Compact(shared)
}
