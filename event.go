package cairn

import (
	"encoding/json"
	"fmt"
	"time"
)

// Kind names what an event records. The set is closed: an unknown kind is an
// error on load, except KindCustom, which carries an application's own
// namespaced type.
type Kind string

// The event kinds of format version 1.
const (
	KindRunStarted      Kind = "run.started"      // a run begins
	KindMemoryReset     Kind = "memory.reset"     // a run starts fresh; earlier events stay for audit
	KindMessageSystem   Kind = "message.system"   // instructions enter the history
	KindMessageUser     Kind = "message.user"     // a person's or caller's input
	KindModelResponse   Kind = "model.response"   // think: a model call returned
	KindToolStarted     Kind = "tool.started"     // act begins for a tool that is not idempotent
	KindToolResult      Kind = "tool.result"      // act: a tool call finished
	KindStateSet        Kind = "state.set"        // variables changed
	KindRunInterrupted  Kind = "run.interrupted"  // cancel, approval needed, store degraded
	KindApprovalDecided Kind = "approval.decided" // a person approved or denied a pending call
	KindRunFinished     Kind = "run.finished"     // a run ended
	KindMemoryCompacted Kind = "memory.compacted" // old turns were summarised
	KindCustom          Kind = "custom"           // an application's own typed step
)

// Event is one immutable record in a session's history. Its JSON form is the
// envelope {"v":1,"seq":N,"at":"…","kind":"…","run":"…","data":{…}}. Seq
// starts at 1 and is dense; At is UTC. Data holds the kind's payload as
// JSON; decode it with Decode or the typed accessors of each data type.
type Event struct {
	V    int             `json:"v"`
	Seq  int64           `json:"seq"`
	At   time.Time       `json:"at"`
	Kind Kind            `json:"kind"`
	Run  string          `json:"run"`
	Data json.RawMessage `json:"data"`

	// dec is Data decoded and checked by the check that first decoded it
	// (ValidateEvents, Memory.Add, NewMemory): the later checks of the
	// same event, and the folds, use it instead of decoding again. Copies
	// of the event share it; it stands only while Data is the very slice
	// it was decoded from.
	dec *decoded
}

// decoded is an event's data as its check decoded it.
type decoded struct {
	data []byte
	v    any
}

// value returns e's data decoded, as a check of e recorded it when Data
// is unchanged since, and otherwise decodes it and records it in e. The
// value is shared: read it, never change it.
func (e *Event) value() (any, error) {
	if e.checked() {
		return e.dec.v, nil
	}
	spec, ok := kindSpecs[e.Kind]
	if !ok {
		return nil, fmt.Errorf("unknown event kind %q", e.Kind)
	}
	v, err := spec.decode(e.Data)
	if err != nil {
		return nil, err
	}
	e.dec = &decoded{data: e.Data, v: v}
	return v, nil
}

// checked reports whether a check of e recorded its data decoded.
func (e *Event) checked() bool {
	d := e.dec
	return d != nil && len(d.data) == len(e.Data) && (len(d.data) == 0 || &d.data[0] == &e.Data[0])
}

// NewEvent builds an event of the given kind whose data is v encoded as
// JSON. The seq is left at zero: Memory.Add and the agent number events as
// they append them. At is the current time in UTC.
func NewEvent(kind Kind, run string, v any) (Event, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return Event{}, fmt.Errorf("new %s event: %w", kind, err)
	}
	return Event{V: FormatVersion, At: time.Now().UTC(), Kind: kind, Run: run, Data: data}, nil
}

// MustEvent is NewEvent for data that cannot fail to encode (the data types
// of this package); it panics on an encoding error.
func MustEvent(kind Kind, run string, v any) Event {
	e, err := NewEvent(kind, run, v)
	if err != nil {
		panic(err)
	}
	return e
}

// Size is the length of the event's JSON envelope in bytes, near enough for
// limits: the data plus the fixed fields.
func (e Event) Size() int {
	return len(e.Data) + len(e.Kind) + len(e.Run) + 80
}

// Decode decodes the event's data into the typed value for its kind (for
// example *ModelResponse for KindModelResponse), checking every field
// strictly: unknown, missing and mistyped fields are errors.
func (e Event) Decode() (any, error) {
	spec, ok := kindSpecs[e.Kind]
	if !ok {
		return nil, fmt.Errorf("unknown event kind %q", e.Kind)
	}
	return spec.decode(e.Data)
}

// The data of each kind. Field tags without omitempty are required on load.

