package cairn

import (
	"fmt"
	"unicode/utf8"

	"github.com/google/uuid"
)

// NewID returns a random, time-ordered session ID (a UUIDv7 in its
// canonical text form), so that IDs made later sort later.
func NewID() string {
	id, err := uuid.NewV7()
	if err != nil {
		// NewV7 fails only when the system's random source does.
		panic(fmt.Sprintf("cairn: new id: %v", err))
	}
	return id.String()
}

// ValidateID reports whether id is a valid session ID: 1 to 128 characters
// of A-Z, a-z, 0-9, '_' and '-'. The error wraps ErrInvalidID and names the
// first offending character, so "../x" or "a/b" are refused before they
// reach any store.
func ValidateID(id string) error {
	return validateName("session id", id)
}

// ValidateNamespace applies the session ID rules to a namespace name.
func ValidateNamespace(ns string) error {
	return validateName("namespace", ns)
}

func validateName(what, s string) error {
	if s == "" {
		return &nameError{what, "it is empty"}
	}
	if len(s) > MaxIDLen {
		return &nameError{what, fmt.Sprintf("%q… is %d characters long, the limit is %d", s[:16], len(s), MaxIDLen)}
	}
	pos := 0
	for _, r := range s {
		if r >= utf8.RuneSelf || !idByte(byte(r)) {
			return &nameError{what, fmt.Sprintf("%q has %q at position %d (allowed: A-Z a-z 0-9 _ -)", s, r, pos)}
		}
		pos++
	}
	return nil
}

// nameError is a session ID or a namespace that breaks the rules of
// ValidateID. It wraps ErrInvalidID, and says which of the two it is.
type nameError struct {
	what string // "session id" or "namespace"
	why  string
}

func (e *nameError) Error() string { return "invalid " + e.what + ": " + e.why }

func (e *nameError) Unwrap() error { return ErrInvalidID }

func idByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
