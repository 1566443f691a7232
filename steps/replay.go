package steps

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/text"
)

// The custom types of a step's events (cairn.Custom.Type).
const (
	// TypeStep is a step's result: a Record with its Result or its Error.
	TypeStep = "cairn.step"
	// TypeStarted is the start of a step marked NotIdempotent, recorded
	// before the step runs: a Record with its Name and Step only.
	TypeStarted = "cairn.step.started"
)

// Record is the payload of a step's custom event (TypeStep, TypeStarted):
// its stable JSON form. Result is the step's result as JSON; Error, when
// the step failed, replaces it.
type Record struct {
	Name       string          `json:"name"`                  // the step's name
	Step       int             `json:"step"`                  // its position in the run, from 1
	Result     json.RawMessage `json:"result,omitempty"`      // the result, as JSON
	Error      *StepError      `json:"error,omitempty"`       // the error, when the step failed
	Retry      bool            `json:"retry,omitempty"`       // the failure was Retryable: a re-run that meets it last runs the step again
	Resolved   bool            `json:"resolved,omitempty"`    // recorded by Resolve or ResolveError: the caller's decision after an unknown outcome
	DurationMS int64           `json:"duration_ms,omitempty"` // how long the step's function ran
}

// DecodeRecord decodes the payload of a TypeStep or TypeStarted event
// strictly: unknown fields, a missing name or a step below 1 are errors.
func DecodeRecord(payload json.RawMessage) (*Record, error) {
	var r Record
	d := json.NewDecoder(bytes.NewReader(payload))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("data after the record")
	}
	switch {
	case r.Name == "":
		return nil, fmt.Errorf("the record has no name")
	case r.Step < 1:
		return nil, fmt.Errorf("the record's step is %d; steps count from 1", r.Step)
	}
	return &r, nil
}

// recKind is what a recorded step is.
type recKind int

const (
	recStep recKind = iota
	recStarted
	recModel
	recToolStarted
	recToolResult
	recUser
	recSystem
	recFinished
)

// rec is one recorded step: an event the loop's calls are matched with, in
// order, with its data decoded.
type rec struct {
	kind recKind
	e    cairn.Event
	step *Record // recStep, recStarted

	model    *cairn.ModelResponse
	started  *cairn.ToolStarted
	result   *cairn.ToolResult
	text     string // a message's text
	finished *cairn.RunFinished
}

// position reports whether e is a recorded step, and decodes it. The other
// events (run.started, state.set, run.interrupted, an application's own
// custom types, …) are passed over by the replay, folded into the state.
func position(e cairn.Event) (*rec, bool, error) {
	switch e.Kind {
	case cairn.KindCustom, cairn.KindModelResponse, cairn.KindToolStarted, cairn.KindToolResult,
		cairn.KindMessageUser, cairn.KindMessageSystem, cairn.KindRunFinished:
	default:
		return nil, false, nil
	}
	v, err := e.Decode()
	if err != nil {
		return nil, false, fmt.Errorf("seq %d (%s): %w", e.Seq, e.Kind, err)
	}
	r := &rec{e: e}
	switch d := v.(type) {
	case *cairn.Custom:
		switch d.Type {
		case TypeStep:
			r.kind = recStep
		case TypeStarted:
			r.kind = recStarted
		default:
			return nil, false, nil
		}
		if r.step, err = DecodeRecord(d.Payload); err != nil {
			return nil, false, fmt.Errorf("seq %d (custom %s): %w", e.Seq, d.Type, err)
		}
	case *cairn.ModelResponse:
		r.kind, r.model = recModel, d
	case *cairn.ToolStarted:
		r.kind, r.started = recToolStarted, d
	case *cairn.ToolResult:
		r.kind, r.result = recToolResult, d
	case *cairn.MessageUser:
		r.kind, r.text = recUser, d.Text()
	case *cairn.MessageSystem:
		r.kind, r.text = recSystem, d.Text
	case *cairn.RunFinished:
		r.kind, r.finished = recFinished, d
	}
	return r, true, nil
}

// describe says what r records, for a *MismatchError.
func (r *rec) describe() string {
	switch r.kind {
	case recStep:
		return fmt.Sprintf("step %q", r.step.Name)
	case recStarted:
		return fmt.Sprintf("the start of step %q", r.step.Name)
	case recModel:
		return "a model call"
	case recToolStarted:
		return fmt.Sprintf("the start of tool %q call %s", r.started.Name, r.started.CallID)
	case recToolResult:
		return fmt.Sprintf("tool %q call %s", r.result.Name, r.result.CallID)
	case recUser:
		return fmt.Sprintf("a user message %q", text.Truncate(r.text, 60))
	case recSystem:
		return fmt.Sprintf("a system message %q", text.Truncate(r.text, 60))
	}
	return "the end of the run"
}

// event returns the event of seq, which the memory holds.
func (s *Session) event(seq int64) cairn.Event {
	return s.mem.Event(int(seq - s.mem.Base() - 1))
}

// next folds the events ahead of the cursor up to the next recorded step
// and returns it, without passing it; nil when the loop is at the end of
// the history. With s.mu held.
func (s *Session) next() (*rec, error) {
	for s.pos < s.mem.LastSeq() {
		e := s.event(s.pos + 1)
		r, ok, err := position(e)
		if err != nil {
			return nil, fmt.Errorf("session %s: %w", s.id, err)
		}
		if ok {
			return r, nil
		}
		if err := s.apply(e); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// pass moves the cursor over the recorded step r and the state.set events
// recorded with it (right after it). The variables the loop set before
// the step are among them: they are no longer pending. With s.mu held.
func (s *Session) pass(r *rec) error {
	if err := s.apply(r.e); err != nil {
		return err
	}
	for s.pos < s.mem.LastSeq() {
		e := s.event(s.pos + 1)
		if e.Kind != cairn.KindStateSet {
			break
		}
		if err := s.apply(e); err != nil {
			return err
		}
	}
	s.pend, s.open = change{}, nil
	return nil
}

func (s *Session) apply(e cairn.Event) error {
	if err := s.state.Apply(e); err != nil {
		return fmt.Errorf("session %s: %w", s.id, err)
	}
	s.pos = e.Seq
	return nil
}

// mismatch returns the error for asking for asked where r is recorded: a
// *MismatchError, or, where the run recorded its end, an error wrapping
// ErrFinished (the first run ended there, after a failure it did not
// record, such as a model call's).
func (s *Session) mismatch(step int, asked string, r *rec) error {
	if r.kind == recFinished {
		how := string(r.finished.Status)
		if r.finished.Error != nil {
			how += ": " + r.finished.Error.Message
		}
		return fmt.Errorf("session %s, step %d: the loop asks for %s where the run recorded its end (seq %d, %s): %w",
			s.id, step, asked, r.e.Seq, how, ErrFinished)
	}
	return &MismatchError{Session: s.id, Step: step, Asked: asked, Recorded: r.describe(), Seq: r.e.Seq}
}

// finished reports whether the loop's run has ended (Finish or Fail
// recorded and passed).
func (s *Session) finished() bool {
	return s.state.Run != "" && finishedStatus(s.state.Status)
}