// RunStarted is the data of KindRunStarted.
type RunStarted struct {
	RunID       string      `json:"run_id"`
	Agent       string      `json:"agent"`
	Fingerprint Fingerprint `json:"fingerprint"`
	Model       string      `json:"model"`
	Reset       bool        `json:"reset"`
}

// Fingerprint identifies the agent that ran a session: its model, a hash of
// its instructions and a hash of its tools' names and schemas.
type Fingerprint struct {
	Model        string `json:"model"`
	Instructions string `json:"instructions"`
	Tools        string `json:"tools"`
}

// MemoryReset is the data of KindMemoryReset.
type MemoryReset struct{}

// MessageSystem is the data of KindMessageSystem.
type MessageSystem struct {
	Text string `json:"text"`
}

// MessageUser is the data of KindMessageUser.
type MessageUser struct {
	Parts []Part `json:"parts"`
}

// Part is one piece of a user message: text today, with room for images and
// files (a MIME type and a URL or inline data).
type Part struct {
	Type string `json:"type"` // "text", "image", "file"
	Text string `json:"text,omitempty"`
	MIME string `json:"mime,omitempty"`
	URL  string `json:"url,omitempty"`
	Data []byte `json:"data,omitempty"`
}

// Text returns the concatenated text parts of the message.
func (m MessageUser) Text() string {
	s := ""
	for _, p := range m.Parts {
		if p.Type == "text" {
			s += p.Text
		}
	}
	return s
}

// ModelResponse is the data of KindModelResponse: one completed think step.
type ModelResponse struct {
	Text         string     `json:"text"`
	ToolCalls    []ToolCall `json:"tool_calls"`
	Model        string     `json:"model"`
	Usage        Usage      `json:"usage"`
	FinishReason string     `json:"finish_reason"`
	LatencyMS    int64      `json:"latency_ms"`
}

// ToolCall is a model's request to run one tool.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// Usage counts the tokens of model calls.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// Add returns the sum of u and o.
func (u Usage) Add(o Usage) Usage {
	return Usage{InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens}
}

// ToolStarted is the data of KindToolStarted, written before a tool that is
// not idempotent runs.
type ToolStarted struct {
	CallID string          `json:"call_id"`
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args"`
}

// ToolResult is the data of KindToolResult: one completed act step.
type ToolResult struct {
	CallID     string `json:"call_id"`
	Name       string `json:"name"`
	Output     string `json:"output"`
	IsError    bool   `json:"is_error"`
	DurationMS int64  `json:"duration_ms"`
}

// StateSet is the data of KindStateSet.
type StateSet struct {
	Set     map[string]json.RawMessage `json:"set"`
	Deleted []string                   `json:"deleted"`
}

// RunInterrupted is the data of KindRunInterrupted. Pending lists the tool
// calls asked for that have no result; for InterruptApproval it lists the
// calls that wait for a person's decision, and every process must leave
// those calls unrun until a decision is recorded (State marks them
// PendingCall.Approval).
type RunInterrupted struct {
	Reason  string     `json:"reason"` // InterruptCancelled, InterruptApproval, …
	Pending []ToolCall `json:"pending"`
}

// Reasons recorded in RunInterrupted.
const (
	InterruptCancelled = "cancelled"
	InterruptApproval  = "approval"
	InterruptDegraded  = "store_degraded" // the store could not record a step that must be durable
	InterruptLease     = "lease_expired"  // the holder's lease could not be renewed in time
	InterruptShutdown  = "shutdown"
	InterruptImported  = "imported" // an imported history ends before the model's answer
	InterruptForked    = "forked"   // a fork ends in the middle of a run
)

// ApprovalDecided is the data of KindApprovalDecided.
type ApprovalDecided struct {
	CallID   string `json:"call_id"`
	Approved bool   `json:"approved"`
	Note     string `json:"note"`
}

// RunFinished is the data of KindRunFinished.
type RunFinished struct {
	Status Status     `json:"status"` // StatusCompleted, StatusFailed or StatusMaxSteps
	Output string     `json:"output"`
	Error  *ErrorInfo `json:"error,omitempty"`
}

// ErrorInfo is the persisted form of an error: a stable code and a message.
type ErrorInfo struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// MemoryCompacted is the data of KindMemoryCompacted: the messages up to
// and including seq UpTo are replaced, for the model, by Summary, except
// the instructions (message.system), which stay first. The State holds the
// summary as a system message named SummaryName after the instructions; a
// later compaction replaces it. The events themselves stay in the history.
type MemoryCompacted struct {
	Summary string `json:"summary"`
	UpTo    int64  `json:"up_to"`
}

// Custom is the data of KindCustom: an application's own step, with a
// namespaced type such as "myapp.search" and any JSON payload.
type Custom struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}
