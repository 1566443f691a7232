package cairn

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every store translates its native errors into these, so
// callers test for them with errors.Is whatever the backend.
var (
	// ErrNotFound is returned when a session does not exist in the store:
	// it was never created, it was deleted, or its TTL has passed.
	ErrNotFound = errors.New("session not found")

	// ErrExists is returned by Create when the store already holds a
	// session with that ID. Continue the saved session instead.
	ErrExists = errors.New("session already exists")

	// ErrConflict is returned by Append when the session's last seq is not
	// the one the caller expected: another writer appended first. Nothing
	// of the rejected call was written; reload and decide again.
	ErrConflict = errors.New("session changed since it was read (seq conflict)")

	// ErrInvalidID is returned for a session ID or namespace that breaks
	// the rules: 1–128 characters of A-Z a-z 0-9 _ -.
	ErrInvalidID = errors.New("invalid session id")

	// ErrTooLarge is returned when an event, an append or an imported
	// document is larger than the configured limit. Nothing is written.
	ErrTooLarge = errors.New("too large")

	// ErrInvalidEvent is returned by Append for an event that is not well
	// formed: a wrong seq, an unknown kind, data that does not decode.
	ErrInvalidEvent = errors.New("invalid event")

	// ErrClosed is returned by a store used after Close.
	ErrClosed = errors.New("store is closed")
)

// MemoryLoadError says why a memory document or an event was rejected and
// where: the event index (or -1 for the document itself), the field, and the
// byte offset into the input where one is known (or -1).
type MemoryLoadError struct {
	Index  int    // event index, -1 when the error is not about one event
	Seq    int64  // the event's seq where known, else 0
	Field  string // the JSON field at fault, "" when not about one field
	Offset int64  // byte offset into the input, -1 when not known
	Msg    string // what is wrong, in words
	Err    error  // the underlying error, if any
}

func (e *MemoryLoadError) Error() string {
	s := "load memory: "
	if e.Index >= 0 {
		s += fmt.Sprintf("event %d", e.Index)
		if e.Seq > 0 {
			s += fmt.Sprintf(" (seq %d)", e.Seq)
		}
		s += ": "
	}
	if e.Field != "" {
		s += "field " + quoteField(e.Field) + ": "
	}
	s += e.Msg
	if e.Offset >= 0 {
		s += fmt.Sprintf(" (at byte %d)", e.Offset)
	}
	return s
}

// Unwrap returns the underlying error, such as ErrTooLarge or a JSON error.
func (e *MemoryLoadError) Unwrap() error { return e.Err }

func quoteField(f string) string { return `"` + f + `"` }
