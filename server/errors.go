package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/formats"
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

// toAPIError turns any error into the answer a client sees: the
// sentinels of cairn into their statuses, anything unknown into a 500.
func toAPIError(err error) *apiError {
	if ae, ok := errors.AsType[*apiError](err); ok {
		return ae
	}
	msg := err.Error()
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return &apiError{Status: http.StatusRequestEntityTooLarge, Code: "too_large",
			Message: fmt.Sprintf("the request body is larger than %d bytes", mbe.Limit)}
	case errors.Is(err, cairn.ErrInvalidID):
		return &apiError{Status: http.StatusBadRequest, Code: "invalid_id", Field: "id", Message: msg,
			Hint: "a session ID is 1-128 characters of A-Z a-z 0-9 _ -"}
	case errors.Is(err, cairn.ErrNotFound):
		return &apiError{Status: http.StatusNotFound, Code: "not_found", Message: msg}
	case errors.Is(err, cairn.ErrExists):
		return &apiError{Status: http.StatusConflict, Code: "exists", Message: msg, Hint: "choose another ID, or continue the saved session"}
	case errors.Is(err, cairn.ErrConflict):
		return &apiError{Status: http.StatusConflict, Code: "conflict", Message: msg, Hint: "read the events after your expected seq and decide again"}
	case errors.Is(err, cairn.ErrTooLarge):
		return &apiError{Status: http.StatusRequestEntityTooLarge, Code: "too_large", Message: msg}
	case errors.Is(err, cairn.ErrInvalidEvent):
		return &apiError{Status: http.StatusBadRequest, Code: "invalid_event", Message: msg}
	case errors.Is(err, cairn.ErrLeaseHeld):
		return &apiError{Status: http.StatusConflict, Code: "lease_held", Message: msg, Hint: "another process runs this session; wait for its run to end"}
	case errors.Is(err, cairn.ErrSealed):
		return &apiError{Status: http.StatusUnprocessableEntity, Code: "sealed", Message: msg, Hint: "start cairn serve with the session's encryption key configured"}
	case errors.Is(err, cairn.ErrDamaged):
		return &apiError{Status: http.StatusInternalServerError, Code: "damaged", Message: msg, Hint: "`cairn doctor` and `cairn sessions repair` look at damaged sessions"}
	case cairn.IsUnavailable(err):
		return &apiError{Status: http.StatusServiceUnavailable, Code: "unavailable", Message: msg, Hint: "the store did not answer; try again"}
	}
	if ie, ok := errors.AsType[*formats.ImportError](err); ok {
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
