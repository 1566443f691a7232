package sessions

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
)

// InterruptImported is the reason recorded in the run.interrupted event of
// an imported history that ends before the model's final answer: a tool
// call without a result, or a user, system or tool message still to be
// answered. Resuming the session finishes the run.
const InterruptImported = "imported"

// history is an openai or checkpoint document once parsed, before it
// becomes events.
type history struct {
	msgs     []message
	agent    string                     // the run's agent name
	vars     map[string]json.RawMessage // variables to set, nil for none
	varOff   map[string]int64           // offset of each variable's value
	at       time.Time                  // the time given to every event; zero: the import time
	steps    int                        // the step count the document claims
	hasSteps bool                       // whether it claims one
	byName   bool                       // tool results without a call ID are matched by tool name
}

// message is one entry of an imported history.
type message struct {
	index   int   // position in the input's list
	off     int64 // byte offset of the message
	role    string
	text    string
	parts   []cairn.Part // a user message's parts; nil: one text part
	calls   []call       // an assistant message's tool calls
	callID  string       // a tool message's call; "" to match by name
	name    string       // a tool message's tool name, "" if not given
	isError bool         // a tool message that reports an error
	summary bool         // a compaction summary: becomes memory.compacted
}

// markSummary marks m as a compaction summary when it is one as an export
// writes it: a system message named cairn.SummaryName that follows only
// instructions (system messages). Such a message is imported as a
// memory.compacted event, so that the summary folds as it did; a message
// so named anywhere else is an ordinary system message whose name is
// dropped. It reports whether m is a summary.
func markSummary(m *message, before []message) bool {
	if m.role != cairn.RoleSystem || m.name != cairn.SummaryName {
		return false
	}
	for _, b := range before {
		if b.role != cairn.RoleSystem || b.summary {
			return false
		}
	}
	m.summary = true
	return true
}

// call is one tool call of an assistant message; id may be empty when the
// document allows it (a generated one is given).
type call struct {
	id   string
	name string
	args json.RawMessage
	off  int64
}

// build turns the history into the events a run would have written and
// checks them: every tool message answers an earlier, unanswered call;
// every event fits the limits; the memory folds.
func (h *history) build(opts ImportOptions, rep *Report) (*cairn.Memory, error) {
	at := h.at
	if at.IsZero() {
		at = opts.now()
		rep.generate("event times set to the import time (%s)", at.Format(time.RFC3339))
	} else {
		rep.generate("event times set to updated_at (%s)", at.Format(time.RFC3339Nano))
	}
	run := opts.RunID
	if run == "" {
		run = cairn.NewID()
	}
	rep.generate("one run around the history (run %s)", run)
	b := &builder{h: h, run: run, at: at, known: map[string]bool{}, answered: map[string]int{}}
	for _, m := range h.msgs {
		for _, c := range m.calls {
			b.known[c.id] = true
		}
	}
	b.add(-1, cairn.KindRunStarted, cairn.RunStarted{RunID: run, Agent: h.agent})
	for _, m := range h.msgs {
		if err := b.message(m); err != nil {
			return nil, err
		}
	}
	if b.generated > 0 {
		rep.generate("%s generated", plural(b.generated, "tool call ID", "tool call IDs"))
	}
	if b.matched > 0 {
		rep.generate("%s by tool name", plural(b.matched, "tool result matched to its call", "tool results matched to their calls"))
	}
	if err := b.variables(opts.maxEventBytes()); err != nil {
		return nil, err
	}
	b.finish(rep)
	if h.hasSteps && h.steps != b.steps {
		rep.drop("current_step %d (the imported history counts %d steps)", h.steps, b.steps)
	}
	return b.memory(opts.maxEventBytes())
}

type builder struct {
	h         *history
	run       string
	at        time.Time
	events    []cairn.Event
	src       []int // the message index each event came from, -1 for none
	pending   []call
	known     map[string]bool // every call ID the input names
	answered  map[string]int  // call ID -> the message that answered it
	generated int
	matched   int
	steps     int
}

func (b *builder) add(index int, kind cairn.Kind, data any) {
	e := cairn.MustEvent(kind, b.run, data)
	e.At = b.at
	b.events = append(b.events, e)
	b.src = append(b.src, index)
}

