package cairn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// DocumentFormat names the native memory document in its "format" field.
const DocumentFormat = "cairn.memory"

// Memory is the ordered events of one session. The zero value is an empty
// memory. It is not safe for concurrent use.
type Memory struct {
	// Session describes the session the events belong to, when known:
	// DumpJSON writes it and LoadJSON reads it back.
	Session *SessionMeta
	events  []Event
}

// NewMemory returns a memory holding events, which must be dense from seq 1
// and valid; it is the same as an empty Memory followed by Add of
// already-numbered events.
func NewMemory(events ...Event) (*Memory, error) {
	m := &Memory{}
	for i, e := range events {
		if err := ValidateEvent(e, int64(i)+1); err != nil {
			return nil, err
		}
	}
	m.events = slices.Clone(events)
	return m, nil
}

// Len returns the number of events.
func (m *Memory) Len() int { return len(m.events) }

// Events returns a copy of the events in seq order.
func (m *Memory) Events() []Event { return slices.Clone(m.events) }

// Event returns the i-th event (0-based).
func (m *Memory) Event(i int) Event { return m.events[i] }

// LastSeq returns the seq of the last event, 0 for an empty memory.
func (m *Memory) LastSeq() int64 { return int64(len(m.events)) }

// Add numbers events with the next seqs, validates them and appends them.
// It returns the numbered events, ready for Store.Append. Nothing is added
// if any event is invalid.
func (m *Memory) Add(events ...Event) ([]Event, error) {
	out := slices.Clone(events)
	for i := range out {
		out[i].Seq = m.LastSeq() + int64(i) + 1
		if out[i].V == 0 {
			out[i].V = FormatVersion
		}
		if out[i].At.IsZero() {
			out[i].At = time.Now().UTC()
		}
		if err := ValidateEvent(out[i], out[i].Seq); err != nil {
			return nil, err
		}
	}
	m.events = append(m.events, out...)
	return out, nil
}

// State folds the memory's events into a State.
func (m *Memory) State() (*State, error) { return Fold(m.events) }

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

// WriteJSON writes the memory document to w, one event per line.
func (m *Memory) WriteJSON(w io.Writer) error {
	head := struct {
		Format  string       `json:"format"`
		Version int          `json:"version"`
		Session *SessionMeta `json:"session,omitempty"`
	}{DocumentFormat, FormatVersion, m.Session}
	b, err := json.Marshal(head)
	if err != nil {
		return fmt.Errorf("dump memory: %w", err)
	}
	var buf bytes.Buffer
	buf.Write(b[:len(b)-1])
	buf.WriteString(`,"events":[`)
	for i, e := range m.events {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
		eb, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("dump memory: event seq %d: %w", e.Seq, err)
		}
		buf.Write(eb)
	}
	buf.WriteString("\n]}\n")
	_, err = w.Write(buf.Bytes())
	return err
}

// LoadOptions bound what LoadJSONWith accepts.
type LoadOptions struct {
	Limits
	MaxDocumentBytes int // 0: no limit beyond the events'
}

// LoadJSON parses a memory document strictly. Malformed or truncated JSON,
// an unknown format or newer version, unknown kinds (custom excepted),
// missing, unknown or mistyped fields, seq gaps or repeats, oversize events
// and trailing data are each rejected with a *MemoryLoadError that says
// where. It never returns a partly built memory.
func LoadJSON(data []byte) (*Memory, error) { return LoadJSONWith(data, LoadOptions{}) }

