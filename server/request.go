package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/wire"
)

// pathID returns the {id} of the request's path, validated with the
// library's rules before it reaches any store.
func pathID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if err := validID("id", id); err != nil {
		return "", err
	}
	return id, nil
}

// pathBody returns the {id} of the request's path (pathID) and decodes
// the request's JSON body into v (decodeBody).
func pathBody(r *http.Request, v any, optional bool) (string, error) {
	id, err := pathID(r)
	if err != nil {
		return "", err
	}
	if err := decodeBody(r, v, optional); err != nil {
		return "", err
	}
	return id, nil
}

// pathForm returns the {id} of the request's path (pathID) and parses the
// request's form.
func pathForm(r *http.Request) (string, error) {
	id, err := pathID(r)
	if err != nil {
		return "", err
	}
	if err := r.ParseForm(); err != nil {
		return "", formError(err)
	}
	return id, nil
}

// validID checks an ID given in a request field.
func validID(field, id string) error {
	if err := cairn.ValidateID(id); err != nil {
		return &apiError{Status: http.StatusBadRequest, Code: "invalid_id", Field: field, Message: err.Error(), Hint: idHint}
	}
	return nil
}

// decodeBody decodes a JSON request body strictly into v (decodeJSON):
// keys given twice, unknown fields, trailing data and mistyped values are
// 400s naming the field. An empty body leaves v as it is when optional.
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
//
// It is the one decoder of the JSON the requests carry, and it is the
// library's own (internal/wire), which reads every event, envelope and
// imported document: a key given twice in one object, at any depth, is an
// error naming it, where encoding/json would take the last of the two; so
// are invalid UTF-8, a member v lacks (at any level), a value of the wrong
// type and anything after the value. Every error is a 400 naming the
// field.
func decodeJSON(data []byte, v any, prefix string) error {
	d := wire.NewDecoder(data)
	defer d.Free()
	if err := d.Value(v); err != nil {
		return jsonError(err, prefix)
	}
	if !d.End() {
		return badRequest(prefix, "trailing data after the JSON value")
	}
	return nil
}

// jsonError turns an error of decodeJSON into a 400 naming the field.
func jsonError(err error, prefix string) error {
	if se, ok := errors.AsType[*json.SemanticError](err); ok {
		if sy, ok := errors.AsType[*jsontext.SyntacticError](se.Err); ok {
			return syntaxError(sy, prefix)
		}
		f := join(prefix, pointerField(se.JSONPointer, false))
		switch {
		case errors.Is(se.Err, json.ErrUnknownName):
			return badRequest(f, "unknown field %q", f)
		case se.GoType != nil && se.JSONKind != 0:
			what := "the body"
			if f != "" {
				what = fmt.Sprintf("field %q", f)
			}
			msg := fmt.Sprintf("%s has %s where %s belongs", what, kindName(se.JSONKind), jsonType(se.GoType))
			switch {
			case errors.Is(se.Err, strconv.ErrSyntax) && se.JSONValue != nil:
				msg += fmt.Sprintf(": %s is not one", se.JSONValue)
			case errors.Is(se.Err, strconv.ErrRange) && se.JSONValue != nil:
				msg += fmt.Sprintf(": %s is out of range", se.JSONValue)
			case se.Err != nil:
				msg += ": " + wire.ErrText(se.Err)
			}
			return badRequest(f, "%s", msg)
		case errors.Is(se.Err, io.ErrUnexpectedEOF):
			return badRequest(prefix, "truncated JSON: the body ends early")
		case se.Err != nil:
			return badRequest(f, "field %q: %s", f, wire.ErrText(se.Err))
		}
		return badRequest(f, "%s", wire.ErrText(err))
	}
	if sy, ok := errors.AsType[*jsontext.SyntacticError](err); ok {
		return syntaxError(sy, prefix)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return badRequest(prefix, "truncated JSON: the body ends early")
	}
	return badRequest(prefix, "%s", wire.ErrText(err))
}

// syntaxError is the 400 of a fault in the JSON text itself.
func syntaxError(sy *jsontext.SyntacticError, prefix string) error {
	dup := errors.Is(sy.Err, jsontext.ErrDuplicateName)
	f := join(prefix, pointerField(sy.JSONPointer, dup))
	switch {
	case dup:
		return badRequest(f, "duplicate key %q: a key may appear once in an object", f)
	case errors.Is(sy.Err, io.ErrUnexpectedEOF):
		return badRequest(prefix, "truncated JSON: the body ends early")
	case sy.Err != nil && strings.Contains(sy.Err.Error(), "UTF-8"):
		return badRequest(f, "field %q is not valid UTF-8", f)
	}
	return badRequest(f, "malformed JSON at byte %d: %s", sy.ByteOffset, wire.ErrText(sy.Err))
}

// pointerField turns a JSON pointer ("/events/0/kind") into the field path
// of the server's errors ("events[0].kind"). A token of digits is taken
// for an array index, but for the last one of a key's pointer (lastIsKey).
func pointerField(p jsontext.Pointer, lastIsKey bool) string {
	toks := slices.Collect(p.Tokens())
	var b strings.Builder
	for i, tok := range toks {
		if _, err := strconv.Atoi(tok); err == nil && b.Len() > 0 && !(lastIsKey && i == len(toks)-1) {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

// kindName names a JSON kind for messages: "a JSON string", "null".
func kindName(k jsontext.Kind) string {
	if k == 'n' {
		return "null"
	}
	return "a JSON " + wire.KindName(k)
}

// jsonType names the JSON a Go type takes, with its article: "a number",
// "an object".
func jsonType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a " + t.String()
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
	n, given, err := queryWhole(q, name)
	if err != nil || !given {
		return def, err
	}
	if n < lo || n > hi {
		return 0, badRequest(name, "%s=%d is outside %d..%d", name, n, lo, hi)
	}
	return n, nil
}

// parseSeqAt reads the at parameter: a seq from 0 to last, last when absent.
func parseSeqAt(q url.Values, name string, last int64) (int64, error) {
	n, given, err := queryWhole(q, name)
	if err != nil || !given {
		return last, err
	}
	if n < 0 || n > last {
		return 0, badRequest(name, "%s=%d is outside the session's seqs 0..%d", name, n, last)
	}
	return n, nil
}

// queryWhole reads a whole-number query parameter; given is false when it
// is absent.
func queryWhole(q url.Values, name string) (n int64, given bool, err error) {
	s := q.Get(name)
	if s == "" {
		return 0, false, nil
	}
	n, err = strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false, badRequest(name, "%s=%q is not a whole number", name, s)
	}
	return n, true, nil
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
