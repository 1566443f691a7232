package cairn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
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

// objectKey is one top-level key of a JSON object, unescaped, and whether
// its value is null.
type objectKey struct {
	name string
	null bool
}

// objectKeys lists the top-level keys of the JSON object data without
// decoding any value. It reports false when data is not an object followed
// by nothing but white space; it does not check the values' syntax, which
// the decoder that follows does.
func objectKeys(data []byte) ([]objectKey, bool) {
	l := lexer{b: data}
	if !l.next('{') {
		return nil, false
	}
	keys := make([]objectKey, 0, 8)
	if !l.next('}') {
		for {
			l.space()
			start := l.i
			if !l.skipString() || !l.next(':') {
				return nil, false
			}
			raw := data[start:l.i]
			raw = bytes.TrimRight(raw[:len(raw)-1], " \t\r\n")
			var name string
			if bytes.IndexByte(raw, '\\') < 0 {
				name = string(raw[1 : len(raw)-1])
			} else if json.Unmarshal(raw, &name) != nil {
				return nil, false
			}
			l.space()
			null := bytes.HasPrefix(data[l.i:], []byte("null"))
			if !l.skipValue() {
				return nil, false
			}
			keys = append(keys, objectKey{name, null})
			if l.next(',') {
				continue
			}
			if l.next('}') {
				break
			}
			return nil, false
		}
	}
	return keys, l.end()
}

// lexer reads JSON for the one-pass decoders. Every method reports false
// for input it does not take, and the caller then gives up: a false is not
// a verdict on the input, only a refusal to judge it here.
type lexer struct {
	b []byte
	i int
}

func (l *lexer) space() {
	for l.i < len(l.b) {
		switch l.b[l.i] {
		case ' ', '\t', '\n', '\r':
			l.i++
		default:
			return
		}
	}
}

