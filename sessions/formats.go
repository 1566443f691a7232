package sessions

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
)

// documentFormat names the native memory document in its "format" field,
// as cairn.Memory.DumpJSON writes it.
const documentFormat = "cairn.memory"

// Format names a document format for export and import.
type Format string

// The formats.
const (
	Cairn      Format = "cairn"      // the native memory document (Memory.DumpJSON)
	OpenAI     Format = "openai"     // the Chat Completions message list
	Checkpoint Format = "checkpoint" // agent_profile, current_step, updated_at, variables, history
)

// Formats lists every format, in the order the CLI offers them.
var Formats = []Format{Cairn, OpenAI, Checkpoint}

// ParseFormat returns the format named s (case-insensitive).
func ParseFormat(s string) (Format, error) {
	f := Format(strings.ToLower(strings.TrimSpace(s)))
	for _, k := range Formats {
		if f == k {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown format %q (want cairn, openai or checkpoint)", s)
}

// DefaultMaxBytes is the largest input Import accepts when
// ImportOptions.MaxBytes is zero.
const DefaultMaxBytes = 64 << 20

// Report says what an export could not carry, or what an import could not
// keep or had to make up. The cairn format's reports are empty.
type Report struct {
	Format    Format
	Dropped   []string // what was lost, e.g. "token usage", "3 session variables"
	Generated []string // what an import made up, e.g. "event times set to the import time"
	Notes     []string // other facts worth telling, e.g. how the run was recorded
}

// Empty reports whether nothing was dropped, generated or noted.
func (r *Report) Empty() bool {
	return r == nil || len(r.Dropped) == 0 && len(r.Generated) == 0 && len(r.Notes) == 0
}

// String returns the report in one line, "" when it is empty.
func (r *Report) String() string {
	if r.Empty() {
		return ""
	}
	var parts []string
	if len(r.Dropped) > 0 {
		parts = append(parts, "not kept: "+strings.Join(r.Dropped, ", "))
	}
	if len(r.Generated) > 0 {
		parts = append(parts, "made up: "+strings.Join(r.Generated, ", "))
	}
	parts = append(parts, r.Notes...)
	return string(r.Format) + ": " + strings.Join(parts, "; ")
}

func (r *Report) drop(format string, args ...any) {
	r.Dropped = append(r.Dropped, fmt.Sprintf(format, args...))
}

// dropCount reports n things dropped, if there are any: format has a %s
// for their number and name, "1 run" or "3 runs".
func (r *Report) dropCount(n int, one, many, format string) {
	if n > 0 {
		r.drop(format, plural(n, one, many))
	}
}

func (r *Report) generate(format string, args ...any) {
	r.Generated = append(r.Generated, fmt.Sprintf(format, args...))
}

func (r *Report) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// ImportError says why an openai or checkpoint document was rejected and
// where: the message index in the input's list (or -1 for the document
// itself), the field within it, and the byte offset into the input where
// one is known (or -1).
type ImportError struct {
	Format Format // the format being read; "" while detecting
	Index  int    // message index, -1 when the error is not about one message
	Field  string // the JSON field at fault, such as "tool_calls[0].id"; "" when none
	Offset int64  // byte offset into the input, -1 when not known
	Msg    string // what is wrong, in words
	Err    error  // the underlying error, such as cairn.ErrTooLarge
}

// Error returns the error in one line: the format, the message index, the
// field, what is wrong and the byte offset.
func (e *ImportError) Error() string {
	s := "import"
	if e.Format != "" {
		s += " " + string(e.Format)
	}
	s += ": "
	if e.Index >= 0 {
		s += fmt.Sprintf("message %d: ", e.Index)
	}
	if e.Field != "" {
		s += `field "` + e.Field + `": `
	}
	s += e.Msg
	if e.Offset >= 0 {
		s += fmt.Sprintf(" (at byte %d)", e.Offset)
	}
	return s
}

// Unwrap returns the underlying error.
func (e *ImportError) Unwrap() error { return e.Err }

// ImportOptions tune Import.
type ImportOptions struct {
	// ID is the session ID the imported memory gets (Memory.Session.ID).
	// Empty keeps the ID of a cairn document and leaves an openai or
	// checkpoint import without a session.
	ID string
	// MaxBytes is the largest input accepted; 0 means DefaultMaxBytes.
	// A larger input is refused with an error wrapping cairn.ErrTooLarge.
	MaxBytes int
	// Limits bound each event (MaxEventBytes); zero values are the
	// cairn defaults. Import does not split the memory into appends of
	// MaxAppendEvents: a caller writing to a store with a lower limit
	// appends in batches.
	Limits cairn.Limits
	// Now is the import time, used for the event times of documents that
	// carry none; nil means time.Now.
	Now func() time.Time
	// RunID is the run ID given to the events of an openai or checkpoint
	// import; empty means a fresh cairn.NewID().
	RunID string
}

func (o ImportOptions) maxBytes() int {
	if o.MaxBytes > 0 {
		return o.MaxBytes
	}
	return DefaultMaxBytes
}

func (o ImportOptions) maxEventBytes() int {
	if o.Limits.MaxEventBytes > 0 {
		return o.Limits.MaxEventBytes
	}
	return cairn.DefaultMaxEventBytes
}

func (o ImportOptions) now() time.Time {
	if o.Now != nil {
		return o.Now().UTC()
	}
	return time.Now().UTC()
}

// Export writes m to w in format f and reports what f could not carry.
// The openai and checkpoint exports are built from the folded state, so
// resets and compaction summaries are already applied.
func Export(w io.Writer, f Format, m *cairn.Memory) (*Report, error) {
	rep := &Report{Format: f}
	switch f {
	case Cairn:
		if err := m.WriteJSON(w); err != nil {
			return nil, fmt.Errorf("export cairn: %w", err)
		}
		return rep, nil
	case OpenAI, Checkpoint:
	default:
		return nil, fmt.Errorf("export: unknown format %q (want cairn, openai or checkpoint)", f)
	}
	st, err := m.State()
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", f, err)
	}
	var doc any
	if f == OpenAI {
		doc, err = openAIExport(st, rep)
	} else {
		doc, err = checkpointExport(st, rep)
	}
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", f, err)
	}
	lossOf(m, st, rep)
	if err := writeIndented(w, doc); err != nil {
		return nil, fmt.Errorf("export %s: %w", f, err)
	}
	return rep, nil
}

