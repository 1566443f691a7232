package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/cairnhq/cairn"
)

// pathID returns the {id} of the request's path, validated with the
// library's rules before it reaches any store.
func pathID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if err := cairn.ValidateID(id); err != nil {
		return "", &apiError{Status: http.StatusBadRequest, Code: "invalid_id", Field: "id", Message: err.Error(),
			Hint: "a session ID is 1-128 characters of A-Z a-z 0-9 _ -"}
	}
	return id, nil
}

// validID checks an ID given in a request field.
func validID(field, id string) error {
	if err := cairn.ValidateID(id); err != nil {
		return &apiError{Status: http.StatusBadRequest, Code: "invalid_id", Field: field, Message: err.Error(),
			Hint: "a session ID is 1-128 characters of A-Z a-z 0-9 _ -"}
	}
	return nil
}

// decodeBody decodes a JSON request body strictly into v: unknown fields,
// trailing data and mistyped values are 400s naming the field. An empty
// body leaves v as it is when optional.
func decodeBody(r *http.Request, v any, optional bool) error {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return err // a MaxBytesError: 413
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if optional {
			return nil
		}
		return badRequest("", "the request needs a JSON body")
	}
	return decodeJSON(data, v, "")
}

// decodeJSON decodes data strictly into v; prefix names where data sits in
// the request ("events[2]") for the field of an error.
func decodeJSON(data []byte, v any, prefix string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, prefix)
	}
	if dec.More() {
		return badRequest(prefix, "trailing data after the JSON value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest(prefix, "trailing data after the JSON value")
	}
	return nil
}

// jsonError turns an encoding/json error into a 400 naming the field.
func jsonError(err error, prefix string) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return badRequest(prefix, "malformed JSON at byte %d: %v", se.Offset, se)
	case errors.As(err, &te):
		f := join(prefix, te.Field)
		return badRequest(f, "field %q has a JSON %s where a %s belongs", f, te.Value, jsonType(te.Type.String()))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return badRequest(prefix, "truncated JSON: the body ends early")
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		f := join(prefix, strings.Trim(name, `"`))
		return badRequest(f, "unknown field %q", f)
	}
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return err
	}
	return badRequest(prefix, "%s", strings.TrimPrefix(msg, "json: "))
}

func jsonType(goType string) string {
	switch {
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"), strings.HasPrefix(goType, "float"):
		return "number"
	case goType == "string":
		return "string"
	case goType == "bool":
		return "boolean"
	case strings.HasPrefix(goType, "[]"):
		return "array"
	case strings.HasPrefix(goType, "map["), strings.HasPrefix(goType, "struct"):
		return "object"
	}
	return goType
}

func join(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	}
	return prefix + "." + field
}

// queryInt reads a whole-number query parameter within [lo, hi]; def when
// it is absent.
func queryInt(q url.Values, name string, def, lo, hi int64) (int64, error) {
	s := q.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, badRequest(name, "%s=%q is not a whole number", name, s)
	}
	if n < lo || n > hi {
		return 0, badRequest(name, "%s=%d is outside %d..%d", name, n, lo, hi)
	}
	return n, nil
}

// parseSeqAt reads the at parameter: a seq from 0 to last, last when absent.
func parseSeqAt(q url.Values, name string, last int64) (int64, error) {
	s := q.Get(name)
	if s == "" {
		return last, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, badRequest(name, "%s=%q is not a whole number", name, s)
	}
	if n < 0 || n > last {
		return 0, badRequest(name, "%s=%d is outside the session's seqs 0..%d", name, n, last)
	}
	return n, nil
}

// fieldOf splits a cairn data decoding error, `field "parts[0].type": msg`,
// into the field and the message.
func fieldOf(msg string) (field, rest string) {
	rest, ok := strings.CutPrefix(msg, `field "`)
	if !ok {
		return "", msg
	}
	field, rest, ok = strings.Cut(rest, `": `)
	if !ok {
		return "", msg
	}
	return field, rest
}
