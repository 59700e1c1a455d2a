package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// AppendCredit appends the CALL_CREDIT payload {"credit":n} (§6.6).
func AppendCredit(dst []byte, n int) []byte {
	dst = append(dst, `{"credit":`...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '}')
}

// ParseCredit reads a CALL_CREDIT payload (§6.6). ok is false when the frame
// must be ignored: credit missing, not a number, not a whole number, or not
// positive; and when the payload is not a JSON object at all. A grant above
// math.MaxInt32 is read as math.MaxInt32. Other fields are ignored.
func ParseCredit(b []byte) (n int, ok bool) {
	// Fast path for the payload every conforming initiator sends.
	if rest, found := bytes.CutPrefix(b, []byte(`{"credit":`)); found && len(rest) > 1 && rest[len(rest)-1] == '}' {
		if v, err := strconv.ParseUint(string(rest[:len(rest)-1]), 10, 31); err == nil && rest[0] != '0' {
			return int(v), true
		}
	}
	var credit json.Number
	err := decodeObject(b, func(key string, raw []byte) error {
		if key == "credit" {
			credit = json.Number(raw)
		}
		return nil
	})
	if err != nil || credit == "" || (credit[0] != '-' && (credit[0] < '0' || credit[0] > '9')) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(credit), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	if !(f > 0) || f != math.Trunc(f) {
		return 0, false
	}
	if f >= math.MaxInt32 {
		return math.MaxInt32, true
	}
	return int(f), true
}

// CallError is the payload of a CALL_ERROR frame (§6.4).
type CallError struct {
	Code    Code
	Message string
}

// AppendCallError appends {"code":"WT_…","message":"…"} (§6.4).
func AppendCallError(dst []byte, e CallError) []byte {
	dst = append(dst, `{"code":`...)
	dst = AppendJSONString(dst, string(e.Code))
	dst = append(dst, `,"message":`...)
	dst = AppendJSONString(dst, e.Message)
	return append(dst, '}')
}

// ParseCallError reads a CALL_ERROR payload (§6.4): a JSON object whose code
// is a WT_-prefixed string and whose message is a string. Codes this package
// does not know are kept as they are (opaque). Other fields are ignored, so
// a later version may add some. A payload that is not of that shape is
// WT_PROTOCOL_ERROR.
func ParseCallError(b []byte) (CallError, error) {
	var e CallError
	var seenCode, seenMessage bool
	err := decodeObject(b, func(key string, raw []byte) error {
		switch key {
		case "code":
			s, err := jsonString(raw)
			if err != nil {
				return fmt.Errorf("field 'code' %v", err)
			}
			if !strings.HasPrefix(s, "WT_") {
				return fmt.Errorf("code %s is not WT_-prefixed", quoteShort(s))
			}
			e.Code, seenCode = Code(s), true
		case "message":
			s, err := jsonString(raw)
			if err != nil {
				return fmt.Errorf("field 'message' %v", err)
			}
			e.Message, seenMessage = s, true
		}
		return nil
	})
	if err == nil && !seenCode {
		err = fmt.Errorf("field 'code' is missing")
	}
	if err == nil && !seenMessage {
		err = fmt.Errorf("field 'message' is missing")
	}
	if err != nil {
		return CallError{}, Errorf(ProtocolError, "CALL_ERROR payload: %v (§6.4)", err)
	}
	return e, nil
}

// AppendRoom appends the JOIN and LEAVE payload {"room":"…"} (§6.5).
func AppendRoom(dst []byte, room string) []byte {
	dst = append(dst, `{"room":`...)
	dst = AppendJSONString(dst, room)
	return append(dst, '}')
}

// ParseRoom reads a JOIN or LEAVE payload (§6.5): a JSON object whose room is
// a non-empty string. Other fields are ignored. Anything else is
// WT_PROTOCOL_ERROR.
func ParseRoom(b []byte) (string, error) {
	var room string
	var seen bool
	err := decodeObject(b, func(key string, raw []byte) error {
		if key != "room" {
			return nil
		}
		s, err := jsonString(raw)
		if err != nil {
			return fmt.Errorf("field 'room' %v", err)
		}
		room, seen = s, true
		return nil
	})
	if err == nil && (!seen || room == "") {
		err = fmt.Errorf("field 'room' is missing or empty")
	}
	if err != nil {
		return "", Errorf(ProtocolError, "room payload: %v (§6.5)", err)
	}
	return room, nil
}