// LoadJSONWith is LoadJSON with limits.
func LoadJSONWith(data []byte, opts LoadOptions) (*Memory, error) {
	opts.Limits = opts.Limits.withDefaults()
	if opts.MaxDocumentBytes > 0 && len(data) > opts.MaxDocumentBytes {
		return nil, &MemoryLoadError{Index: -1, Offset: -1, Err: ErrTooLarge,
			Msg: fmt.Sprintf("document is too large: %d bytes, the limit is %d", len(data), opts.MaxDocumentBytes)}
	}
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
		e, err := decodeEvent(raw, int64(i)+1, opts.Limits)
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

// upgrades turn a document of an older format version into the current one,
// keyed by the version they read. Version 1 is the first; when version 2
// comes, upgrades[1] rewrites a version 1 document's events in place and the
// golden files in testdata/ keep every version loading.
var upgrades = map[int]func(*document) error{}

// parseDocument decodes the top level and returns each event's raw JSON with
// its byte offset in data.
func parseDocument(data []byte) (*document, []int64, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	fail := func(field, msg string, err error) (*document, []int64, error) {
		off := dec.InputOffset()
		if se, ok := errors.AsType[*json.SyntaxError](err); ok {
			off, msg = se.Offset, "malformed JSON: "+se.Error()
		} else if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			msg = "truncated JSON: the document ends early"
		}
		return nil, nil, &MemoryLoadError{Index: -1, Field: field, Offset: off, Msg: msg, Err: err}
	}
	if tok, err := dec.Token(); err != nil {
		return fail("", "", err)
	} else if tok != json.Delim('{') {
		return fail("", "the document must be a JSON object", nil)
	}
	doc := &document{}
	var offsets []int64
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fail("", "", err)
		}
		key, _ := tok.(string)
		if seen[key] {
			return fail(key, "appears twice", nil)
		}
		seen[key] = true
		switch key {
		case "format":
			if err := dec.Decode(&doc.Format); err != nil {
				return fail(key, "must be a string", err)
			}
			if doc.Format != DocumentFormat {
				return fail(key, fmt.Sprintf("is %q, want %q", doc.Format, DocumentFormat), nil)
			}
		case "version":
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return fail(key, "", err)
			}
			n := json.Number(raw)
			v, err := n.Int64()
			if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
				return fail(key, "must be a number", nil)
			}
			if err != nil || v < 1 {
				return fail(key, fmt.Sprintf("is %s, want a whole number from 1", n), nil)
			}
			doc.Version = int(v)
		case "session":
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return fail(key, "", err)
			}
			var meta SessionMeta
			strict := json.NewDecoder(bytes.NewReader(raw))
			strict.DisallowUnknownFields()
			if err := strict.Decode(&meta); err != nil {
				fe := jsonFieldError(err)
				return nil, nil, &MemoryLoadError{Index: -1, Field: "session." + fe.field, Offset: -1, Msg: fe.msg, Err: err}
			}
			doc.Session = &meta
		case "events":
			if tok, err := dec.Token(); err != nil {
				return fail(key, "", err)
			} else if tok != json.Delim('[') {
				return fail(key, "must be an array", nil)
			}
			doc.Events = []json.RawMessage{}
			for dec.More() {
				off := dec.InputOffset()
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return fail(key, "", err)
				}
				offsets = append(offsets, off+leadingSpace(data[off:]))
				doc.Events = append(doc.Events, raw)
			}
			if _, err := dec.Token(); err != nil {
				return fail(key, "", err)
			}
		default:
			return fail(key, "unknown field", nil)
		}
	}
	if _, err := dec.Token(); err != nil {
		return fail("", "", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, &MemoryLoadError{Index: -1, Offset: dec.InputOffset(), Msg: "trailing data after the document", Err: err}
	}
	for _, k := range []string{"format", "version", "events"} {
		if !seen[k] {
			return nil, nil, &MemoryLoadError{Index: -1, Field: k, Offset: -1, Msg: "is missing"}
		}
	}
	return doc, offsets, nil
}

func leadingSpace(b []byte) int64 {
	n := int64(0)
	for _, c := range b {
		if c != ' ' && c != '\n' && c != '\r' && c != '\t' && c != ',' {
			break
		}
		n++
	}
	return n
}

// envelopeFields are the fields of an event envelope; all are required.
var envelopeFields = []string{"v", "seq", "at", "kind", "run", "data"}

// decodeEvent decodes and validates one event envelope strictly.
func decodeEvent(raw []byte, wantSeq int64, l Limits) (Event, *MemoryLoadError) {
	le := func(field, msg string, off int64, err error) (Event, *MemoryLoadError) {
		return Event{}, &MemoryLoadError{Field: field, Offset: off, Msg: msg, Err: err}
	}
	if len(raw) > l.MaxEventBytes {
		return le("", fmt.Sprintf("event is too large: %d bytes, the limit is %d", len(raw), l.MaxEventBytes), -1, ErrTooLarge)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return le("", "an event must be a JSON object", -1, err)
	}
	for k := range fields {
		if !slices.Contains(envelopeFields, k) {
			return le(k, "unknown field", keyOffset(raw, k), nil)
		}
	}
	for _, k := range envelopeFields {
		if _, ok := fields[k]; !ok {
			return le(k, "is missing", -1, nil)
		}
	}
	var e Event
	if err := json.Unmarshal(raw, &e); err != nil {
		fe := jsonFieldError(err)
		if _, ok := errors.AsType[*time.ParseError](err); ok || fe.field == "" && bytes.Contains([]byte(err.Error()), []byte("parsing time")) {
			return le("at", "is not an RFC 3339 time: "+err.Error(), keyOffset(raw, "at"), err)
		}
		return le(fe.field, fe.msg, fe.offset, err)
	}
	e.At = e.At.UTC()
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
	case !KnownKind(e.Kind):
		return le("kind", fmt.Sprintf("unknown kind %q", e.Kind), keyOffset(raw, "kind"), nil)
	}
	if _, err := e.Decode(); err != nil {
		var fe *fieldError
		if errors.As(err, &fe) {
			dataOff := keyOffset(raw, "data")
			off := int64(-1)
			if fe.offset >= 0 && dataOff >= 0 {
				off = dataOff + fe.offset
			}
			mle := &MemoryLoadError{Field: "data." + fe.field, Offset: off, Msg: fe.msg, Err: fe.err}
			if fe.field == "" || fe.field == "data" {
				mle.Field = "data"
			}
			mle.Seq = e.Seq
			return Event{}, mle
		}
		return le("data", err.Error(), -1, err)
	}
	return e, nil
}
