package cairn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/cairnhq/cairn/internal/wire"
)

// documentFormat names the native memory document in its "format" field.
const documentFormat = "cairn.memory"

// Memory is the ordered events of one session. The zero value is an empty
// memory. It is not safe for concurrent use.
type Memory struct {
	// Session describes the session the events belong to, when known:
	// DumpJSON writes it and LoadJSON reads it back.
	Session *SessionMeta
	base    *State // the state before the first event held; nil: seq 1 comes first
	events  []Event
	calls   calls // the tool calls asked for since the last memory.reset
}

// NewMemory returns a memory holding events as a store holds them: they
// must be dense from seq 1 and each valid (see ValidateEvent). Unlike Add
// and LoadJSON it does not judge the history as a whole (a tool.result
// whose call was never asked for), so that a stored session always loads.
func NewMemory(events ...Event) (*Memory, error) {
	m := &Memory{events: slices.Clone(events)}
	for i := range m.events {
		v, err := validateEvent(&m.events[i], int64(i)+1)
		if err != nil {
			return nil, err
		}
		m.calls.note(v)
	}
	return m, nil
}

// newMemoryAfter returns a memory that holds a session's events after a
// snapshot: base is the state folded through seq base.LastSeq (from
// Restore), and events must be dense from the seq after it. Such a memory
// folds from base (State), numbers new events after it (Add), and knows
// the tool calls base still lists; it cannot be written as a document
// (DumpJSON), which needs every event: load the session from its store.
func newMemoryAfter(base *State, events ...Event) (*Memory, error) {
	if base == nil || base.LastSeq == 0 {
		return NewMemory(events...)
	}
	m := &Memory{base: base.Clone()}
	for _, msg := range base.Messages {
		for _, tc := range msg.ToolCalls {
			m.calls.note(&ModelResponse{ToolCalls: []ToolCall{tc}})
		}
	}
	for _, p := range base.Pending {
		m.calls.note(&ModelResponse{ToolCalls: []ToolCall{p.ToolCall}})
	}
	m.events = slices.Clone(events)
	for i := range m.events {
		v, err := validateEvent(&m.events[i], base.LastSeq+int64(i)+1)
		if err != nil {
			return nil, err
		}
		m.calls.note(v)
	}
	return m, nil
}

// Rebuilt returns a memory with m's base (see Base) that holds events in
// place of m's, which must be dense from the seq after the base: the
// memory of the same session after its events changed (a writer that took
// in events found stored, say). m is unchanged.
func (m *Memory) Rebuilt(events ...Event) (*Memory, error) {
	nm, err := newMemoryAfter(m.base, events...)
	if err != nil {
		return nil, err
	}
	nm.Session = m.Session
	return nm, nil
}

// Base returns the seq of the last event before the ones the memory
// holds: 0 for a memory that holds a session from its first event, the
// snapshot's seq for one from newMemoryAfter.
func (m *Memory) Base() int64 {
	if m.base == nil {
		return 0
	}
	return m.base.LastSeq
}

// BaseState returns a copy of the state the memory's events follow: nil
// for a memory that holds a session from its first event.
func (m *Memory) BaseState() *State {
	if m.base == nil {
		return nil
	}
	return m.base.Clone()
}

// Len returns the number of events the memory holds (those after Base).
func (m *Memory) Len() int { return len(m.events) }

// Events returns a copy of the events in seq order.
func (m *Memory) Events() []Event { return slices.Clone(m.events) }

// Event returns the i-th event the memory holds (0-based; its seq is
// Base()+i+1).
func (m *Memory) Event(i int) Event { return m.events[i] }

// LastSeq returns the seq of the last event, 0 for an empty memory.
func (m *Memory) LastSeq() int64 { return m.Base() + int64(len(m.events)) }

// Add numbers events with the next seqs, validates them and appends them.
// It returns the numbered events, ready for Store.Append. Each event must
// be valid (see ValidateEvents), and a tool.result must answer a call that
// a model.response asked for since the last memory.reset. Nothing is added
// if any event is refused; the error wraps ErrInvalidEvent.
func (m *Memory) Add(events ...Event) ([]Event, error) {
	out, batch, err := m.prepare(events)
	if err != nil {
		return nil, err
	}
	m.events = append(m.events, out...)
	batch.commit()
	return out, nil
}

