package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/sessions"
)

// apiError is an answer that is not a success: the HTTP status and the
// JSON body {"error": {"code", "message", "field", "last_seq", "hint"}}.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`               // stable, for programs: conflict, invalid_event, …
	Message string `json:"message"`            // for people
	Field   string `json:"field,omitempty"`    // the request field at fault: "events[0].data.text"
	LastSeq *int64 `json:"last_seq,omitempty"` // the session's last seq, with a conflict
	Hint    string `json:"hint,omitempty"`     // what to try
}

func (e *apiError) Error() string { return e.Message }

// badRequest is a 400 naming the field at fault.
func badRequest(field, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "bad_request", Field: field, Message: fmt.Sprintf(format, args...)}
}

// idHint is the hint of an answer to an invalid session ID.
const idHint = "a session ID is 1-128 characters of A-Z a-z 0-9 _ -"

// sentinelAnswers are the answers to cairn's sentinel errors, the first
// that matches taken; each answer's message is the error's.
var sentinelAnswers = []struct {
	err    error
	answer apiError
}{
	{cairn.ErrInvalidID, apiError{Status: http.StatusBadRequest, Code: "invalid_id", Field: "id", Hint: idHint}},
	{cairn.ErrNotFound, apiError{Status: http.StatusNotFound, Code: "not_found"}},
	{cairn.ErrExists, apiError{Status: http.StatusConflict, Code: "exists", Hint: "choose another ID, or continue the saved session"}},
	{cairn.ErrConflict, apiError{Status: http.StatusConflict, Code: "conflict", Hint: "read the events after your expected seq and decide again"}},
	{cairn.ErrTooLarge, apiError{Status: http.StatusRequestEntityTooLarge, Code: "too_large"}},
	{cairn.ErrInvalidEvent, apiError{Status: http.StatusBadRequest, Code: "invalid_event"}},
	{cairn.ErrLeaseHeld, apiError{Status: http.StatusConflict, Code: "lease_held", Hint: "another process runs this session; wait for its run to end"}},
	{cairn.ErrSealed, apiError{Status: http.StatusUnprocessableEntity, Code: "sealed", Hint: "start cairn serve with the session's encryption key configured"}},
	{sessions.ErrNoSearch, apiError{Status: http.StatusNotImplemented, Code: "no_search", Hint: "a store opened with encryption at rest keeps no searchable text"}},
	{cairn.ErrDamaged, apiError{Status: http.StatusInternalServerError, Code: "damaged", Hint: "`cairn doctor` and `cairn sessions repair` look at damaged sessions"}},
}

// toAPIError turns any error into the answer a client sees: the
// sentinels of cairn into their statuses, anything unknown into a 500.
func toAPIError(err error) *apiError {
	if ae, ok := errors.AsType[*apiError](err); ok {
		return ae
	}
	msg := err.Error()
	if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return &apiError{Status: http.StatusRequestEntityTooLarge, Code: "too_large",
			Message: fmt.Sprintf("the request body is larger than %d bytes", mbe.Limit)}
	}
	for _, s := range sentinelAnswers {
		if errors.Is(err, s.err) {
			ae := s.answer
			ae.Message = msg
			return &ae
		}
	}
	if cairn.IsUnavailable(err) {
		return &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: msg, Hint: "the store did not answer; try again"}
	}
	if ie, ok := errors.AsType[*sessions.ImportError](err); ok {
		return &apiError{Status: http.StatusBadRequest, Code: "invalid_document", Field: ie.Field, Message: msg}
	}
	if le, ok := errors.AsType[*cairn.MemoryLoadError](err); ok {
		f := le.Field
		if le.Index >= 0 {
			f = fmt.Sprintf("events[%d]", le.Index)
			if le.Field != "" {
				f += "." + le.Field
			}
		}
		return &apiError{Status: http.StatusBadRequest, Code: "invalid_document", Field: f, Message: msg}
	}
	return &apiError{Status: http.StatusInternalServerError, Code: "internal", Message: msg}
}

// writeJSON writes v as the JSON body of a response with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v) // the client went away: nothing to do
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="cairn"`)
	}
	writeJSON(w, e.Status, map[string]*apiError{"error": e})
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
