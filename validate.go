package cairn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// fieldError is a problem with one field of an event, before the loader or
// the store adds where the event is.
type fieldError struct {
	field  string
	msg    string
	offset int64 // within the data, -1 if unknown
	err    error
}

func (e *fieldError) Error() string {
	if e.field == "" {
		return e.msg
	}
	return "field " + quoteField(e.field) + ": " + e.msg
}

func (e *fieldError) Unwrap() error { return e.err }

// kindSpec knows the data type of one kind and how each of its fields is
// read.
type kindSpec struct {
	typ    reflect.Type
	fields []specField // in the type's field order; at most 64
}

// specField is one field of a kind's data type.
type specField struct {
	name     string // the JSON name
	index    int    // the struct field's index
	required bool   // tagged without omitempty: must be present
	nullable bool   // null is allowed even when required (slices, maps, pointers, raw JSON)
	text     bool   // a plain string: check leaves a long one quoted
}

var kindSpecs = map[Kind]kindSpec{
	KindRunStarted:      specOf(RunStarted{}),
	KindMemoryReset:     specOf(MemoryReset{}),
	KindMessageSystem:   specOf(MessageSystem{}),
	KindMessageUser:     specOf(MessageUser{}),
	KindModelResponse:   specOf(ModelResponse{}),
	KindToolStarted:     specOf(ToolStarted{}),
	KindToolResult:      specOf(ToolResult{}),
	KindStateSet:        specOf(StateSet{}),
	KindRunInterrupted:  specOf(RunInterrupted{}),
	KindApprovalDecided: specOf(ApprovalDecided{}),
	KindRunFinished:     specOf(RunFinished{}),
	KindMemoryCompacted: specOf(MemoryCompacted{}),
	KindCustom:          specOf(Custom{}),
}

// KnownKind reports whether k is a kind of the current format version.
func KnownKind(k Kind) bool {
	_, ok := kindSpecs[k]
	return ok
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

func specOf(v any) kindSpec {
	t := reflect.TypeOf(v)
	s := kindSpec{typ: t}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		sf := specField{name: name, index: i, required: !strings.Contains(opts, "omitempty")}
		switch f.Type.Kind() {
		case reflect.Slice, reflect.Map, reflect.Pointer:
			sf.nullable = true
		}
		if f.Type == rawMessageType {
			sf.nullable = true
		}
		sf.text = f.Type == reflect.TypeFor[string]()
		s.fields = append(s.fields, sf)
	}
	return s
}

func (s *kindSpec) field(name []byte) int {
	for i := range s.fields {
		if s.fields[i].name == string(name) {
			return i
		}
	}
	return -1
}

// decode decodes data strictly into a new value of the spec's type, in one
// pass: data must be one JSON object whose members are the type's fields,
// each at most once, each required field present and not null (unless null
// is allowed for its type), with values of the right types; unknown
// members, duplicate names and invalid UTF-8 are refused at every level.
func (s kindSpec) decode(data []byte) (any, error) {
	v := reflect.New(s.typ)
	d := newDecoder(data)
	defer d.free()
	if fe := s.decodeObject(d, v.Elem(), false); fe != nil {
		return nil, fe
	}
	return checked(v.Interface())
}

// longText is the length from which check leaves a string quoted: the
// JSON of a string of at least this many bytes, quotes and escapes
// included.
const longText = 128

// textMark stands, in the value check decodes, for a long string it did
// not unquote: like the string, it is not empty.
const textMark = "(long text)"

// check reports whether decode would accept data, and if not, with the
// same error, doing less work: the JSON of a long plain string (the text
// of a response, the output of a tool) is checked as the decoder reads it
// but not unquoted nor copied, and the value's own checks see textMark in
// its place. Whatever check refuses, decode decides: the error is decode's,
// and a check that textMark fails where the string would pass (none so
// far: they ask only whether a string is empty, or compare short ones)
// costs a second decode, not a wrong answer.
func (s kindSpec) check(data []byte) error {
	v := reflect.New(s.typ)
	d := newDecoder(data)
	fe := s.decodeObject(d, v.Elem(), true)
	d.free()
	if fe == nil {
		if _, err := checked(v.Interface()); err == nil {
			return nil
		}
	}
	_, err := s.decode(data)
	return err
}