// Prepare numbers and checks events as Add does, without adding them: the
// batch a caller appends to its store before it adds the same batch to
// the memory with Add, which then does not decode them again.
func (m *Memory) Prepare(events ...Event) ([]Event, error) {
	out, _, err := m.prepare(events)
	return out, err
}

func (m *Memory) prepare(events []Event) ([]Event, callBatch, error) {
	out := slices.Clone(events)
	batch := callBatch{base: &m.calls}
	for i := range out {
		out[i].Seq = m.LastSeq() + int64(i) + 1
		if out[i].V == 0 {
			out[i].V = FormatVersion
		}
		if out[i].At.IsZero() {
			out[i].At = time.Now().UTC()
		}
		v, err := validateEvent(&out[i], out[i].Seq)
		if err != nil {
			return nil, batch, err
		}
		if id, orphan := batch.note(v); orphan {
			return nil, batch, fmt.Errorf("%w: seq %d (%s): %s", ErrInvalidEvent, out[i].Seq, out[i].Kind, orphanMsg(id))
		}
	}
	return out, batch, nil
}

// calls follows the tool calls asked for since the last memory.reset, to
// refuse a tool.result whose call was never asked for.
type calls struct {
	asked map[string]bool
}

// note folds the decoded data of one event in. It reports the call ID of a
// tool.result whose call was not asked for.
func (c *calls) note(v any) (id string, orphan bool) {
	switch d := v.(type) {
	case *MemoryReset:
		clear(c.asked)
	case *ModelResponse:
		if c.asked == nil && len(d.ToolCalls) > 0 {
			c.asked = map[string]bool{}
		}
		for _, tc := range d.ToolCalls {
			c.asked[tc.ID] = true
		}
	case *ToolResult:
		return d.CallID, !c.asked[d.CallID]
	}
	return "", false
}

// callBatch is calls for the events of one Add, applied to base only when
// all of them are taken.
type callBatch struct {
	base  *calls
	reset bool  // the batch holds a memory.reset: base no longer counts
	added calls // what the batch asked for (after its last reset)
}

func (b *callBatch) note(v any) (id string, orphan bool) {
	if _, ok := v.(*MemoryReset); ok {
		b.reset = true
	}
	id, orphan = b.added.note(v)
	if orphan && !b.reset && b.base.asked[id] {
		orphan = false
	}
	return id, orphan
}

func (b *callBatch) commit() {
	if b.reset {
		b.base.asked = b.added.asked
		return
	}
	if b.base.asked == nil {
		b.base.asked = map[string]bool{}
	}
	maps.Copy(b.base.asked, b.added.asked)
}

func orphanMsg(id string) string {
	return fmt.Sprintf("tool result for call %q, which no model.response asked for since the last memory.reset", id)
}

