package wire

import (
	"errors"
	"fmt"
	"strings"
)

// Error is the one error type an application sees from transport-io: a WT_*
// code, what happened, what to do about it, and the cause when there is one.
// Use errors.Is(err, &Error{Code: SessionClosed}) to test for a code and
// CodeOf(err) to read it.
type Error struct {
	Code    Code
	Message string // what happened
	Remedy  string // what to do; Errorf fills it from Code.Remedy
	Err     error  // the cause, if any
}

// Errorf returns an *Error with the code's remedy and a formatted message.
// An *Error among the arguments formatted with %w becomes Err, as with
// fmt.Errorf.
func Errorf(code Code, format string, args ...any) *Error {
	wrapped := fmt.Errorf(format, args...)
	e := &Error{Code: code, Message: wrapped.Error(), Remedy: code.Remedy()}
	e.Err = errors.Unwrap(wrapped)
	return e
}

// Error renders "WT_CODE: message (remedy)". URL query strings are cut out
// of the text, because they carry credentials (a browser can send a token
// only in the query string, §4.3).
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if msg != "" {
		b.WriteString(": ")
		b.WriteString(msg)
	}
	if e.Remedy != "" {
		b.WriteString(" (")
		b.WriteString(e.Remedy)
		b.WriteString(")")
	}
	return RedactQueries(b.String())
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code, so that
// errors.Is matches on the code alone.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// CodeOf returns the code of the first *Error in err's chain, or "" when
// there is none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// RedactQueries removes every query string from s: the query of a URL
// ("scheme://...?q") or of a path ("/p?q", as a request line quotes it)
// becomes "?…". A token ends at white space or a quote; a '?' elsewhere ("a
// question?", "must match ?x") is kept. Error texts and every log line of
// the runtime go through it, since query strings carry tokens (§4.3).
func RedactQueries(s string) string {
	const delims = " \t\r\n\"'`"
	if !strings.Contains(s, "?") {
		return s
	}
	var b strings.Builder
	for {
		q := strings.IndexByte(s, '?')
		if q < 0 {
			break
		}
		start := strings.LastIndexAny(s[:q], delims) + 1
		end := q + 1 + strings.IndexAny(s[q+1:]+" ", delims)
		token := s[start:q]
		if end > q+1 && (strings.HasPrefix(token, "/") || strings.Contains(token, "://")) {
			b.WriteString(s[:q])
			b.WriteString("?…")
		} else {
			b.WriteString(s[:end])
		}
		s = s[end:]
	}
	b.WriteString(s)
	return b.String()
}
