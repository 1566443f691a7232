package cairn

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/internal/wire"
)

// State is what a session's events add up to, computed by folding them in
// seq order with Apply. Two States folded from the same events have equal
// Snapshots, byte for byte, whatever store the events came from.
type State struct {
	Messages     []Message                  `json:"messages"`      // what a model sees, in order
	Variables    map[string]json.RawMessage `json:"variables"`     // session variables (state.set)
	Steps        int                        `json:"steps"`         // model responses and tool results, over the session's life
	Status       Status                     `json:"status"`        // where the session stands
	Usage        Usage                      `json:"usage"`         // tokens over the session's life
	Pending      []PendingCall              `json:"pending"`       // tool calls asked for that have no result yet
	Approvals    map[string]ApprovalDecided `json:"approvals"`     // decisions on calls that needed approval, by call ID
	FirstMessage string                     `json:"first_message"` // the first user message's text
	Run          string                     `json:"run"`           // the current or last run's ID
	RunSteps     int                        `json:"run_steps"`     // model responses in the current or last run
	Agent        string                     `json:"agent"`         // the agent that started the last run
	Fingerprint  Fingerprint                `json:"fingerprint"`   // that agent's fingerprint
	Output       string                     `json:"output"`        // the last finished run's output
	Error        *ErrorInfo                 `json:"error"`         // the last finished run's error
	Interrupt    string                     `json:"interrupt"`     // why the last run was interrupted, while it is
	Responses    int                        `json:"responses"`     // model responses since the last memory.reset
	CreatedAt    time.Time                  `json:"created_at"`    // the first event's time
	UpdatedAt    time.Time                  `json:"updated_at"`    // the last event's time
	LastSeq      int64                      `json:"last_seq"`      // the last event's seq
}

