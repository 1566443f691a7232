package wire

import (
	"fmt"
	"unicode/utf8"
)

// NameProblem says what is wrong with a session ID or a namespace name (1
// to max characters of A-Z, a-z, 0-9, '_' and '-'), naming the first
// offending character, or returns "".
func NameProblem(s string, max int) string {
	if s == "" {
		return "it is empty"
	}
	if len(s) > max {
		return fmt.Sprintf("%q… is %d characters long, the limit is %d", s[:16], len(s), max)
	}
	pos := 0
	for _, r := range s {
		if r >= utf8.RuneSelf || !nameByte(byte(r)) {
			return fmt.Sprintf("%q has %q at position %d (allowed: A-Z a-z 0-9 _ -)", s, r, pos)
		}
		pos++
	}
	return ""
}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
