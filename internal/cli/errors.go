package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cairnhq/cairn"
)

// Exit statuses.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
	// ExitUnsaved: the run ended (whatever its outcome) with events the
	// store does not hold, because the store was unavailable: the
	// message names the cause and how many. Nothing that needed to be
	// stored first (the start of a side effect) ran unstored.
	ExitUnsaved = 3
	// ExitAwaiting: the run stopped waiting for a person to approve or
	// deny tool calls (status awaiting_approval); nothing failed.
	ExitAwaiting    = 4
	ExitInterrupted = 130
)

// Error is an error for a person: what went wrong, a hint of what to try,
// and the exit status.
type Error struct {
	Err  error
	Hint string
	Code int
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Fail returns a failure (exit 1) with a hint.
func Fail(err error, hint string) error { return &Error{Err: err, Hint: hint, Code: ExitFailure} }

// Usage returns a usage error (exit 2) with a hint.
func Usage(hint string, format string, args ...any) error {
	return &Error{Err: fmt.Errorf(format, args...), Hint: hint, Code: ExitUsage}
}

// IDRules says what a session ID may hold.
const IDRules = "session IDs are 1-128 characters of A-Z a-z 0-9 _ -"

// BadID returns the usage error (exit 2) of a session ID that breaks the
// rules (cairn.ValidateID's error).
func BadID(err error) error { return &Error{Err: err, Hint: IDRules, Code: ExitUsage} }

// Interrupted returns the error of a run stopped by Ctrl+C (exit 130).
func Interrupted(err error, hint string) error {
	return &Error{Err: err, Hint: hint, Code: ExitInterrupted}
}

// Describe returns the message, hint and exit status for any error.
func Describe(err error) (msg, hint string, code int) {
	var ce *Error
	if errors.As(err, &ce) {
		hint = ce.Hint
		code = ce.Code
	}
	if code == 0 {
		code = ExitFailure
	}
	if hint == "" {
		hint = "run the command with --help to see its usage"
	}
	return oncePrefixes(err.Error()), hint, code
}

// oncePrefixes drops a prefix that a wrapped error repeats right after
// itself ("open x: open x: no such file" says "open x: no such file"), so
// that a message says each thing once.
func oncePrefixes(msg string) string {
	parts := strings.Split(msg, ": ")
	out := parts[:1]
	for _, p := range parts[1:] {
		if p == out[len(out)-1] {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ": ")
}

// notFoundError is a session that is not where it was looked for: it says
// where, and wraps cairn.ErrNotFound without repeating its text.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }
func (e *notFoundError) Unwrap() error { return cairn.ErrNotFound }
