package cli

import (
	"errors"
	"fmt"
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
	ExitUnsaved     = 3
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
	return err.Error(), hint, code
}
