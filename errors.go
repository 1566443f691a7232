package cairn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
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

	// ErrUnavailable is wrapped by a store's error when the store could
	// not be reached or did not answer in time: a refused, reset or timed
	// out connection, a server shutting down or starting up, a lock held
	// past the store's patience. It is an outage, not a refusal: the same
	// call may succeed later, and a call that failed this way may or may
	// not have been applied. Test for it with IsUnavailable, which also
	// recognises the network errors of the standard library.
	ErrUnavailable = errors.New("store unavailable")

	// ErrDamaged is returned when a session's stored data is damaged: a log
	// shorter than what the store acknowledged, a record whose checksum
	// does not match, a file that does not parse. The store writes nothing
	// to a damaged session and never repairs it by overwriting; every
	// other session goes on as before, and List reports the damaged one
	// with StatusDamaged. The error names the session and what is wrong
	// (a store's *driver.DamagedError).
	ErrDamaged = errors.New("session data is damaged")

	// ErrSchemaTooNew is returned by a store's Open when its schema was
	// written by a newer version of cairn than this one (a migration this
	// version does not know). Nothing was changed; upgrade cairn to open
	// the store.
	ErrSchemaTooNew = errors.New("the store's schema is newer than this version of cairn")

	// ErrLeaseHeld is returned by Acquire while another holder's lease on
	// the session is live. The error is a *LeaseHeldError that names the
	// holder and when the lease expires.
	ErrLeaseHeld = errors.New("session is being run elsewhere")

	// ErrLeaseLost is returned by AppendFenced, Renew and Release when the
	// caller's lease is no longer the session's: it expired and another
	// holder acquired it, it was taken over, or it was released. Nothing
	// of the refused call was written; stop running the session.
	ErrLeaseLost = errors.New("lease lost: the session was taken over by another holder")

	// ErrPartialMemory is returned by DumpJSON and WriteJSON for a memory that
	// holds only the events after a snapshot (Restored.Memory).
	ErrPartialMemory = errors.New("the memory holds only the events after a snapshot: load the whole session from its store to write it as a document")

	// ErrSealed is returned for a session whose events are sealed (encrypted)
	// when no key is there to open them: a store opened without the key, or a
	// program that reads the backend directly. store/crypt's ErrEncrypted is
	// the same error.
	ErrSealed = errors.New("session is encrypted and no key is configured")

	// ErrSnapshotInvalid is wrapped by the errors of decodeSnapshot and by
	// Restored.Ignored: a snapshot that is damaged, of another format, or
	// stale (it does not match the session's events).
	ErrSnapshotInvalid = errors.New("snapshot not usable")
)

// IsUnavailable reports whether err is an outage of the store rather than
// an answer from it: an error wrapping ErrUnavailable, a network error, a
// connection refused, reset or aborted, or a deadline that passed before
// the store answered. Corruption, a full disk, a permission error and every
// contract error (ErrConflict, ErrNotFound, ErrTooLarge, …) are not
// outages.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	switch {
	case errors.Is(err, ErrUnavailable),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, os.ErrDeadlineExceeded),
		errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ETIMEDOUT),
		errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, syscall.EHOSTUNREACH):
		return true
	}
	if _, ok := errors.AsType[*net.OpError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*net.DNSError](err); ok {
		return true
	}
	return false
}

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
