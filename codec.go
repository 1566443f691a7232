package cairn

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

// jsonUnmarshal decodes data into v, refusing duplicate names and invalid
// UTF-8 but ignoring members that v lacks. It is for reading a field or two
// of data that was checked before (listing summaries).
func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// validJSON reports whether b is one valid JSON value: no duplicate names,
// valid UTF-8.
func validJSON(b []byte) bool { return jsontext.Value(b).IsValid() }

// decoder reads JSON from a byte slice in place (the jsontext.Decoder of a
// bytes.Buffer parses the buffer itself, so values it returns alias the
// input). Decoders are pooled: get one with newDecoder, give it back with
// free.
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
type decoder struct {
	jsontext.Decoder
	buf bytes.Buffer
}

var decoders = sync.Pool{New: func() any { return new(decoder) }}

// emptyReader is what a pooled decoder reads, so that it holds no input.
var emptyReader = bytes.NewReader(nil)

func newDecoder(data []byte) *decoder {
	d := decoders.Get().(*decoder)
	d.buf = *bytes.NewBuffer(data)
	d.Reset(&d.buf, strictOptions)
	return d
}

// newOuterDecoder is newDecoder for a document whose parts are each decoded
// strictly on their own afterwards: it checks the syntax but leaves
// duplicate names and invalid UTF-8 to those decodes, which know better
// where the fault is (the event, its seq, the field).
func newOuterDecoder(data []byte) *decoder {
	d := decoders.Get().(*decoder)
	d.buf = *bytes.NewBuffer(data)
	d.Reset(&d.buf, strictOptions, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	return d
}

func (d *decoder) free() {
	d.buf = bytes.Buffer{}
	d.Reset(emptyReader)
	decoders.Put(d)
}

// end reports whether nothing but white space is left after the value read.
func (d *decoder) end() bool {
	_, err := d.ReadToken()
	return err == io.EOF
}

// name reads an object member's name, unescaped when it has escapes; the
// bytes alias the input when it has none. It returns the name's offset.
func (d *decoder) name() ([]byte, int64, error) {
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

// kindName names a JSON kind for messages: "a string", "null", ….
func kindName(k jsontext.Kind) string {
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

// decodeError turns an error of the decoder into a fieldError: the field
// at fault (relative to the value decoded), what is wrong in words, and
// the byte offset into the input.
func decodeError(err error) *fieldError {
	fe := &fieldError{offset: -1, err: err}
	if se, ok := errors.AsType[*json.SemanticError](err); ok {
		fe.field, fe.offset = pointerField(se.JSONPointer), se.ByteOffset
		switch {
		case errors.Is(se.Err, json.ErrUnknownName):
			fe.msg = "unknown field"
		case se.GoType != nil && se.JSONKind != 0:
			fe.msg = fmt.Sprintf("has a %s where a %s belongs", kindName(se.JSONKind), se.GoType)
			if se.Err != nil {
				fe.msg += ": " + errText(se.Err)
			}
		case se.Err != nil:
			fe.msg = errText(se.Err)
		default:
			fe.msg = errText(err)
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
		fe.msg = "truncated JSON: the input ends early"
		return fe
	}
	fe.msg = errText(err)
	return fe
}

func syntaxError(sy *jsontext.SyntacticError, fe *fieldError) *fieldError {
	fe.field, fe.offset, fe.err = pointerField(sy.JSONPointer), sy.ByteOffset, sy
	switch {
	case errors.Is(sy.Err, jsontext.ErrDuplicateName):
		fe.msg = "appears twice (a name may appear once in an object)"
	case errors.Is(sy.Err, io.ErrUnexpectedEOF):
		fe.msg = "truncated JSON: the input ends early"
	case sy.Err != nil && strings.Contains(sy.Err.Error(), "UTF-8"):
		fe.msg = "is not valid UTF-8"
	case sy.Err != nil && strings.Contains(sy.Err.Error(), "escape sequence"):
		fe.msg = "malformed JSON: " + errText(sy.Err) + " (a lone UTF-16 surrogate is not valid Unicode)"
	default:
		fe.msg = "malformed JSON: " + errText(sy.Err)
	}
	return fe
}

// errText is an error's text without the library's "jsontext: " or
// "json: " prefix.
func errText(err error) string {
	if err == nil {
		return "invalid"
	}
	s := err.Error()
	for _, p := range []string{"jsontext: ", "json: "} {
		s = strings.TrimPrefix(s, p)
	}
	return s
}

// value decodes the next value of d into v strictly (v is a pointer).
func (d *decoder) value(v any) error { return json.UnmarshalDecode(&d.Decoder, v) }

// valueKind is the kind of the JSON value raw.
func valueKind(raw []byte) jsontext.Kind { return jsontext.Value(raw).Kind() }