func (b *builder) message(m message) error {
	switch m.role {
	case cairn.RoleSystem:
		if m.summary {
			// Up to the last event: only instructions precede it, and a
			// compaction keeps them, before the summary.
			b.add(m.index, cairn.KindMemoryCompacted, cairn.MemoryCompacted{Summary: m.text, UpTo: int64(len(b.events))})
			return nil
		}
		b.add(m.index, cairn.KindMessageSystem, cairn.MessageSystem{Text: m.text})
	case cairn.RoleUser:
		parts := m.parts
		if parts == nil {
			parts = []cairn.Part{{Type: "text", Text: m.text}}
		}
		b.add(m.index, cairn.KindMessageUser, cairn.MessageUser{Parts: parts})
	case cairn.RoleAssistant:
		return b.assistant(m)
	case cairn.RoleTool:
		return b.tool(m)
	default:
		return &ImportError{Index: m.index, Field: "role", Offset: m.off, Msg: fmt.Sprintf("unknown role %q", m.role)}
	}
	return nil
}

func (b *builder) assistant(m message) error {
	calls := make([]cairn.ToolCall, 0, len(m.calls))
	for j, c := range m.calls {
		if c.id == "" {
			c.id = b.newID(m.index, j)
		}
		if b.pendingIndex(c.id) >= 0 {
			return &ImportError{Index: m.index, Field: index("tool_calls", j) + ".id", Offset: c.off,
				Msg: fmt.Sprintf("tool call ID %q is already waiting for a result", c.id)}
		}
		b.pending = append(b.pending, c)
		calls = append(calls, cairn.ToolCall{ID: c.id, Name: c.name, Args: c.args})
	}
	reason := "stop"
	if len(calls) > 0 {
		reason = "tool_calls"
	}
	b.add(m.index, cairn.KindModelResponse, cairn.ModelResponse{Text: m.text, ToolCalls: calls, FinishReason: reason})
	b.steps++
	return nil
}

func (b *builder) newID(msg, j int) string {
	for n := 0; ; n++ {
		id := fmt.Sprintf("call_%d_%d", msg, j)
		if n > 0 {
			id += fmt.Sprintf("_%d", n)
		}
		if !b.known[id] {
			b.known[id] = true
			b.generated++
			return id
		}
	}
}

func (b *builder) pendingIndex(id string) int {
	return slices.IndexFunc(b.pending, func(c call) bool { return c.id == id })
}

func (b *builder) tool(m message) error {
	i := -1
	if m.callID != "" {
		i = b.pendingIndex(m.callID)
		if i < 0 {
			msg := fmt.Sprintf("tool message answers call %q, which no earlier assistant message asked for", m.callID)
			if prev, ok := b.answered[m.callID]; ok {
				msg = fmt.Sprintf("tool message answers call %q, which message %d already answered", m.callID, prev)
			}
			return &ImportError{Index: m.index, Field: "tool_call_id", Offset: m.off, Msg: msg}
		}
	} else if b.h.byName {
		i = slices.IndexFunc(b.pending, func(c call) bool { return m.name == "" || c.name == m.name })
		if i < 0 {
			what := "any tool"
			if m.name != "" {
				what = fmt.Sprintf("tool %q", m.name)
			}
			return &ImportError{Index: m.index, Field: "name", Offset: m.off,
				Msg: fmt.Sprintf("tool message answers no earlier tool call: no call to %s is waiting for a result", what)}
		}
		b.matched++
	} else {
		return &ImportError{Index: m.index, Field: "tool_call_id", Offset: m.off, Msg: "is missing: a tool message must name the call it answers"}
	}
	c := b.pending[i]
	if m.name != "" && m.name != c.name {
		return &ImportError{Index: m.index, Field: "name", Offset: m.off,
			Msg: fmt.Sprintf("tool message names tool %q, but call %q is for %q", m.name, c.id, c.name)}
	}
	b.pending = slices.Delete(b.pending, i, i+1)
	b.answered[c.id] = m.index
	b.add(m.index, cairn.KindToolResult, cairn.ToolResult{CallID: c.id, Name: c.name, Output: m.text, IsError: m.isError})
	b.steps++
	return nil
}

