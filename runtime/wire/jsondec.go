package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// The strict JSON readers below back the JSON control payloads (§4.1, §6.4,
// §6.5, §6.6). encoding/json alone is too lenient for them: it accepts null
// for a string or an array, keeps the last of two equal keys and reads 1.5
// into nothing when asked for an integer.

// decodeObject reads b as exactly one JSON object and calls field once per
// member, in order, with the member's raw value. A key given twice, a
// non-object or anything after the object is an error.
func decodeObject(b []byte, field func(key string, raw []byte) error) error {
	// encoding/json would replace invalid UTF-8 with U+FFFD; control
	// frames are UTF-8 JSON (§5.3), so it is refused instead.
	if !utf8.Valid(b) {
		return errors.New("not UTF-8 (codec 0x01 is UTF-8 JSON, §5.3)")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("not valid JSON: %v", syntaxReason(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("not a JSON object")
	}
	seen := make(map[string]bool, 4)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("not valid JSON: %v", syntaxReason(err))
		}
		key := tok.(string) // inside an object, Token yields keys as strings
		if seen[key] {
			return fmt.Errorf("field %s appears twice", quoteShort(key))
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("not valid JSON: %v", syntaxReason(err))
		}
		if err := field(key, bytes.TrimSpace(raw)); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return fmt.Errorf("not valid JSON: %v", syntaxReason(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON object")
	}
	return nil
}

func syntaxReason(err error) string {
	if errors.Is(err, io.EOF) {
		return "unexpected end"
	}
	return err.Error()
}

func jsonString(raw []byte) (string, error) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", fmt.Errorf("must be a string, not %s", quoteShort(string(raw)))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("is not a valid string")
	}
	return s, nil
}

func jsonArray(raw []byte) ([]json.RawMessage, error) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, fmt.Errorf("must be an array, not %s", quoteShort(string(raw)))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("is not a valid array")
	}
	for i := range items {
		items[i] = bytes.TrimSpace(items[i])
	}
	return items, nil
}

// jsonInt accepts a JSON number written as an integer (no fraction, no
// exponent) that fits an int.
func jsonInt(raw []byte) (int, error) {
	n, err := strconv.ParseInt(string(raw), 10, strconv.IntSize)
	if err != nil {
		return 0, fmt.Errorf("must be an integer, not %s", quoteShort(string(raw)))
	}
	return int(n), nil
}

// jsonUint32 accepts a JSON integer from 0 to 2^32-1.
func jsonUint32(raw []byte) (uint32, error) {
	n, err := strconv.ParseUint(string(raw), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("must be an integer from 0 to 4294967295, not %s", quoteShort(string(raw)))
	}
	return uint32(n), nil
}

// quoteShort quotes a peer-supplied value for an error message, cut so a
// hostile payload cannot inflate a close reason.
func quoteShort(s string) string {
	const limit = 40
	if len(s) > limit {
		return "'" + CutReason(s, limit) + "…'"
	}
	return "'" + s + "'"
}
