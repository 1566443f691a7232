package crypt

import (
	"fmt"

	"github.com/cairnhq/cairn"
)

// SealedError names the session whose events are sealed, and the first
// sealed event. It wraps cairn.ErrSealed.
type SealedError struct {
	Session string
	Seq     int64
	Kind    cairn.Kind
	DataKey string // the ID of the data key that sealed it (not secret)
}

// Error names the session and the sealed event, and what to do.
func (e *SealedError) Error() string {
	return fmt.Sprintf("session %s is encrypted (seq %d, %s, is sealed by data key %s): open the store with its key (store/crypt) to read or continue it",
		e.Session, e.Seq, e.Kind, e.DataKey)
}

// Unwrap returns cairn.ErrSealed.
func (e *SealedError) Unwrap() error { return cairn.ErrSealed }
