package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
)

// Row is one event of a session's timeline as the inspector shows it,
// with what the events before it say about it: the run and step it
// belongs to, the arguments and idempotency of a tool call, the agent
// change of a new run.
type Row struct {
	Seq   int64
	At    time.Time
	Kind  cairn.Kind
	Run   string
	Class string // the kind, for CSS: "model", "tool", "user", …
	Step  int    // the run's step (model call) it belongs to; 0 outside steps
	Warn  string // a warning shown with the row
	Err   string // the data did not decode

	RunStarted  *cairn.RunStarted
	RunNumber   int
	Text        string // a message's, a model response's or a summary's text
	Parts       []cairn.Part
	Response    *cairn.ModelResponse
	Started     *cairn.ToolStarted
	Result      *cairn.ToolResult
	Call        *cairn.ToolCall // the call a tool event answers
	Idempotent  bool            // no tool.started came before the result
	StartedSeq  int64           // the seq of the call's tool.started
	Set         *cairn.StateSet
	Interrupted *cairn.RunInterrupted
	Decision    *cairn.ApprovalDecided
	Finished    *cairn.RunFinished
	Compacted   *cairn.MemoryCompacted
	Custom      *cairn.Custom
}

// timeline turns events into rows, in order, remembering what the rows
// that follow need: the current run, its step, the calls asked for.
type timeline struct {
	run   string
	runs  int
	step  int
	fp    *cairn.Fingerprint
	calls map[string]callInfo
}

type callInfo struct {
	call    cairn.ToolCall
	step    int
	started int64
}

func newTimeline() *timeline { return &timeline{calls: map[string]callInfo{}} }

// skip folds in the events before the first row shown: only the kinds
// the rows after them depend on are decoded, from the run.started of the
// run the first row belongs to (and the one before it, for the agent
// change of a new run).
func (t *timeline) skip(events []cairn.Event) {
	start, runs := 0, 0
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind == cairn.KindRunStarted {
			start, runs = i, runs+1
			if runs == 2 {
				break
			}
		}
	}
	for _, e := range events[:start] {
		if e.Kind == cairn.KindRunStarted {
			t.runs++ // counted, not decoded: for the run numbers
		}
	}
	for _, e := range events[start:] {
		switch e.Kind {
		case cairn.KindRunStarted, cairn.KindModelResponse, cairn.KindToolStarted, cairn.KindMemoryReset:
			t.add(e)
		}
	}
}

// rows returns the rows of events.
func (t *timeline) rows(events []cairn.Event) []Row {
	out := make([]Row, 0, len(events))
	for _, e := range events {
		out = append(out, t.add(e))
	}
	return out
}

func (t *timeline) add(e cairn.Event) Row {
	r := Row{Seq: e.Seq, At: e.At, Kind: e.Kind, Run: e.Run, Class: kindClass(e.Kind)}
	v, err := e.Decode()
	if err != nil {
		r.Err = err.Error()
		return r
	}
	switch d := v.(type) {
	case *cairn.RunStarted:
		t.runs++
		r.RunStarted, r.RunNumber = d, t.runs
		if t.fp != nil && *t.fp != d.Fingerprint {
			r.Warn = "a different agent than the last run: " + fingerprintChange(*t.fp, d.Fingerprint)
		}
		fp := d.Fingerprint
		t.fp, t.run, t.step = &fp, d.RunID, 0
	case *cairn.MemoryReset:
		clear(t.calls)
	case *cairn.MessageSystem:
		r.Text = d.Text
	case *cairn.MessageUser:
		r.Text = d.Text()
		for _, p := range d.Parts {
			if p.Type != "text" {
				r.Parts = append(r.Parts, p)
			}
		}
	case *cairn.ModelResponse:
		t.step++
		r.Step, r.Response, r.Text = t.step, d, d.Text
		for _, c := range d.ToolCalls {
			t.calls[c.ID] = callInfo{call: c, step: t.step}
		}
	case *cairn.ToolStarted:
		r.Started = d
		if c, ok := t.calls[d.CallID]; ok {
			c.started = e.Seq
			t.calls[d.CallID] = c
			r.Step = c.step
		}
	case *cairn.ToolResult:
		r.Result, r.Idempotent = d, true
		if c, ok := t.calls[d.CallID]; ok {
			call := c.call
			r.Call, r.Step, r.StartedSeq, r.Idempotent = &call, c.step, c.started, c.started == 0
		}
		if d.IsError {
			r.Warn = "the tool reported an error"
		}
	case *cairn.StateSet:
		r.Set = d
		r.Step = t.step
	case *cairn.RunInterrupted:
		r.Interrupted = d
		switch d.Reason {
		case cairn.InterruptApproval, cairn.InterruptCancelled, cairn.InterruptImported, cairn.InterruptForked:
		default:
			r.Warn = "interrupted: " + interruptText(d.Reason)
		}
	case *cairn.ApprovalDecided:
		r.Decision = d
		if c, ok := t.calls[d.CallID]; ok {
			call := c.call
			r.Call, r.Step = &call, c.step
		}
	case *cairn.RunFinished:
		r.Finished = d
		if d.Status != cairn.StatusCompleted {
			r.Warn = "the run ended " + string(d.Status)
			if d.Error != nil {
				r.Warn += ": " + d.Error.Message
			}
		}
	case *cairn.MemoryCompacted:
		r.Compacted, r.Text = d, d.Summary
	case *cairn.Custom:
		r.Custom = d
	}
	return r
}

func kindClass(k cairn.Kind) string {
	switch k {
	case cairn.KindRunStarted, cairn.KindRunFinished, cairn.KindMemoryReset:
		return "run"
	case cairn.KindMessageSystem:
		return "system"
	case cairn.KindMessageUser:
		return "user"
	case cairn.KindModelResponse:
		return "model"
	case cairn.KindToolStarted, cairn.KindToolResult:
		return "tool"
	case cairn.KindStateSet:
		return "state"
	case cairn.KindRunInterrupted:
		return "interrupt"
	case cairn.KindApprovalDecided:
		return "approval"
	case cairn.KindMemoryCompacted:
		return "compact"
	}
	return "custom"
}

func fingerprintChange(a, b cairn.Fingerprint) string {
	var parts []string
	if a.Model != b.Model {
		parts = append(parts, fmt.Sprintf("model %s → %s", a.Model, b.Model))
	}
	if a.Instructions != b.Instructions {
		parts = append(parts, "other instructions")
	}
	if a.Tools != b.Tools {
		parts = append(parts, "other tools")
	}
	return strings.Join(parts, ", ")
}

// interruptText says why a run was interrupted, in words.
func interruptText(reason string) string {
	switch reason {
	case cairn.InterruptCancelled:
		return "cancelled"
	case cairn.InterruptApproval:
		return "waiting for a person's decision"
	case cairn.InterruptDegraded:
		return "the store could not record a step that had to be saved first"
	case cairn.InterruptLease:
		return "the lease could not be renewed in time"
	case cairn.InterruptShutdown:
		return "the process shut down"
	case cairn.InterruptImported:
		return "an imported history ends before the model's answer"
	case cairn.InterruptForked:
		return "a fork ends in the middle of the run"
	}
	return reason
}
