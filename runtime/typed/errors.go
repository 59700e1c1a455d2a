package typed

import (
	"strconv"
	"strings"

	"github.com/transport-io/tiogen/runtime/wire"
)

// fieldError is a validation failure while its field path is still being
// collected: each enclosing object or array adds its key or index as the
// error passes back out through it (innermost first), so the path costs
// nothing until something fails.
type fieldError struct {
	msg    string
	path   []string // innermost first: "body", ".replyTo" reversed on output
	syntax bool     // the payload is not JSON: nothing after it can be read
}

func (e *fieldError) in(elem string) { e.path = append(e.path, elem) }

// wireError renders the failure as the §6.4 message: "field 'a.b[2]' must
// be …", or "the payload must be …" when the slot itself is wrong.
func (e *fieldError) wireError() *wire.Error {
	var b strings.Builder
	if len(e.path) == 0 {
		b.WriteString("the payload ")
	} else {
		b.WriteString("field '")
		for i := len(e.path) - 1; i >= 0; i-- {
			p := e.path[i]
			if i == len(e.path)-1 && p[0] == '.' {
				p = p[1:]
			}
			b.WriteString(p)
		}
		b.WriteString("' ")
	}
	b.WriteString(e.msg)
	return &wire.Error{Code: wire.ValidationFailed, Message: b.String(), Remedy: wire.ValidationFailed.Remedy()}
}

func keyElem(key string) string { return "." + key }

func indexElem(i int) string { return "[" + strconv.Itoa(i) + "]" }

// shortValue quotes a peer-supplied value for an error message, cut so that a
// hostile payload cannot inflate the message.
func shortValue(b []byte) string {
	const limit = 40
	if len(b) > limit {
		return "'" + wire.CutReason(string(b), limit) + "…'"
	}
	return "'" + string(b) + "'"
}
