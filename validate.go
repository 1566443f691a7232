package cairn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cairnhq/cairn/internal/wire"
)

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

// Known reports whether k is a kind of the current format version.
func (k Kind) Known() bool {
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
	d := wire.NewDecoder(data)
	defer d.Free()
	if fe := s.decodeObject(d, v.Elem()); fe != nil {
		return nil, fe
	}
	return checked(v.Interface())
}

// decodeObject decodes the JSON object d reads into v, a value of s's type.
func (s *kindSpec) decodeObject(d *wire.Decoder, v reflect.Value) *wire.FieldError {
	if k := d.PeekKind(); k != '{' {
		fe := &wire.FieldError{Field: "data", Msg: "must be a JSON object", Offset: -1}
		if k == 0 {
			_, fe.Err = d.ReadToken()
		} else {
			fe.Msg += ", not " + wire.KindName(k)
		}
		return fe
	}
	if _, err := d.ReadToken(); err != nil {
		return wire.DecodeError(err)
	}
	var seen uint64
	for d.PeekKind() != '}' {
		name, off, err := d.Name()
		if err != nil {
			return wire.DecodeError(err)
		}
		i := s.field(name)
		if i < 0 {
			return &wire.FieldError{Field: string(name), Msg: "unknown field", Offset: off}
		}
		f := &s.fields[i]
		if f.required && !f.nullable && d.PeekKind() == 'n' {
			return &wire.FieldError{Field: f.name, Msg: "must not be null", Offset: off}
		}
		seen |= 1 << i
		if err := d.Value(v.Field(f.index).Addr().Interface()); err != nil {
			return wire.DecodeError(err)
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return wire.DecodeError(err)
	}
	if !d.End() {
		return &wire.FieldError{Field: "data", Msg: "has data after the object", Offset: d.InputOffset()}
	}
	for i, f := range s.fields {
		if f.required && seen&(1<<i) == 0 {
			return &wire.FieldError{Field: f.name, Msg: "is missing", Offset: -1}
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
			return &wire.FieldError{Field: fmt.Sprintf("parts.%d.type", i), Msg: "is missing", Offset: -1}
		}
	}
	return nil
}

func checkCalls(field string, calls []ToolCall) error {
	for i, c := range calls {
		switch {
		case c.ID == "":
			return &wire.FieldError{Field: fmt.Sprintf("%s.%d.id", field, i), Msg: "is missing", Offset: -1}
		case c.Name == "":
			return &wire.FieldError{Field: fmt.Sprintf("%s.%d.name", field, i), Msg: "is missing", Offset: -1}
		case len(c.Args) > 0 && !wire.ValidJSON(c.Args):
			return &wire.FieldError{Field: fmt.Sprintf("%s.%d.args", field, i), Msg: "is not valid JSON", Offset: -1}
		}
	}
	return nil
}

func (m *ModelResponse) check() error  { return checkCalls("tool_calls", m.ToolCalls) }
func (m *RunInterrupted) check() error { return checkCalls("pending", m.Pending) }

func (m *ToolStarted) check() error {
	if m.CallID == "" {
		return &wire.FieldError{Field: "call_id", Msg: "is empty", Offset: -1}
	}
	return nil
}

func (m *ToolResult) check() error {
	if m.CallID == "" {
		return &wire.FieldError{Field: "call_id", Msg: "is empty", Offset: -1}
	}
	return nil
}

func (m *RunFinished) check() error {
	switch m.Status {
	case StatusCompleted, StatusFailed, StatusMaxSteps:
		return nil
	}
	return &wire.FieldError{Field: "status", Msg: fmt.Sprintf("is %q; want completed, failed or max_steps", m.Status), Offset: -1}
}

func (m *Custom) check() error {
	if m.Type == "" {
		return &wire.FieldError{Field: "type", Msg: "is empty; give a namespaced type such as \"myapp.step\"", Offset: -1}
	}
	return nil
}

// ValidateEvents checks events as a store receives them, the first at seq
// first: the format version, dense seqs, a set time, a known kind, and data
// that decodes strictly (see Event.Decode: unknown, missing and mistyped
// fields, a name twice in any object, invalid UTF-8 are all refused). The
// error wraps ErrInvalidEvent. It returns the events with their data
// decoded and recorded in them, so that what gets them next (a store, a
// memory, a fold) does not decode them again: events itself when every
// event had been checked so, else a copy. It never writes to events.
func ValidateEvents(events []Event, first int64) ([]Event, error) {
	out := events
	for i := range events {
		if !events[i].checked() && len(out) > 0 && &out[0] == &events[0] {
			out = slices.Clone(events)
		}
		if _, err := validateEvent(&out[i], first+int64(i)); err != nil {
			return nil, err
		}
	}
	return out, nil
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

// validateEvent checks one event as ValidateEvents does, and returns its
// data decoded, recorded in e.
func validateEvent(e *Event, wantSeq int64) (any, error) {
	if err := checkEnvelope(*e, wantSeq); err != nil {
		return nil, err
	}
	v, err := e.value()
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

// The format version, limits and defaults.
const (
	// FormatVersion is the version of the event format this package
	// writes: the "v" of every event and the "version" of a memory
	// document.
	FormatVersion = 1

	DefaultMaxEventBytes   = 1 << 20   // Limits.MaxEventBytes when 0
	DefaultMaxAppendEvents = 1000      // Limits.MaxAppendEvents when 0
	DefaultListLimit       = 100       // the page size of List when ListOptions.Limit is 0
	DefaultNamespace       = "default" // the namespace of a store opened without one
	MaxIDLen               = 128       // the longest session ID or namespace accepted
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
