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
	if json.Valid(b) {
		// Nor may a string escape a surrogate that pairs with none: it
		// names no character, and encoding/json would make it U+FFFD where
		// a JavaScript peer keeps it, so two runtimes would read two
		// strings.
		if loneSurrogateEscape(b) {
			return errors.New("a \\u escape of an unpaired surrogate (not Unicode text, §5.3)")
		}
		return walkObject(b, field)
	}
	// Invalid JSON: the decoder says where it breaks.
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

// walkObject is decodeObject for b that json.Valid accepted: one JSON
// value, so only its shape is left to check. It reads b in place, where
// the decoder would copy every member (a handshake is decoded by each side
// of every session, §4.1).
func walkObject(b []byte, field func(key string, raw []byte) error) error {
	i := skipSpace(b, 0)
	if b[i] != '{' {
		return errors.New("not a JSON object")
	}
	seen := make(map[string]bool, 4)
	i = skipSpace(b, i+1)
	for b[i] != '}' {
		end := skipValue(b, i)
		key, err := jsonString(b[i:end])
		if err != nil {
			return err // a valid object's keys are strings
		}
		if seen[key] {
			return fmt.Errorf("field %s appears twice", quoteShort(key))
		}
		seen[key] = true
		i = skipSpace(b, skipSpace(b, end)+1) // the colon
		end = skipValue(b, i)
		if err := field(key, b[i:end]); err != nil {
			return err
		}
		if i = skipSpace(b, end); b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return nil
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value that starts at
// b[i], in input that json.Valid accepted.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	// A number or a literal runs to the next delimiter.
	for i < len(b) && b[i] != ',' && b[i] != ']' && b[i] != '}' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// skipString returns the index just past the JSON string that starts at
// b[i], in input that json.Valid accepted.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
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
	if plainString(raw) {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("is not a valid string")
	}
	return s, nil
}

// plainString reports whether raw is a JSON string that decodes to its own
// bytes: no escape, no control character, valid UTF-8 (encoding/json would
// replace invalid UTF-8).
func plainString(raw []byte) bool {
	if len(raw) < 2 || raw[len(raw)-1] != '"' {
		return false
	}
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return utf8.Valid(inner)
}

// jsonArray splits a JSON array into its items, in place (they share raw's
// bytes).
func jsonArray(raw []byte) ([]json.RawMessage, error) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, fmt.Errorf("must be an array, not %s", quoteShort(string(raw)))
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("is not a valid array")
	}
	items := []json.RawMessage{}
	for i := skipSpace(raw, 1); raw[i] != ']'; {
		end := skipValue(raw, i)
		items = append(items, raw[i:end])
		if i = skipSpace(raw, end); raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return items, nil
}

// maxSafeInteger is the largest integer every JSON reader holds exactly
// (2^53-1, JavaScript's Number.MAX_SAFE_INTEGER).
const maxSafeInteger = 1<<53 - 1

// jsonInt accepts a JSON number written as an integer (no fraction, no
// exponent) of at most 2^53-1 either side of zero, which a JavaScript peer
// reads exactly too.
func jsonInt(raw []byte) (int, error) {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n > maxSafeInteger || n < -maxSafeInteger {
		return 0, fmt.Errorf("must be an integer, not %s", quoteShort(string(raw)))
	}
	return int(n), nil
}

// loneSurrogateEscape reports whether b, valid JSON, holds a \uXXXX escape
// of a surrogate (U+D800–U+DFFF) other than a high one followed at once by
// an escaped low one.
func loneSurrogateEscape(b []byte) bool {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			return false
		}
		i += j + 1 // the escaped byte: a backslash escapes only it
		u, ok := escapedUnit(b, i)
		switch {
		case !ok || u < 0xd800 || u > 0xdfff:
		case u >= 0xdc00:
			return true // a low surrogate first
		default:
			if low, ok := escapedUnit(b, i+6); !ok || low < 0xdc00 || low > 0xdfff {
				return true
			}
			i += 6 // the pair's low half
		}
		i++
	}
}

// escapedUnit reads the UTF-16 unit of the escape \uXXXX whose u is b[i],
// if b[i] is one.
func escapedUnit(b []byte, i int) (uint64, bool) {
	if i+4 >= len(b) || b[i] != 'u' || b[i-1] != '\\' {
		return 0, false
	}
	u, err := strconv.ParseUint(string(b[i+1:i+5]), 16, 16)
	return u, err == nil
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