// Message is one entry of the conversation a model sees.
type Message struct {
	Seq        int64      `json:"seq"`                    // the event it came from
	Role       string     `json:"role"`                   // system, user, assistant or tool
	Content    string     `json:"content"`                // text
	Parts      []Part     `json:"parts,omitempty"`        // a user message's non-text parts
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`   // an assistant message's tool calls
	ToolCallID string     `json:"tool_call_id,omitempty"` // a tool message's call
	Name       string     `json:"name,omitempty"`         // a tool message's tool name; SummaryName on a compaction summary
	IsError    bool       `json:"is_error,omitempty"`     // a tool message that reports an error
}

// IsSummary reports whether m holds the summary of a compaction.
func (m Message) IsSummary() bool { return m.Role == RoleSystem && m.Name == SummaryName }

// IsInstructions reports whether m is a system message that is not a
// summary: instructions, which a compaction keeps.
func (m Message) IsInstructions() bool { return m.Role == RoleSystem && m.Name != SummaryName }

// PendingCall is a tool call a model asked for that has no result yet.
// Started is set when a tool.started event shows that a tool that is not
// idempotent began running: its outcome is unknown after a crash. Approval
// is set when a run.interrupted{approval} listed the call: it must not run
// until a person's decision is recorded (State.Approvals), whatever the
// tools of the process that resumes it say.
type PendingCall struct {
	ToolCall
	Started  bool `json:"started"`
	Approval bool `json:"approval,omitempty"`
}

// Message roles, and the name of a compaction's summary.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"

	// SummaryName is the Name of the system message that holds a
	// compaction's summary (memory.compacted), which tells it from the
	// instructions: a later compaction replaces the summary and keeps the
	// instructions. It is a valid Chat Completions message name.
	SummaryName = "cairn_summary"
)

// NewState returns the state of an empty session.
func NewState() *State {
	return &State{Variables: map[string]json.RawMessage{}, Approvals: map[string]ApprovalDecided{}, Status: StatusNew}
}

// Fold returns the state that events add up to.
func Fold(events []Event) (*State, error) {
	s := NewState()
	for _, e := range events {
		if err := s.Apply(e); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Apply folds one event into the state. Events must come in seq order; an
// event whose seq does not follow LastSeq, or whose data does not decode, is
// an error and leaves the state unchanged.
func (s *State) Apply(e Event) error {
	if e.Seq != s.LastSeq+1 {
		return fmt.Errorf("apply event: seq %d where %d comes next", e.Seq, s.LastSeq+1)
	}
	v, err := e.value()
	if err != nil {
		return fmt.Errorf("apply event seq %d (%s): %w", e.Seq, e.Kind, err)
	}
	if st := transition(s.Status, v); st != s.Status {
		s.Status, s.Interrupt = st, ""
	}
	switch d := v.(type) {
	case *RunStarted:
		s.Run, s.Agent, s.Fingerprint = d.RunID, d.Agent, d.Fingerprint
		s.Output, s.Error, s.RunSteps = "", nil, 0
	case *MemoryReset:
		s.Messages, s.Pending, s.Responses = nil, nil, 0
		s.Variables, s.Approvals = map[string]json.RawMessage{}, map[string]ApprovalDecided{}
	case *MessageSystem:
		s.Messages = append(s.Messages, Message{Seq: e.Seq, Role: RoleSystem, Content: d.Text})
	case *MessageUser:
		s.applyUser(e.Seq, d)
	case *ModelResponse:
		s.Messages = append(s.Messages, Message{Seq: e.Seq, Role: RoleAssistant, Content: d.Text, ToolCalls: d.ToolCalls})
		for _, c := range d.ToolCalls {
			s.Pending = append(s.Pending, PendingCall{ToolCall: c})
		}
		s.Usage = s.Usage.Add(d.Usage)
		s.Steps++
		s.RunSteps++
		s.Responses++
	case *ToolStarted:
		if i := s.pendingIndex(d.CallID); i >= 0 {
			s.Pending[i].Started = true
		}
	case *ToolResult:
		s.Messages = append(s.Messages, Message{Seq: e.Seq, Role: RoleTool, Content: d.Output, ToolCallID: d.CallID, Name: d.Name, IsError: d.IsError})
		if i := s.pendingIndex(d.CallID); i >= 0 {
			s.Pending = slices.Delete(s.Pending, i, i+1)
		}
		s.Steps++
	case *StateSet:
		maps.Copy(s.Variables, d.Set)
		for _, k := range d.Deleted {
			delete(s.Variables, k)
		}
	case *RunInterrupted:
		s.Interrupt = d.Reason
		if d.Reason == InterruptApproval {
			for _, c := range d.Pending {
				if i := s.pendingIndex(c.ID); i >= 0 {
					s.Pending[i].Approval = true
				}
			}
		}
	case *ApprovalDecided:
		s.Approvals[d.CallID] = *d
	case *RunFinished:
		s.Output, s.Error, s.Interrupt = d.Output, d.Error, ""
	case *MemoryCompacted:
		s.compact(e.Seq, d)
	case *Custom:
		// An application's own step: recorded in the history, not folded.
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = e.At
	}
	s.UpdatedAt, s.LastSeq = e.At, e.Seq
	return nil
}

// maxFirstMessage is how much of the first user message a State and a
// SessionInfo keep (driver.MaxFirstMessage).
const maxFirstMessage = 200

// transition returns a session's status after an event whose data is v,
// from status cur: the one table of status changes, which State.Apply and
// SessionInfo.Apply (a store's listing) both follow.
func transition(cur Status, v any) Status {
	switch d := v.(type) {
	case *RunStarted:
		return StatusRunning
	case *ModelResponse, *ToolStarted, *ToolResult:
		return StatusRunning // a step: a resumed run is running again
	case *RunInterrupted:
		if d.Reason == InterruptApproval {
			return StatusAwaiting
		}
		return StatusInterrupted
	case *RunFinished:
		return Status(d.Status)
	}
	return cur
}

// Apply folds one event into a session's info, as a store does for each
// event it appends, by the rules State.Apply follows: the status (the same
// table of changes), the steps, the first user message, the last seq and
// the updated time (the event's). It returns an error, and leaves info as
// it was, for an event whose data does not decode.
func (i *SessionInfo) Apply(e Event) error {
	v, err := e.value()
	if err != nil {
		return fmt.Errorf("apply event seq %d (%s): %w", e.Seq, e.Kind, err)
	}
	i.Status = transition(i.Status, v)
	switch d := v.(type) {
	case *ModelResponse, *ToolResult:
		i.Steps++
	case *MessageUser:
		if i.FirstMessage == "" {
			i.FirstMessage = text.Truncate(d.Text(), maxFirstMessage)
		}
	}
	i.LastSeq, i.UpdatedAt = e.Seq, e.At
	return nil
}

func (s *State) applyUser(seq int64, d *MessageUser) {
	m := Message{Seq: seq, Role: RoleUser, Content: d.Text()}
	for _, p := range d.Parts {
		if p.Type != "text" {
			m.Parts = append(m.Parts, p)
		}
	}
	s.Messages = append(s.Messages, m)
	if s.FirstMessage == "" {
		s.FirstMessage = text.Truncate(m.Content, maxFirstMessage)
	}
}

// compact folds a memory.compacted: the messages up to d.UpTo are
// replaced by one system message holding the summary (Name SummaryName),
// except the instructions (system messages that are not a summary), which
// stay first, in order. The summary follows them, then the messages after
// d.UpTo. An earlier summary is replaced, wherever its seq stands: the new
// summary is the one that holds what came before.
func (s *State) compact(seq int64, d *MemoryCompacted) {
	var kept, later []Message
	for _, m := range s.Messages {
		switch {
		case m.IsSummary():
		case m.IsInstructions() && m.Seq <= d.UpTo:
			kept = append(kept, m)
		case m.Seq > d.UpTo:
			later = append(later, m)
		}
	}
	kept = append(kept, Message{Seq: seq, Role: RoleSystem, Content: d.Summary, Name: SummaryName})
	s.Messages = append(kept, later...)
}

func (s *State) pendingIndex(callID string) int {
	return slices.IndexFunc(s.Pending, func(p PendingCall) bool { return p.ID == callID })
}

// Var decodes the variable key into v. It reports whether the variable is set.
func (s *State) Var(key string, v any) (bool, error) {
	raw, ok := s.Variables[key]
	if !ok {
		return false, nil
	}
	return true, json.Unmarshal(raw, v)
}

// Snapshot returns the state as canonical JSON: object keys sorted at every
// level, no insignificant white space, numbers as written. A session loaded
// from any store has the same snapshot as the session that saved it.
func (s *State) Snapshot() ([]byte, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return wire.Canonical(raw)
}

// Clone returns a deep copy of the state.
func (s *State) Clone() *State {
	c := *s
	c.Messages = slices.Clone(s.Messages)
	c.Pending = slices.Clone(s.Pending)
	c.Variables = maps.Clone(s.Variables)
	c.Approvals = maps.Clone(s.Approvals)
	return &c
}
