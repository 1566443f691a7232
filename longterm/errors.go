package longterm

import (
	"errors"
	"fmt"
)

// Sentinel errors of long-term memory. Every store returns these (and
// cairn.ErrClosed, cairn.ErrTooLarge, cairn.ErrUnavailable,
// cairn.ErrSchemaTooNew as a session store does), so callers test for them
// with errors.Is whatever the backend.
var (
	// ErrNotFound is returned by Get and Delete when no live item has
	// that namespace and key: it was never put, was deleted or expired.
	ErrNotFound = errors.New("memory item not found")

	// ErrConflict is returned by Put and Delete when the item is not at
	// the version the caller expected (PutOptions.IfVersion, Delete's
	// ifVersion): another writer changed, created or deleted it first.
	// Nothing of the refused call was written; read the item again and
	// decide again.
	ErrConflict = errors.New("memory item changed since it was read (version conflict)")

	// ErrInvalid is wrapped by the *InvalidError of every argument that
	// breaks the rules: a namespace, key, prefix, label, value, vector,
	// cursor or option.
	ErrInvalid = errors.New("invalid memory argument")

	// ErrEncrypted is returned by Open for a store whose long-term memory
	// was encrypted (store/crypt keeps its keys in it, under
	// KeysNamespace): read without the key, its items would be sealed
	// tokens and its keys items. Open it with crypt.OpenLongTerm.
	ErrEncrypted = errors.New("long-term memory is encrypted and no key is configured")
)

// KeysNamespace is the namespace under which an encrypting store
// (crypt.OpenLongTerm) keeps its keys in the store it wraps.
const KeysNamespace = "_cairn"

// InvalidError is an argument that breaks the rules: which argument (What:
// "namespace", "key", "labels", "value", "cursor", "query", …), the value
// where it helps, and why. It wraps ErrInvalid.
type InvalidError struct {
	What string
	Why  string
}

// Error names the argument and what is wrong with it.
func (e *InvalidError) Error() string { return "invalid " + e.What + ": " + e.Why }

// Unwrap returns ErrInvalid.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// Rules says what namespaces, keys and labels may hold, for a hint beside
// an error.
const Rules = "namespaces are slash paths of segments of A-Z a-z 0-9 _ - (users/ada); keys are 1-256 characters of A-Z a-z 0-9 _ - . : @ + =; labels are NAME=VALUE"

// Rule says what a valid argument of e's kind looks like, for a hint
// beside the error: Rules for a namespace, prefix, key or labels, what a
// search needs for its query or vector, and "" where the error says it
// all.
func (e *InvalidError) Rule() string {
	switch e.What {
	case "namespace", "prefix", "key", "labels":
		return Rules
	case "query", "vector":
		return "a search needs words to look for (or a vector, or a store with an Embedder for a vector search)"
	}
	return ""
}

func invalid(what, format string, args ...any) error {
	return &InvalidError{What: what, Why: fmt.Sprintf(format, args...)}
}
