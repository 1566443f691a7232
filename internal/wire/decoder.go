// Package wire is cairn's JSON codec: the strict decoder every event, envelope
// and memory document is read with, the errors it gives, and the envelope
// form every store writes. Package cairn and package driver both use it;
// nothing outside this module can.
package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// strictOptions are the options of every typed decode: unknown members are
// refused at every level. Duplicate names and invalid UTF-8 are refused by
// the library's defaults.
var strictOptions = json.RejectUnknownMembers(true)

// Unmarshal decodes data into v, refusing duplicate names and invalid
// UTF-8 but ignoring members that v lacks. It is for reading a field or two
// of data that was checked before (listing summaries).
func Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// ValidJSON reports whether b is one valid JSON value: no duplicate names,
// valid UTF-8.
func ValidJSON(b []byte) bool { return jsontext.Value(b).IsValid() }

// Decoder reads JSON from a byte slice in place (the jsontext.Decoder of a
// bytes.Buffer parses the buffer itself, so values it returns alias the
// input). Decoders are pooled: get one with NewDecoder, give it back with
// Free.
//
// The decoders of this file are the one place the core decodes JSON.
// Everything that reads JSON here (an event's data, an envelope, a memory
// document) goes through them, built on github.com/go-json-experiment/json
// (the code of encoding/json/v2), which decodes in one pass and is strict
// where encoding/json is lenient:
//
//   - a name given twice in one object is an error, at every level (in
//     encoding/json the last one wins);
//   - invalid UTF-8, and escapes of lone UTF-16 surrogates, are errors (in
//     encoding/json they silently become U+FFFD);
//   - the typed decoders refuse members their Go type lacks, at every
//     level, and match member names exactly (encoding/json folds case).
//
// Encoding stays with encoding/json: the bytes cairn writes do not change.
type Decoder struct {
	jsontext.Decoder
	buf bytes.Buffer
}

var decoders = sync.Pool{New: func() any { return new(Decoder) }}

// emptyReader is what a pooled decoder reads, so that it holds no input.
var emptyReader = bytes.NewReader(nil)

// NewDecoder returns a pooled strict decoder of data.
func NewDecoder(data []byte) *Decoder {
	d := decoders.Get().(*Decoder)
	d.buf = *bytes.NewBuffer(data)
	d.Reset(&d.buf, strictOptions)
	return d
}

// NewOuterDecoder is NewDecoder for a document whose parts are each decoded
// strictly on their own afterwards: it checks the syntax but leaves
// duplicate names and invalid UTF-8 to those decodes, which know better
// where the fault is (the event, its seq, the field).
func NewOuterDecoder(data []byte) *Decoder {
	d := decoders.Get().(*Decoder)
	d.buf = *bytes.NewBuffer(data)
	d.Reset(&d.buf, strictOptions, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	return d
}

// Free gives the decoder back to the pool.
func (d *Decoder) Free() {
	d.buf = bytes.Buffer{}
	d.Reset(emptyReader)
	decoders.Put(d)
}

// End reports whether nothing but white space is left after the value read.
func (d *Decoder) End() bool {
	_, err := d.ReadToken()
	return err == io.EOF
}

// Name reads an object member's name, unescaped when it has escapes; the
// bytes alias the input when it has none. It returns the name's offset.
func (d *Decoder) Name() ([]byte, int64, error) {
	v, err := d.ReadValue()
	if err != nil {
		return nil, d.InputOffset(), err
	}
	off := d.InputOffset() - int64(len(v))
	if bytes.IndexByte(v, '\\') < 0 {
		return v[1 : len(v)-1], off, nil
	}
	n, err := jsontext.AppendUnquote(nil, v)
	return n, off, err
}

// KindName names a JSON kind for messages: "a string", "null", ….
func KindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "boolean"
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "value"
}

// pointerField turns a JSON pointer ("/tool_calls/0/id") into the dotted
// field path cairn's errors use ("tool_calls.0.id").
func pointerField(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

// DecodeError turns an error of the decoder into a FieldError: the field
// at fault (relative to the value decoded), what is wrong in words, and
// the byte offset into the input.
func DecodeError(err error) *FieldError {
	fe := &FieldError{Offset: -1, Err: err}
	if se, ok := errors.AsType[*json.SemanticError](err); ok {
		fe.Field, fe.Offset = pointerField(se.JSONPointer), se.ByteOffset
		switch {
		case errors.Is(se.Err, json.ErrUnknownName):
			fe.Msg = "unknown field"
		case se.GoType != nil && se.JSONKind != 0:
			fe.Msg = fmt.Sprintf("has a %s where a %s belongs", KindName(se.JSONKind), se.GoType)
			if se.Err != nil {
				fe.Msg += ": " + ErrText(se.Err)
			}
		case se.Err != nil:
			fe.Msg = ErrText(se.Err)
		default:
			fe.Msg = ErrText(err)
		}
		// An error from the syntax below the semantics says more.
		if sy, ok := errors.AsType[*jsontext.SyntacticError](se.Err); ok {
			return syntaxError(sy, fe)
		}
		return fe
	}
	if sy, ok := errors.AsType[*jsontext.SyntacticError](err); ok {
		return syntaxError(sy, fe)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		fe.Msg = "truncated JSON: the input ends early"
		return fe
	}
	fe.Msg = ErrText(err)
	return fe
}

func syntaxError(sy *jsontext.SyntacticError, fe *FieldError) *FieldError {
	fe.Field, fe.Offset, fe.Err = pointerField(sy.JSONPointer), sy.ByteOffset, sy
	switch {
	case errors.Is(sy.Err, jsontext.ErrDuplicateName):
		fe.Msg = "appears twice (a name may appear once in an object)"
	case errors.Is(sy.Err, io.ErrUnexpectedEOF):
		fe.Msg = "truncated JSON: the input ends early"
	case sy.Err != nil && strings.Contains(sy.Err.Error(), "UTF-8"):
		fe.Msg = "is not valid UTF-8"
	case sy.Err != nil && strings.Contains(sy.Err.Error(), "escape sequence"):
		fe.Msg = "malformed JSON: " + ErrText(sy.Err) + " (a lone UTF-16 surrogate is not valid Unicode)"
	default:
		fe.Msg = "malformed JSON: " + ErrText(sy.Err)
	}
	return fe
}

// ErrText is an error's text without the library's "jsontext: " or
// "json: " prefix.
func ErrText(err error) string {
	if err == nil {
		return "invalid"
	}
	s := err.Error()
	for _, p := range []string{"jsontext: ", "json: "} {
		s = strings.TrimPrefix(s, p)
	}
	return s
}

// Value decodes the next value of d into v strictly (v is a pointer).
func (d *Decoder) Value(v any) error { return json.UnmarshalDecode(&d.Decoder, v) }

// ValueKind is the kind of the JSON value raw.
func ValueKind(raw []byte) jsontext.Kind { return jsontext.Value(raw).Kind() }

// FieldError is a problem with one field of a JSON value, before the
// loader or the store adds where the value is.
type FieldError struct {
	Field  string // the field at fault, dotted ("tool_calls.0.id"); empty for the whole value
	Msg    string // what is wrong, in words
	Offset int64  // within the value, -1 if unknown
	Err    error  // the decoder's error, if any
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return "field " + QuoteField(e.Field) + ": " + e.Msg
}

func (e *FieldError) Unwrap() error { return e.Err }

// QuoteField quotes a field's name for a message.
func QuoteField(f string) string { return `"` + f + `"` }