// variables adds state.set events for the variables, as few as the event
// size limit allows.
func (b *builder) variables(limit int) error {
	keys := make([]string, 0, len(b.h.vars))
	for k := range b.h.vars {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	set, size := map[string]json.RawMessage{}, 0
	for _, k := range keys {
		v := b.h.vars[k]
		n := len(k) + len(v) + 8
		if n+200 > limit {
			return &ImportError{Index: -1, Field: "variables." + k, Offset: b.h.varOff[k], Err: cairn.ErrTooLarge,
				Msg: fmt.Sprintf("variable is %d bytes, the event limit is %d", len(v), limit)}
		}
		if size+n+200 > limit {
			b.add(-1, cairn.KindStateSet, cairn.StateSet{Set: set})
			set, size = map[string]json.RawMessage{}, 0
		}
		set[k] = v
		size += n
	}
	if len(set) > 0 {
		b.add(-1, cairn.KindStateSet, cairn.StateSet{Set: set})
	}
	return nil
}

// finish ends the run: finished when the history ends with the model's
// answer, interrupted when something is still to be answered.
func (b *builder) finish(rep *Report) {
	last := ""
	var lastText string
	if n := len(b.h.msgs); n > 0 {
		last, lastText = b.h.msgs[n-1].role, b.h.msgs[n-1].text
	}
	switch {
	case len(b.pending) > 0:
		pending := make([]cairn.ToolCall, len(b.pending))
		for i, c := range b.pending {
			pending[i] = cairn.ToolCall{ID: c.id, Name: c.name, Args: c.args}
		}
		b.add(-1, cairn.KindRunInterrupted, cairn.RunInterrupted{Reason: InterruptImported, Pending: pending})
		rep.note("%s without a result: the run is recorded as interrupted; resume the session to run them", plural(len(pending), "tool call", "tool calls"))
	case last == "" || last == cairn.RoleAssistant:
		b.add(-1, cairn.KindRunFinished, cairn.RunFinished{Status: cairn.StatusCompleted, Output: lastText})
	default:
		b.add(-1, cairn.KindRunInterrupted, cairn.RunInterrupted{Reason: InterruptImported, Pending: []cairn.ToolCall{}})
		rep.note("the history ends with a %s message: the run is recorded as interrupted; resume the session for the model's answer", last)
	}
}

// memory numbers the events, checks their sizes and validity, and folds
// them once so that the caller gets a memory that certainly loads.
func (b *builder) memory(limit int) (*cairn.Memory, error) {
	for i := range b.events {
		e := &b.events[i]
		e.V, e.Seq = cairn.FormatVersion, int64(i)+1
		if n := e.Size(); n > limit {
			return nil, &ImportError{Index: b.src[i], Offset: b.offset(i), Err: cairn.ErrTooLarge,
				Msg: fmt.Sprintf("as a %s event this is %d bytes, the limit is %d", e.Kind, n, limit)}
		}
	}
	m, err := cairn.NewMemory(b.events...)
	if err != nil {
		return nil, b.eventError(err)
	}
	if _, err := m.State(); err != nil {
		return nil, b.eventError(err)
	}
	return m, nil
}

func (b *builder) offset(i int) int64 {
	if b.src[i] < 0 {
		return -1
	}
	return b.h.msgs[b.msgAt(b.src[i])].off
}

// msgAt finds the position in msgs of the message with input index idx.
func (b *builder) msgAt(idx int) int {
	return slices.IndexFunc(b.h.msgs, func(m message) bool { return m.index == idx })
}

// eventError turns a validation error of the built events into an
// ImportError naming the message the event came from.
func (b *builder) eventError(err error) error {
	ie := &ImportError{Index: -1, Offset: -1, Msg: err.Error(), Err: err}
	for i, e := range b.events {
		if _, err := cairn.ValidateEvents([]cairn.Event{e}, int64(i)+1); err != nil {
			ie.Index, ie.Offset = b.src[i], b.offset(i)
			break
		}
	}
	return ie
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// sentence joins names for a report: "a, b and c".
func sentence(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