// State folds the memory's events into a State, from its base when it
// has one (newMemoryAfter).
func (m *Memory) State() (*State, error) {
	if m.base == nil {
		return Fold(m.events)
	}
	s := m.base.Clone()
	for _, e := range m.events {
		if err := s.Apply(e); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// document is the JSON form of a memory.
type document struct {
	Format  string            `json:"format"`
	Version int               `json:"version"`
	Session *SessionMeta      `json:"session,omitempty"`
	Events  []json.RawMessage `json:"events"`
}

// DumpJSON returns the memory as one JSON document:
// {"format":"cairn.memory","version":1,"session":{…},"events":[…]}.
func (m *Memory) DumpJSON() ([]byte, error) {
	var buf bytes.Buffer
	if err := m.WriteJSON(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteJSON writes the memory document to w, one event per line, each in
// the form a store keeps it (see driver.AppendEnvelope): the time in UTC,
// the data without white space outside its strings.
func (m *Memory) WriteJSON(w io.Writer) error {
	if m.base != nil {
		return fmt.Errorf("dump memory: %w", ErrPartialMemory)
	}
	head := struct {
		Format  string       `json:"format"`
		Version int          `json:"version"`
		Session *SessionMeta `json:"session,omitempty"`
	}{documentFormat, FormatVersion, m.Session}
	b, err := json.Marshal(head)
	if err != nil {
		return fmt.Errorf("dump memory: %w", err)
	}
	buf := append(b[:len(b)-1], `,"events":[`...)
	for i, e := range m.events {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '\n')
		if buf, err = appendEnvelope(buf, e); err != nil {
			return fmt.Errorf("dump memory: event seq %d: %w", e.Seq, err)
		}
	}
	buf = append(buf, "\n]}\n"...)
	_, err = w.Write(buf)
	return err
}

// LoadOptions bound what LoadJSON accepts.
type LoadOptions struct {
	Limits
	MaxDocumentBytes int // 0: no limit beyond the events'
}

// LoadJSON parses a memory document strictly. Malformed or truncated JSON,
// an unknown format or newer version, unknown kinds (custom excepted),
// missing, unknown or mistyped fields, a name given twice in any object,
// invalid UTF-8, seq gaps or repeats, a tool.result whose call no
// model.response asked for since the last memory.reset, oversize events
// and trailing data are each rejected with a *MemoryLoadError that says
// where (the event's index and seq, the field, the byte offset). It never
// returns a partly built memory. Options, at most one, set its limits.
func LoadJSON(data []byte, options ...LoadOptions) (*Memory, error) {
	var opts LoadOptions
	if len(options) > 0 {
		opts = options[0]
	}
	opts.Limits = opts.Limits.withDefaults()
	if opts.MaxDocumentBytes > 0 && len(data) > opts.MaxDocumentBytes {
		return nil, &MemoryLoadError{Index: -1, Offset: -1, Err: ErrTooLarge,
			Msg: fmt.Sprintf("document is too large: %d bytes, the limit is %d", len(data), opts.MaxDocumentBytes)}
	}
	// The events' data alias the document: a copy of it, so that the
	// memory does not change with the caller's buffer.
	data = bytes.Clone(data)
	doc, offsets, err := parseDocument(data)
	if err != nil {
		return nil, err
	}
	if doc.Version != FormatVersion {
		up, ok := upgrades[doc.Version]
		if !ok {
			return nil, &MemoryLoadError{Index: -1, Field: "version", Offset: -1,
				Msg: fmt.Sprintf("unsupported version %d (this cairn reads versions 1 to %d; a newer cairn wrote it?)", doc.Version, FormatVersion)}
		}
		if err := up(doc); err != nil {
			return nil, err
		}
	}
	if doc.Session != nil && doc.Session.ID != "" {
		if err := ValidateID(doc.Session.ID); err != nil {
			return nil, &MemoryLoadError{Index: -1, Field: "session.id", Offset: -1, Msg: err.Error(), Err: err}
		}
	}
	m := &Memory{Session: doc.Session, events: make([]Event, 0, len(doc.Events))}
	for i, raw := range doc.Events {
		e, v, err := decodeEvent(raw, int64(i)+1, opts.Limits)
		if err == nil {
			if id, orphan := m.calls.note(v); orphan {
				err = &MemoryLoadError{Seq: e.Seq, Field: "data.call_id", Offset: callIDOffset(raw), Msg: orphanMsg(id)}
			}
		}
		if err != nil {
			err.Index = i
			if err.Offset >= 0 {
				err.Offset += offsets[i]
			} else {
				err.Offset = offsets[i]
			}
			return nil, err
		}
		m.events = append(m.events, e)
	}
	return m, nil
}

// callIDOffset finds the call_id member in a tool.result's envelope, or -1.
func callIDOffset(raw []byte) int64 {
	d := keyOffset(raw, "data")
	if d < 0 {
		return -1
	}
	if i := keyOffset(raw[d:], "call_id"); i >= 0 {
		return d + i
	}
	return -1
}

// upgrades turn a document of an older format version into the current one,
// keyed by the version they read. Version 1 is the first; when version 2
// comes, upgrades[1] rewrites a version 1 document's events in place and the
// golden files in testdata/ keep every version loading.
var upgrades = map[int]func(*document) error{}

// Members of a memory document.
const (
	docFormat = 1 << iota
	docVersion
	docSession
	docEvents
)

var docMembers = map[string]int{"format": docFormat, "version": docVersion, "session": docSession, "events": docEvents}

// parseDocument decodes the top level and returns each event's raw JSON
// (aliasing data) with its byte offset in data. It checks the syntax of the
// whole document; the events are checked strictly (no name twice, valid
// UTF-8) by decodeEvent, which knows their seqs.
func parseDocument(data []byte) (*document, []int64, error) {
	d := wire.NewOuterDecoder(data)
	defer d.Free()
	fail := func(field string, fe *wire.FieldError) (*document, []int64, error) {
		if field == "" {
			field = fe.Field
		}
		msg := fe.Msg
		if errors.Is(fe.Err, io.ErrUnexpectedEOF) || errors.Is(fe.Err, io.EOF) {
			msg = "truncated JSON: the document ends early"
		}
		return nil, nil, &MemoryLoadError{Index: -1, Field: field, Offset: fe.Offset, Msg: msg, Err: fe.Err}
	}
	msg := func(field, msg string, off int64) (*document, []int64, error) {
		return nil, nil, &MemoryLoadError{Index: -1, Field: field, Offset: off, Msg: msg}
	}
	if k := d.PeekKind(); k != '{' {
		if k == 0 {
			_, err := d.ReadToken()
			return fail("", wire.DecodeError(err))
		}
		return msg("", "the document must be a JSON object", d.InputOffset())
	}
	if _, err := d.ReadToken(); err != nil {
		return fail("", wire.DecodeError(err))
	}
	doc := &document{}
	var offsets []int64
	seen := 0
	for d.PeekKind() != '}' {
		name, off, err := d.Name()
		if err != nil {
			return fail("", wire.DecodeError(err))
		}
		key := string(name)
		if seen&docMembers[key] != 0 {
			return msg(key, "appears twice (a name may appear once in an object)", off)
		}
		switch key {
		case "format":
			seen |= docFormat
			raw, err := d.ReadValue()
			if err != nil {
				return fail(key, wire.DecodeError(err))
			}
			if wire.ValueKind(raw) != '"' {
				return msg(key, "must be a string", off)
			}
			if err := wire.Unmarshal(raw, &doc.Format); err != nil {
				return fail(key, wire.DecodeError(err))
			}
			if doc.Format != documentFormat {
				return msg(key, fmt.Sprintf("is %q, want %q", doc.Format, documentFormat), off)
			}
		case "version":
			seen |= docVersion
			raw, err := d.ReadValue()
			if err != nil {
				return fail(key, wire.DecodeError(err))
			}
			if wire.ValueKind(raw) != '0' {
				return msg(key, "must be a number", off)
			}
			v, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil || v < 1 || v > math.MaxInt32 {
				return msg(key, fmt.Sprintf("is %s, want a whole number from 1", raw), off)
			}
			doc.Version = int(v)
		case "session":
			seen |= docSession
			raw, err := d.ReadValue()
			if err != nil {
				return fail(key, wire.DecodeError(err))
			}
			meta, fe := decodeMeta(raw)
			if fe != nil {
				fe.Field = join(key, fe.Field)
				if fe.Offset >= 0 {
					fe.Offset += d.InputOffset() - int64(len(raw))
				}
				return fail("", fe)
			}
			doc.Session = meta
		case "events":
			seen |= docEvents
			if k := d.PeekKind(); k != '[' {
				if k == 0 {
					_, err := d.ReadToken()
					return fail(key, wire.DecodeError(err))
				}
				return msg(key, "must be an array", off)
			}
			if _, err := d.ReadToken(); err != nil {
				return fail(key, wire.DecodeError(err))
			}
			doc.Events = []json.RawMessage{}
			for d.PeekKind() != ']' {
				raw, err := d.ReadValue()
				if err != nil {
					return fail(key, wire.DecodeError(err))
				}
				offsets = append(offsets, d.InputOffset()-int64(len(raw)))
				doc.Events = append(doc.Events, json.RawMessage(raw))
			}
			if _, err := d.ReadToken(); err != nil {
				return fail(key, wire.DecodeError(err))
			}
		default:
			return msg(key, "unknown field", off)
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return fail("", wire.DecodeError(err))
	}
	if !d.End() {
		return msg("", "trailing data after the document", d.InputOffset())
	}
	for _, k := range []struct {
		bit  int
		name string
	}{{docFormat, "format"}, {docVersion, "version"}, {docEvents, "events"}} {
		if seen&k.bit == 0 {
			return msg(k.name, "is missing", -1)
		}
	}
	return doc, offsets, nil
}

// decodeMeta decodes a document's session strictly.
func decodeMeta(raw []byte) (*SessionMeta, *wire.FieldError) {
	d := wire.NewDecoder(raw)
	defer d.Free()
	var meta SessionMeta
	if err := d.Value(&meta); err != nil {
		return nil, wire.DecodeError(err)
	}
	return &meta, nil
}

// join builds a field path: "session" + "id" = "session.id".
func join(parent, field string) string {
	if parent == "" {
		return field
	}
	return parent + "." + field
}

// decodeEvent decodes and validates one event envelope strictly, and its
// data, which it returns decoded too.
func decodeEvent(raw []byte, wantSeq int64, l Limits) (Event, any, *MemoryLoadError) {
	le := func(field, msg string, off int64, err error) (Event, any, *MemoryLoadError) {
		return Event{}, nil, &MemoryLoadError{Field: field, Offset: off, Msg: msg, Err: err}
	}
	if len(raw) > l.MaxEventBytes {
		return le("", fmt.Sprintf("event is too large: %d bytes, the limit is %d", len(raw), l.MaxEventBytes), -1, ErrTooLarge)
	}
	d := wire.NewDecoder(raw)
	env, fe := wire.ReadEnvelope(d)
	d.Free()
	if fe != nil {
		e, v, mle := le(fe.Field, fe.Msg, fe.Offset, fe.Err)
		mle.Seq = max(env.E.Seq, 0)
		return e, v, mle
	}
	e := eventOf(env.E)
	e.At = e.At.UTC()
	le = func(field, msg string, off int64, err error) (Event, any, *MemoryLoadError) {
		return Event{}, nil, &MemoryLoadError{Seq: e.Seq, Field: field, Offset: off, Msg: msg, Err: err}
	}
	switch {
	case e.V != FormatVersion:
		return le("v", fmt.Sprintf("is %d, want %d", e.V, FormatVersion), keyOffset(raw, "v"), nil)
	case e.Seq != wantSeq:
		what := "a gap"
		if e.Seq < wantSeq {
			what = "a repeat or out of order"
		}
		return le("seq", fmt.Sprintf("is %d where %d comes next (%s; seqs are dense from 1)", e.Seq, wantSeq, what), keyOffset(raw, "seq"), nil)
	case e.At.IsZero():
		return le("at", "is the zero time", keyOffset(raw, "at"), nil)
	case !e.Kind.Known():
		return le("kind", fmt.Sprintf("unknown kind %q", e.Kind), keyOffset(raw, "kind"), nil)
	}
	v, err := e.value()
	if err != nil {
		mle := &MemoryLoadError{Seq: e.Seq, Field: "data", Offset: env.DataOff, Msg: err.Error(), Err: err}
		if fe, ok := errors.AsType[*wire.FieldError](err); ok {
			mle.Msg, mle.Err = fe.Msg, fe.Err
			if fe.Field != "" && fe.Field != "data" {
				mle.Field = "data." + fe.Field
			}
			if fe.Offset >= 0 {
				mle.Offset = env.DataOff + fe.Offset
			}
		}
		return Event{}, nil, mle
	}
	return e, v, nil
}