// next skips white space and then c, if c comes next.
func (l *lexer) next(c byte) bool {
	l.space()
	if l.i < len(l.b) && l.b[l.i] == c {
		l.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (l *lexer) end() bool {
	l.space()
	return l.i == len(l.b)
}

// skipString skips a string, escapes and all, without checking it.
func (l *lexer) skipString() bool {
	if l.i >= len(l.b) || l.b[l.i] != '"' {
		return false
	}
	for l.i++; l.i < len(l.b); l.i++ {
		switch l.b[l.i] {
		case '\\':
			l.i++
		case '"':
			l.i++
			return true
		}
	}
	return false
}

// skipValue skips one value, finding where it ends without checking it.
func (l *lexer) skipValue() bool {
	l.space()
	depth := 0
	for l.i < len(l.b) {
		switch c := l.b[l.i]; c {
		case '"':
			if !l.skipString() {
				return false
			}
		case '{', '[':
			depth++
			l.i++
		case '}', ']':
			if depth == 0 {
				return true
			}
			depth--
			l.i++
		case ',':
			if depth == 0 {
				return true
			}
			l.i++
		default:
			l.i++
		}
		if depth == 0 && l.i > 0 && (l.b[l.i-1] == '"' || l.b[l.i-1] == '}' || l.b[l.i-1] == ']') {
			return true
		}
	}
	return depth == 0
}

// key reads an object key that has no escapes and the colon after it.
func (l *lexer) key() (string, bool) {
	l.space()
	if l.i >= len(l.b) || l.b[l.i] != '"' {
		return "", false
	}
	j := bytes.IndexByte(l.b[l.i+1:], '"')
	if j < 0 {
		return "", false
	}
	k := l.b[l.i+1 : l.i+1+j]
	if bytes.IndexByte(k, '\\') >= 0 {
		return "", false
	}
	l.i += j + 2
	return string(k), l.next(':')
}

// str reads a string: valid UTF-8, no control characters, escapes other
// than lone surrogates.
func (l *lexer) str() (string, bool) {
	l.space()
	if l.i >= len(l.b) || l.b[l.i] != '"' {
		return "", false
	}
	l.i++
	start := l.i
	var buf []byte
	for l.i < len(l.b) {
		c := l.b[l.i]
		switch {
		case c == '"':
			seg := l.b[start:l.i]
			l.i++
			if !utf8.Valid(seg) {
				return "", false
			}
			if buf == nil {
				return string(seg), true
			}
			return string(append(buf, seg...)), true
		case c == '\\':
			seg := l.b[start:l.i]
			if !utf8.Valid(seg) || l.i+1 >= len(l.b) {
				return "", false
			}
			buf = append(buf, seg...)
			switch e := l.b[l.i+1]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				if l.i+6 > len(l.b) {
					return "", false
				}
				r, err := strconv.ParseUint(string(l.b[l.i+2:l.i+6]), 16, 16)
				if err != nil || utf16.IsSurrogate(rune(r)) || l.b[l.i+2] == '+' || l.b[l.i+2] == '-' {
					return "", false
				}
				buf = utf8.AppendRune(buf, rune(r))
				l.i += 4
			default:
				return "", false
			}
			l.i += 2
			start = l.i
		case c < 0x20:
			return "", false
		default:
			l.i++
		}
	}
	return "", false
}

// int reads a whole number that fits an int64.
func (l *lexer) int() (int64, bool) {
	l.space()
	start := l.i
	if l.i < len(l.b) && l.b[l.i] == '-' {
		l.i++
	}
	digits := l.i
	for l.i < len(l.b) && l.b[l.i] >= '0' && l.b[l.i] <= '9' {
		l.i++
	}
	n := l.i - digits
	if n == 0 || n > 1 && l.b[digits] == '0' || n > 18 {
		return 0, false
	}
	if l.i < len(l.b) {
		switch l.b[l.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	v, err := strconv.ParseInt(string(l.b[start:l.i]), 10, 64)
	return v, err == nil
}

// bool reads true or false.
func (l *lexer) bool() (bool, bool) {
	l.space()
	switch {
	case bytes.HasPrefix(l.b[l.i:], []byte("true")):
		l.i += 4
		return true, true
	case bytes.HasPrefix(l.b[l.i:], []byte("false")):
		l.i += 5
		return false, true
	}
	return false, false
}

// raw reads any valid JSON value but null and returns a copy of its bytes.
func (l *lexer) raw() (json.RawMessage, bool) {
	l.space()
	start := l.i
	if start >= len(l.b) || l.b[start] == 'n' || !l.skipValue() {
		return nil, false
	}
	v := bytes.TrimRight(l.b[start:l.i], " \t\r\n")
	if !json.Valid(v) {
		return nil, false
	}
	return append(json.RawMessage(nil), v...), true
}

// object reads an object whose keys have no escapes, calling field for
// each key with the lexer at its value. Bit i of seen is set for the key
// names[i]; an unknown or repeated key stops the read.
func (l *lexer) object(names []string, field func(i int) bool) (seen uint, ok bool) {
	if !l.next('{') {
		return 0, false
	}
	if l.next('}') {
		return 0, true
	}
	for {
		k, ok := l.key()
		if !ok {
			return 0, false
		}
		i := slices.Index(names, k)
		if i < 0 || seen&(1<<i) != 0 || !field(i) {
			return 0, false
		}
		seen |= 1 << i
		if l.next(',') {
			continue
		}
		if l.next('}') {
			return seen, true
		}
		return 0, false
	}
}

// array reads an array, calling elem with the lexer at each element.
func (l *lexer) array(elem func() bool) bool {
	if !l.next('[') {
		return false
	}
	if l.next(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if l.next(',') {
			continue
		}
		return l.next(']')
	}
}

// top reads data as one whole object with all of names present.
func top(data []byte, names []string, field func(l *lexer, i int) bool) bool {
	l := &lexer{b: data}
	seen, ok := l.object(names, func(i int) bool { return field(l, i) })
	return ok && seen == 1<<len(names)-1 && l.end()
}

// fastDecoders are the one-pass decoders of the commonest kinds' data, by
// type. Each reports false for anything it does not decode exactly as
// encoding/json would, which sends the data the general way.
var fastDecoders = map[reflect.Type]func(data []byte) (any, bool){
	reflect.TypeFor[ModelResponse](): fastModelResponse,
	reflect.TypeFor[ToolResult]():    fastToolResult,
	reflect.TypeFor[ToolStarted]():   fastToolStarted,
	reflect.TypeFor[MessageSystem](): fastMessageSystem,
	reflect.TypeFor[MessageUser]():   fastMessageUser,
}

var modelResponseNames = []string{"text", "tool_calls", "model", "usage", "finish_reason", "latency_ms"}

func fastModelResponse(data []byte) (any, bool) {
	m := &ModelResponse{}
	ok := top(data, modelResponseNames, func(l *lexer, i int) (ok bool) {
		switch i {
		case 0:
			m.Text, ok = l.str()
		case 1:
			m.ToolCalls, ok = l.toolCalls()
		case 2:
			m.Model, ok = l.str()
		case 3:
			_, ok = l.object(usageNames, func(i int) (ok bool) {
				if i == 0 {
					m.Usage.InputTokens, ok = l.int()
				} else {
					m.Usage.OutputTokens, ok = l.int()
				}
				return ok
			})
		case 4:
			m.FinishReason, ok = l.str()
		case 5:
			m.LatencyMS, ok = l.int()
		}
		return ok
	})
	return m, ok
}

var (
	usageNames    = []string{"input_tokens", "output_tokens"}
	toolCallNames = []string{"id", "name", "args"}
)

func (l *lexer) toolCalls() ([]ToolCall, bool) {
	calls := []ToolCall{}
	ok := l.array(func() bool {
		var c ToolCall
		_, ok := l.object(toolCallNames, func(i int) (ok bool) {
			switch i {
			case 0:
				c.ID, ok = l.str()
			case 1:
				c.Name, ok = l.str()
			case 2:
				c.Args, ok = l.raw()
			}
			return ok
		})
		calls = append(calls, c)
		return ok
	})
	return calls, ok
}

var toolResultNames = []string{"call_id", "name", "output", "is_error", "duration_ms"}

func fastToolResult(data []byte) (any, bool) {
	r := &ToolResult{}
	ok := top(data, toolResultNames, func(l *lexer, i int) (ok bool) {
		switch i {
		case 0:
			r.CallID, ok = l.str()
		case 1:
			r.Name, ok = l.str()
		case 2:
			r.Output, ok = l.str()
		case 3:
			r.IsError, ok = l.bool()
		case 4:
			r.DurationMS, ok = l.int()
		}
		return ok
	})
	return r, ok
}

var toolStartedNames = []string{"call_id", "name", "args"}

func fastToolStarted(data []byte) (any, bool) {
	t := &ToolStarted{}
	ok := top(data, toolStartedNames, func(l *lexer, i int) (ok bool) {
		switch i {
		case 0:
			t.CallID, ok = l.str()
		case 1:
			t.Name, ok = l.str()
		case 2:
			t.Args, ok = l.raw()
		}
		return ok
	})
	return t, ok
}

var textNames = []string{"text"}

func fastMessageSystem(data []byte) (any, bool) {
	m := &MessageSystem{}
	ok := top(data, textNames, func(l *lexer, _ int) (ok bool) {
		m.Text, ok = l.str()
		return ok
	})
	return m, ok
}

var (
	partsNames = []string{"parts"}
	partNames  = []string{"type", "text", "mime", "url"}
)

func fastMessageUser(data []byte) (any, bool) {
	m := &MessageUser{}
	ok := top(data, partsNames, func(l *lexer, _ int) bool {
		m.Parts = []Part{}
		return l.array(func() bool {
			var p Part
			_, ok := l.object(partNames, func(i int) (ok bool) {
				switch i {
				case 0:
					p.Type, ok = l.str()
				case 1:
					p.Text, ok = l.str()
				case 2:
					p.MIME, ok = l.str()
				case 3:
					p.URL, ok = l.str()
				}
				return ok
			})
			m.Parts = append(m.Parts, p)
			return ok
		})
	})
	return m, ok
}