// decodeObject decodes the JSON object d reads into v, a value of s's type.
// With lazy set, a plain string field whose JSON is longText bytes or more
// is read and checked but set to textMark (see check).
func (s *kindSpec) decodeObject(d *decoder, v reflect.Value, lazy bool) *fieldError {
	if k := d.PeekKind(); k != '{' {
		fe := &fieldError{field: "data", msg: "must be a JSON object", offset: -1}
		if k == 0 {
			_, fe.err = d.ReadToken()
		} else {
			fe.msg += ", not " + kindName(k)
		}
		return fe
	}
	if _, err := d.ReadToken(); err != nil {
		return decodeError(err)
	}
	var seen uint64
	for d.PeekKind() != '}' {
		name, off, err := d.name()
		if err != nil {
			return decodeError(err)
		}
		i := s.field(name)
		if i < 0 {
			return &fieldError{field: string(name), msg: "unknown field", offset: off}
		}
		f := &s.fields[i]
		if f.required && !f.nullable && d.PeekKind() == 'n' {
			return &fieldError{field: f.name, msg: "must not be null", offset: off}
		}
		seen |= 1 << i
		if lazy && f.text && d.PeekKind() == '"' {
			// The decoder checks a string as it reads it (UTF-8, escapes):
			// unquoting it, as decoding does, cannot fail after that.
			raw, err := d.ReadValue()
			if err != nil {
				return decodeError(err)
			}
			if len(raw) >= longText {
				v.Field(f.index).SetString(textMark)
				continue
			}
			var buf [longText]byte
			str, err := jsontext.AppendUnquote(buf[:0], raw)
			if err != nil {
				return decodeError(err)
			}
			v.Field(f.index).SetString(string(str))
			continue
		}
		if err := d.value(v.Field(f.index).Addr().Interface()); err != nil {
			return decodeError(err)
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return decodeError(err)
	}
	if !d.end() {
		return &fieldError{field: "data", msg: "has data after the object", offset: d.InputOffset()}
	}
	for i, f := range s.fields {
		if f.required && seen&(1<<i) == 0 {
			return &fieldError{field: f.name, msg: "is missing", offset: -1}
		}
	}
	return nil
}

// checked runs the value's own checks, if it has any.
func checked(v any) (any, error) {
	if c, ok := v.(interface{ check() error }); ok {
		if err := c.check(); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// keyOffset finds the byte offset of a top-level key in an object, or -1.
func keyOffset(data []byte, key string) int64 {
	q, _ := json.Marshal(key)
	if i := bytes.Index(data, q); i >= 0 {
		return int64(i)
	}
	return -1
}

func (m *MessageUser) check() error {
	for i, p := range m.Parts {
		if p.Type == "" {
			return &fieldError{field: fmt.Sprintf("parts.%d.type", i), msg: "is missing", offset: -1}
		}
	}
	return nil
}

func checkCalls(field string, calls []ToolCall) error {
	for i, c := range calls {
		switch {
		case c.ID == "":
			return &fieldError{field: fmt.Sprintf("%s.%d.id", field, i), msg: "is missing", offset: -1}
		case c.Name == "":
			return &fieldError{field: fmt.Sprintf("%s.%d.name", field, i), msg: "is missing", offset: -1}
		case len(c.Args) > 0 && !validJSON(c.Args):
			return &fieldError{field: fmt.Sprintf("%s.%d.args", field, i), msg: "is not valid JSON", offset: -1}
		}
	}
	return nil
}

func (m *ModelResponse) check() error  { return checkCalls("tool_calls", m.ToolCalls) }
func (m *RunInterrupted) check() error { return checkCalls("pending", m.Pending) }

func (m *ToolStarted) check() error {
	if m.CallID == "" {
		return &fieldError{field: "call_id", msg: "is empty", offset: -1}
	}
	return nil
}

func (m *ToolResult) check() error {
	if m.CallID == "" {
		return &fieldError{field: "call_id", msg: "is empty", offset: -1}
	}
	return nil
}

func (m *RunFinished) check() error {
	switch m.Status {
	case RunCompleted, RunFailed, RunMaxSteps:
		return nil
	}
	return &fieldError{field: "status", msg: fmt.Sprintf("is %q; want completed, failed or max_steps", m.Status), offset: -1}
}

func (m *Custom) check() error {
	if m.Type == "" {
		return &fieldError{field: "type", msg: "is empty; give a namespaced type such as \"myapp.step\"", offset: -1}
	}
	return nil
}

// ValidateEvent checks one event as a store receives it: the format
// version, the expected seq, a set time, a known kind and data that decodes
// strictly (see Event.Decode: unknown, missing and mistyped fields, a name
// twice in any object, invalid UTF-8 are all refused). The error wraps
// ErrInvalidEvent.
func ValidateEvent(e Event, wantSeq int64) error {
	if err := checkEnvelope(e, wantSeq); err != nil {
		return err
	}
	spec, ok := kindSpecs[e.Kind]
	if !ok {
		return fmt.Errorf("%w: seq %d (%s): unknown event kind %q", ErrInvalidEvent, e.Seq, e.Kind, e.Kind)
	}
	if err := spec.check(e.Data); err != nil {
		return fmt.Errorf("%w: seq %d (%s): %v", ErrInvalidEvent, e.Seq, e.Kind, err)
	}
	return nil
}

// checkEnvelope checks what ValidateEvent checks before the data.
func checkEnvelope(e Event, wantSeq int64) error {
	switch {
	case e.V != FormatVersion:
		return fmt.Errorf("%w: seq %d: version %d, want %d", ErrInvalidEvent, e.Seq, e.V, FormatVersion)
	case e.Seq != wantSeq:
		return fmt.Errorf("%w: seq %d where %d comes next (seqs are dense, from 1)", ErrInvalidEvent, e.Seq, wantSeq)
	case e.At.IsZero():
		return fmt.Errorf("%w: seq %d: time \"at\" is not set", ErrInvalidEvent, e.Seq)
	case !validUTF8(e.Kind, e.Run):
		return fmt.Errorf("%w: seq %d: the kind or run ID is not valid UTF-8", ErrInvalidEvent, e.Seq)
	}
	return nil
}

// validateEvent is ValidateEvent that returns the decoded data.
func validateEvent(e Event, wantSeq int64) (any, error) {
	if err := checkEnvelope(e, wantSeq); err != nil {
		return nil, err
	}
	v, err := e.Decode()
	if err != nil {
		return nil, fmt.Errorf("%w: seq %d (%s): %v", ErrInvalidEvent, e.Seq, e.Kind, err)
	}
	return v, nil
}

func validUTF8(k Kind, run string) bool { return utf8.ValidString(string(k)) && utf8.ValidString(run) }

// Limits bound what a store or loader accepts.
type Limits struct {
	MaxEventBytes   int // largest event envelope; default DefaultMaxEventBytes
	MaxAppendEvents int // most events in one Append; default DefaultMaxAppendEvents
}

// Default limits.
const (
	DefaultMaxEventBytes   = 1 << 20
	DefaultMaxAppendEvents = 1000
)

// WithDefaults returns l with zero fields set to the defaults.
func (l Limits) WithDefaults() Limits { return l.withDefaults() }

func (l Limits) withDefaults() Limits {
	if l.MaxEventBytes <= 0 {
		l.MaxEventBytes = DefaultMaxEventBytes
	}
	if l.MaxAppendEvents <= 0 {
		l.MaxAppendEvents = DefaultMaxAppendEvents
	}
	return l
}
