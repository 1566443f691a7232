package cairn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
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

// kindSpec knows the data type of one kind and which of its fields are
// required (tagged without omitempty).
type kindSpec struct {
	typ      reflect.Type
	fields   map[string]bool // JSON name -> required
	nullable map[string]bool // JSON name -> null is allowed (slices, maps, raw JSON)
	order    []string        // the JSON names in field order

	// fast is a one-pass decoder for the kind, or nil; see decode.
	fast func(data []byte) (any, bool)
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
	s := kindSpec{typ: t, fields: map[string]bool{}, nullable: map[string]bool{}}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		s.fields[name] = !strings.Contains(opts, "omitempty")
		s.order = append(s.order, name)
		switch f.Type.Kind() {
		case reflect.Slice, reflect.Map, reflect.Pointer:
			s.nullable[name] = true
		}
		if f.Type == rawMessageType {
			s.nullable[name] = true
		}
	}
	s.fast = fastDecoders[t]
	return s
}

// decode decodes data strictly into a new value of the spec's type: data
// must be one JSON object whose keys are the type's fields, each required
// field present and not null (unless null is allowed for its type), with
// values of the right types, unknown fields refused at every level.
//
// The commonest kinds are decoded by a hand-written one-pass decoder that
// accepts only input it decodes exactly as encoding/json would; anything
// else (escaped keys, nulls, large numbers, any error) goes the general
// way, which finds the keys with a light scan that decodes nothing and
// then decodes the value once.
func (s kindSpec) decode(data []byte) (any, error) {
	if s.fast != nil {
		if v, ok := s.fast(data); ok {
			return checked(v)
		}
	}
	keys, ok := objectKeys(data)
	if !ok {
		return nil, &fieldError{field: "data", msg: "must be a JSON object", offset: -1, err: syntaxErr(data)}
	}
	if fe := s.checkKeys(keys, data); fe != nil {
		if err := syntaxErr(data); err != nil {
			return nil, &fieldError{field: "data", msg: "must be a JSON object", offset: -1, err: err}
		}
		return nil, fe
	}
	v := reflect.New(s.typ)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v.Interface()); err != nil {
		if _, ok := errors.AsType[*json.SyntaxError](err); ok || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, &fieldError{field: "data", msg: "must be a JSON object", offset: -1, err: err}
		}
		return nil, jsonFieldError(err)
	}
	return checked(v.Interface())
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

// syntaxErr returns the error encoding/json finds in data, or nil when
// data is valid JSON.
func syntaxErr(data []byte) error {
	if json.Valid(data) {
		return nil
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	return errors.New("invalid JSON")
}

// checkKeys checks the top-level keys of an object against the spec:
// unknown fields, nulls where null is not allowed, missing required fields.
// With a key given twice, the last one counts, as in encoding/json.
func (s kindSpec) checkKeys(keys []objectKey, data []byte) *fieldError {
	for i, k := range keys {
		req, known := s.fields[k.name]
		if !known {
			return &fieldError{field: k.name, msg: "unknown field", offset: keyOffset(data, k.name)}
		}
		if k.null && req && !s.nullable[k.name] && !slices.ContainsFunc(keys[i+1:], func(o objectKey) bool { return o.name == k.name }) {
			return &fieldError{field: k.name, msg: "must not be null", offset: keyOffset(data, k.name)}
		}
	}
	for _, name := range s.order {
		if s.fields[name] && !slices.ContainsFunc(keys, func(k objectKey) bool { return k.name == name }) {
			return &fieldError{field: name, msg: "is missing", offset: -1}
		}
	}
	return nil
}

// jsonFieldError turns an encoding/json error into a fieldError with the
// field and offset it names.
func jsonFieldError(err error) *fieldError {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return &fieldError{field: te.Field, msg: fmt.Sprintf("has a %s where a %s belongs", te.Value, te.Type), offset: te.Offset, err: err}
	}
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return &fieldError{msg: "malformed JSON: " + se.Error(), offset: se.Offset, err: err}
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return &fieldError{field: strings.Trim(f, `"`), msg: "unknown field", offset: -1, err: err}
	}
	return &fieldError{msg: msg, offset: -1, err: err}
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
		case len(c.Args) > 0 && !json.Valid(c.Args):
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
// strictly. The error wraps ErrInvalidEvent.
func ValidateEvent(e Event, wantSeq int64) error {
	switch {
	case e.V != FormatVersion:
		return fmt.Errorf("%w: seq %d: version %d, want %d", ErrInvalidEvent, e.Seq, e.V, FormatVersion)
	case e.Seq != wantSeq:
		return fmt.Errorf("%w: seq %d where %d comes next (seqs are dense, from 1)", ErrInvalidEvent, e.Seq, wantSeq)
	case e.At.IsZero():
		return fmt.Errorf("%w: seq %d: time \"at\" is not set", ErrInvalidEvent, e.Seq)
	}
	if _, err := e.Decode(); err != nil {
		return fmt.Errorf("%w: seq %d (%s): %v", ErrInvalidEvent, e.Seq, e.Kind, err)
	}
	return nil
}

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

// CheckAppend validates an Append call before a store writes anything: the
// session ID, the number of events, each event's size and each event's
// validity with seqs following expectSeq. Every backend calls it first, so
// all of them refuse the same inputs with the same errors.
func CheckAppend(l Limits, id string, expectSeq int64, events []Event) error {
	l = l.withDefaults()
	if err := ValidateID(id); err != nil {
		return err
	}
	if expectSeq < 0 {
		return fmt.Errorf("%w: expected seq %d is negative", ErrInvalidEvent, expectSeq)
	}
	if len(events) == 0 {
		return fmt.Errorf("%w: append of no events", ErrInvalidEvent)
	}
	if len(events) > l.MaxAppendEvents {
		return fmt.Errorf("%w: %d events in one append, the limit is %d", ErrTooLarge, len(events), l.MaxAppendEvents)
	}
	for i, e := range events {
		if n := e.Size(); n > l.MaxEventBytes {
			return fmt.Errorf("%w: event seq %d (%s) is %d bytes, the limit is %d", ErrTooLarge, e.Seq, e.Kind, n, l.MaxEventBytes)
		}
		if err := ValidateEvent(e, expectSeq+int64(i)+1); err != nil {
			return err
		}
	}
	return nil
}
