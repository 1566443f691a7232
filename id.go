package cairn

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/cairnhq/cairn/internal/wire"
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

func validateName(what, s string) error {
	if why := wire.NameProblem(s, MaxIDLen); why != "" {
		return &nameError{what, why}
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
