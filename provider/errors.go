package provider

import (
	"fmt"
	"net/http"
	"strings"
)

// StatusError is an HTTP error status that ended a model call, after
// retries, or an error event in a stream that had begun. Every adapter
// returns it (wrapped) so callers check any provider's failures with one
// type. It unwraps to the SDK's own error.
type StatusError struct {
	StatusCode int    // the HTTP status
	Type       string // the provider's error code or type, e.g. "rate_limit_error"
	Message    string // the provider's message, if any
	RequestID  string // the provider's request ID, if any
	InStream   bool   // the error came as an event in a stream that had begun
	Attempts   int    // requests made, retries included
	Err        error  // the SDK's error
}

// Error reports the status, the provider's message and the attempts made.
func (e *StatusError) Error() string {
	var b strings.Builder
	if e.InStream {
		b.WriteString("error event in the stream")
	} else {
		fmt.Fprintf(&b, "HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	}
	if e.Type != "" {
		fmt.Fprintf(&b, " (%s)", e.Type)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request-id %s]", e.RequestID)
	}
	return b.String()
}

// Unwrap returns the SDK's error.
func (e *StatusError) Unwrap() error { return e.Err }
