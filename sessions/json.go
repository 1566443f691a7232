package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// value is one JSON value of the input with its byte offset.
type value struct {
	raw json.RawMessage
	off int64
}

// object is a JSON object of the input: its keys in order and their values.
type object struct {
	value
	keys []string
	vals map[string]value
	koff map[string]int64 // offset of each key
}

// positioned is an error about a field at an offset; callers add the
// message index.
func positioned(field string, off int64, msg string, args ...any) *ImportError {
	return &ImportError{Index: -1, Field: field, Offset: off, Msg: fmt.Sprintf(msg, args...)}
}

// checkSyntax rejects malformed or truncated JSON and trailing data, with
// the offset where the input goes wrong.
func checkSyntax(data []byte) *ImportError {
	var raw json.RawMessage
	err := json.Unmarshal(data, &raw)
	if err == nil {
		return nil
	}
	ie := &ImportError{Index: -1, Offset: -1, Err: err}
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		// Offset counts the bytes read, the bad one included.
		ie.Offset = max(se.Offset-1, 0)
		if strings.Contains(se.Error(), "unexpected end of JSON input") {
			ie.Offset, ie.Msg = int64(len(data)), "truncated JSON: the input ends early"
		} else {
			ie.Msg = "malformed JSON: " + se.Error()
		}
	} else {
		ie.Msg = "malformed JSON: " + err.Error()
	}
	return ie
}

// checkStrict refuses what RFC 7493 refuses anywhere in a document whose
// syntax checkSyntax accepted: a name twice in one object (at any level:
// a message, its tool calls, their arguments, a variable's value,
// metadata that is otherwise ignored), invalid UTF-8, and escapes of lone
// UTF-16 surrogates. encoding/json would take the last of two names and
// turn bad bytes into U+FFFD without a word. The error names the message
// (list is the member that holds the messages, "" for a bare list), the
// field inside it and the byte offset.
func checkStrict(data []byte, list string) *ImportError {
	_, err := jsontext.NewDecoder(bytes.NewBuffer(data)).ReadValue()
	se, ok := errors.AsType[*jsontext.SyntacticError](err)
	if !ok {
		return nil
	}
	ie := &ImportError{Index: -1, Offset: se.ByteOffset, Err: err}
	toks := slices.Collect(se.JSONPointer.Tokens())
	inList := bytes.HasPrefix(bytes.TrimSpace(data), []byte("[")) // a bare list of messages
	if !inList && list != "" && len(toks) > 0 && toks[0] == list {
		inList, toks = true, toks[1:]
		if len(toks) == 0 {
			ie.Field = list
		}
	}
	if inList && len(toks) > 0 {
		if n, err := strconv.Atoi(toks[0]); err == nil {
			ie.Index, toks = n, toks[1:]
		}
	}
	for _, tok := range toks {
		if n, err := strconv.Atoi(tok); err == nil && ie.Field != "" {
			ie.Field = index(ie.Field, n)
		} else {
			ie.Field = join(ie.Field, tok)
		}
	}
	switch msg := se.Err.Error(); {
	case errors.Is(se.Err, jsontext.ErrDuplicateName):
		ie.Msg = "appears twice (a name may appear once in an object)"
	case strings.Contains(msg, "UTF-8"):
		ie.Msg = "is not valid UTF-8"
	case strings.Contains(msg, "escape sequence"):
		ie.Msg = "malformed JSON: " + strings.TrimPrefix(msg, "jsontext: ") + " (a lone UTF-16 surrogate is not valid Unicode)"
	default:
		ie.Msg = "malformed JSON: " + strings.TrimPrefix(msg, "jsontext: ")
	}
	return ie
}

// kindOf names the JSON type of raw, for messages.
func kindOf(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

func (v value) is(kind string) bool { return kindOf(v.raw) == kind }

// skipSep returns the offset of the next value after off, past white
// space, colons and commas.
func skipSep(data []byte, off int64) int64 {
	for off < int64(len(data)) && strings.IndexByte(" \t\r\n:,", data[off]) >= 0 {
		off++
	}
	return off
}

// asObject reads v as an object; field names v in an error. Duplicate keys
// are refused. v must be syntactically valid JSON.
func asObject(v value, field string) (*object, *ImportError) {
	if !v.is("an object") {
		return nil, positioned(field, v.off, "must be an object, not %s", kindOf(v.raw))
	}
	o := &object{value: v, vals: map[string]value{}, koff: map[string]int64{}}
	dec := json.NewDecoder(bytes.NewReader(v.raw))
	_, _ = dec.Token() // {
	for dec.More() {
		koff := skipSep(v.raw, dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return nil, positioned(field, v.off+koff, "malformed object: %v", err)
		}
		key, _ := tok.(string)
		voff := skipSep(v.raw, dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, positioned(join(field, key), v.off+voff, "malformed value: %v", err)
		}
		if _, dup := o.vals[key]; dup {
			return nil, positioned(join(field, key), v.off+koff, "appears twice")
		}
		o.keys = append(o.keys, key)
		o.vals[key] = value{raw: raw, off: v.off + voff}
		o.koff[key] = v.off + koff
	}
	return o, nil
}

// asArray reads v as an array of values.
func asArray(v value, field string) ([]value, *ImportError) {
	if !v.is("an array") {
		return nil, positioned(field, v.off, "must be an array, not %s", kindOf(v.raw))
	}
	var out []value
	dec := json.NewDecoder(bytes.NewReader(v.raw))
	_, _ = dec.Token() // [
	for dec.More() {
		off := skipSep(v.raw, dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, positioned(field, v.off+off, "malformed array: %v", err)
		}
		out = append(out, value{raw: raw, off: v.off + off})
	}
	return out, nil
}

// join builds a field path: "tool_calls[0]" + "id" = "tool_calls[0].id".
func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func index(parent string, i int) string { return fmt.Sprintf("%s[%d]", parent, i) }

// only refuses keys of o that are not in allowed.
func (o *object) only(field string, allowed ...string) *ImportError {
	for _, k := range o.keys {
		if !slices.Contains(allowed, k) {
			return positioned(join(field, k), o.koff[k], "unknown field (known: %s)", strings.Join(allowed, ", "))
		}
	}
	return nil
}

// str returns the string at key: absent and null give "" unless required.
func (o *object) str(field, key string, required bool) (string, *ImportError) {
	v, ok := o.vals[key]
	if !ok || v.is("null") {
		if required {
			return "", positioned(join(field, key), o.off, "is missing")
		}
		return "", nil
	}
	if !v.is("a string") {
		return "", positioned(join(field, key), v.off, "must be a string, not %s", kindOf(v.raw))
	}
	var s string
	if err := json.Unmarshal(v.raw, &s); err != nil {
		return "", positioned(join(field, key), v.off, "bad string: %v", err)
	}
	return s, nil
}

// boolean returns the boolean at key; absent and null are false.
func (o *object) boolean(field, key string) (bool, *ImportError) {
	v, ok := o.vals[key]
	if !ok || v.is("null") {
		return false, nil
	}
	if !v.is("a boolean") {
		return false, positioned(join(field, key), v.off, "must be a boolean, not %s", kindOf(v.raw))
	}
	return v.raw[0] == 't', nil
}

// writeIndented writes doc as indented JSON without HTML escaping.
func writeIndented(w io.Writer, doc any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}
