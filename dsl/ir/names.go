package ir

import "strings"

// Identifier conversion. A contract name like user_name becomes UserName in
// Go and userName in TypeScript; both generators call these functions, and
// the checker rejects two names that would convert to the same identifier.
//
// The rules, in order:
//  1. Split the name into words at underscores, where a lower-case letter or
//     digit is followed by an upper-case letter (userName: user|Name), and
//     before the last capital of a run of capitals that a lower-case letter
//     follows (HTTPServer: HTTP|Server). Empty words are dropped.
//  2. GoName upper-cases the first letter of every word and keeps the rest as
//     written, so initialisms stay as the contract spells them: userID gives
//     UserID, user_id gives UserId. There is no initialism table.
//  3. TSName lower-cases the whole first word and upper-cases the first
//     letter of every later word: HTTPServer gives httpServer, user_name
//     gives userName.
// A name whose first word starts with a digit (_1st) converts to something
// that is not an identifier; the checker rejects such names.

// Words splits an identifier into the words GoName and TSName join.
func Words(name string) []string {
	var words []string
	for _, part := range strings.Split(name, "_") {
		start := 0
		for i := 1; i < len(part); i++ {
			prev, cur := part[i-1], part[i]
			next := byte(0)
			if i+1 < len(part) {
				next = part[i+1]
			}
			if isUpper(cur) && (isLower(prev) || isDigit(prev) || (isUpper(prev) && isLower(next))) {
				words = append(words, part[start:i])
				start = i
			}
		}
		if start < len(part) {
			words = append(words, part[start:])
		}
	}
	return words
}

// GoName is name as an exported Go identifier (UpperCamel).
func GoName(name string) string {
	var b strings.Builder
	for _, w := range Words(name) {
		b.WriteString(strings.ToUpper(w[:1]))
		b.WriteString(w[1:])
	}
	return b.String()
}

// TSName is name as a TypeScript property or method name (lowerCamel).
func TSName(name string) string {
	var b strings.Builder
	for i, w := range Words(name) {
		if i == 0 {
			b.WriteString(strings.ToLower(w))
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]))
		b.WriteString(w[1:])
	}
	return b.String()
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