// Import parses data in format f ("" detects it) and returns the memory it
// describes and a report of what was dropped or made up. The whole input is
// validated before anything is returned. Errors are *ImportError, or
// *cairn.MemoryLoadError for the cairn format.
func Import(data []byte, f Format, opts ImportOptions) (*cairn.Memory, *Report, error) {
	if f == "" {
		if len(data) > opts.maxBytes() {
			return nil, nil, &ImportError{Index: -1, Offset: -1, Err: cairn.ErrTooLarge,
				Msg: fmt.Sprintf("input is %d bytes, the limit is %d", len(data), opts.maxBytes())}
		}
		var err error
		if f, err = Detect(data); err != nil {
			return nil, nil, err
		}
	}
	if opts.ID != "" {
		if err := cairn.ValidateID(opts.ID); err != nil {
			return nil, nil, &ImportError{Format: f, Index: -1, Offset: -1, Msg: err.Error(), Err: err}
		}
	}
	switch f {
	case Cairn:
		return importCairn(data, opts)
	case OpenAI, Checkpoint:
	default:
		return nil, nil, &ImportError{Index: -1, Offset: -1, Msg: fmt.Sprintf("unknown format %q (want cairn, openai or checkpoint)", f)}
	}
	if len(data) > opts.maxBytes() {
		return nil, nil, &ImportError{Format: f, Index: -1, Offset: -1, Err: cairn.ErrTooLarge,
			Msg: fmt.Sprintf("input is %d bytes, the limit is %d", len(data), opts.maxBytes())}
	}
	if err := checkSyntax(data); err != nil {
		err.Format = f
		return nil, nil, err
	}
	list := "history"
	if f == OpenAI {
		list = "messages"
	}
	if err := checkStrict(data, list); err != nil {
		err.Format = f
		return nil, nil, err
	}
	rep := &Report{Format: f}
	var h *history
	var err error
	if f == OpenAI {
		h, err = parseOpenAI(data, rep)
	} else {
		h, err = parseCheckpoint(data, rep)
	}
	if err != nil {
		setFormat(err, f)
		return nil, nil, err
	}
	m, err := h.build(opts, rep)
	if err != nil {
		setFormat(err, f)
		return nil, nil, err
	}
	if opts.ID != "" {
		m.Session = &cairn.SessionMeta{ID: opts.ID}
	}
	return m, rep, nil
}

func setFormat(err error, f Format) {
	if ie, ok := errors.AsType[*ImportError](err); ok {
		ie.Format = f
	}
}

func importCairn(data []byte, opts ImportOptions) (*cairn.Memory, *Report, error) {
	m, err := cairn.LoadJSON(data, cairn.LoadOptions{Limits: opts.Limits, MaxDocumentBytes: opts.maxBytes()})
	if err != nil {
		return nil, nil, err
	}
	if _, err := m.State(); err != nil {
		return nil, nil, &cairn.MemoryLoadError{Index: -1, Offset: -1, Msg: err.Error(), Err: err}
	}
	if opts.ID != "" {
		meta := cairn.SessionMeta{ID: opts.ID}
		if m.Session != nil {
			meta = *m.Session
			meta.ID = opts.ID
		}
		m.Session = &meta
	}
	return m, &Report{Format: Cairn}, nil
}
