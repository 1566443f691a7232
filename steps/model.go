package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/telemetry"
)

// CodeToolError is the code of a tool step's error returned on a re-run:
// the recorded tool.result's output, marked is_error.
const CodeToolError = "tool_error"

// Model runs a model call as a step of the loop: call on the first run,
// recorded as a model.response event (its text, tool calls, model, usage,
// finish reason and latency), and the recorded response on a re-run. The
// response's tool calls get unique IDs and JSON object arguments, as the
// history requires; Model returns the response as recorded, so the loop
// answers the calls with those IDs (Tool). A call's latency, when it
// reports none, is measured.
//
// A failed model call is not recorded: it is made again on a re-run. After
// a failure the loop should call the model again or end the run (Fail); a
// loop that records other steps after a failure meets a *MismatchError on
// a re-run, which makes the model call there again.
func Model(ctx context.Context, s *Session, call func(context.Context) (cairn.ModelResponse, error)) (cairn.ModelResponse, error) {
	if call == nil {
		return cairn.ModelResponse{}, fmt.Errorf("session %s: a model step needs a function", s.id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for tries := 1; ; tries++ {
		if err := s.ready(ctx); err != nil {
			return cairn.ModelResponse{}, err
		}
		resp, again, err := s.model1(ctx, call)
		if again && tries < maxTries {
			continue
		}
		return resp, err
	}
}

func (s *Session) model1(ctx context.Context, call func(context.Context) (cairn.ModelResponse, error)) (cairn.ModelResponse, bool, error) {
	k := s.step + 1
	r, err := s.next()
	if err != nil {
		return cairn.ModelResponse{}, false, err
	}
	if r != nil {
		if r.kind != recModel {
			return cairn.ModelResponse{}, false, s.mismatch(k, "a model call", r)
		}
		if err := s.pass(r); err != nil {
			return cairn.ModelResponse{}, false, err
		}
		s.step = k
		return cloneResponse(*r.model), false, nil
	}
	if s.finished() {
		return cairn.ModelResponse{}, false, fmt.Errorf("session %s, model call: %w", s.id, ErrFinished)
	}
	seq := s.mem.LastSeq() + 1 // near enough the response's: unique in the session
	out, again, err := s.execute(ctx, attempt{
		name: "model call", k: k,
		run: func(ctx context.Context) ([]byte, error) {
			begin := time.Now()
			chat := s.tel.StartChat(ctx, s.id, "")
			resp, err := call(chat.Context())
			if err != nil {
				chat.End("", "", 0, 0, nil, err)
				return nil, &notRecorded{err}
			}
			if resp.LatencyMS == 0 {
				resp.LatencyMS = time.Since(begin).Milliseconds()
			}
			resp = normalize(resp, seq)
			chat.SetModel(resp.Model)
			chat.End(resp.Model, resp.FinishReason, resp.Usage.InputTokens, resp.Usage.OutputTokens,
				func() string { return telemetry.OutputMessagesJSON(resp.Text, resp.ToolCalls, resp.FinishReason) }, nil)
			return json.Marshal(resp)
		},
		result: func(out []byte, err error, _ time.Duration) (cairn.Event, bool) {
			var resp cairn.ModelResponse
			if err := json.Unmarshal(out, &resp); err != nil {
				return cairn.Event{}, false
			}
			return cairn.MustEvent(cairn.KindModelResponse, "", resp), true
		},
	})
	if err != nil {
		var nr *notRecorded
		if errors.As(err, &nr) {
			err = nr.err // the model's own error, as the call returned it
		}
		return cairn.ModelResponse{}, again, err
	}
	var resp cairn.ModelResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		return cairn.ModelResponse{}, false, err
	}
	return resp, false, nil
}

// normalize gives every tool call an ID unique in the session and a JSON
// object of arguments, and the response a finish reason.
func normalize(resp cairn.ModelResponse, seq int64) cairn.ModelResponse {
	resp.ToolCalls = slices.Clone(resp.ToolCalls)
	seen := map[string]bool{}
	for i := range resp.ToolCalls {
		c := &resp.ToolCalls[i]
		if c.ID == "" || seen[c.ID] {
			c.ID = fmt.Sprintf("call_%d_%d", seq, i)
		}
		seen[c.ID] = true
		switch {
		case len(c.Args) == 0 || string(c.Args) == "null":
			c.Args = json.RawMessage("{}")
		case !json.Valid(c.Args):
			// Kept as a JSON string: the history stays valid.
			c.Args, _ = json.Marshal(string(c.Args))
		}
	}
	if resp.FinishReason == "" {
		resp.FinishReason = "stop"
		if len(resp.ToolCalls) > 0 {
			resp.FinishReason = "tool_calls"
		}
	}
	return resp
}

func cloneResponse(r cairn.ModelResponse) cairn.ModelResponse {
	r.ToolCalls = slices.Clone(r.ToolCalls)
	return r
}

// Tool runs a tool call as a step of the loop: fn on the first run,
// recorded as a tool.result event (with a tool.started first when the
// step is NotIdempotent), and the recorded output on a re-run. The call
// must be one that a model response recorded in this run asked for (Model)
// and that has no result yet: the history then stays one a model provider
// accepts. For any other function, use Run.
//
// An error of fn is recorded as the call's error result (is_error, the
// error's text as its output), which the model sees; a re-run returns it
// as a *StepError of code CodeToolError. With Retryable it is not recorded:
// the call stays pending and runs again on a re-run. Variables set with
// fn's context are recorded with the result, in the same append.
func Tool(ctx context.Context, s *Session, call cairn.ToolCall, fn func(context.Context) (string, error), opts ...Option) (string, error) {
	o := options(opts)
	switch {
	case fn == nil:
		return "", fmt.Errorf("session %s: tool %q call %s has no function", s.id, call.Name, call.ID)
	case call.ID == "":
		return "", fmt.Errorf("session %s: tool %q: the call has no ID (use the calls of the response Model returned)", s.id, call.Name)
	case o.notIdempotent && o.retryable:
		return "", fmt.Errorf("session %s: tool %q call %s: a tool step cannot be both NotIdempotent and Retryable (its start is recorded, so its failure must be)", s.id, call.Name, call.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for tries := 1; ; tries++ {
		if err := s.ready(ctx); err != nil {
			return "", err
		}
		out, again, err := s.tool1(ctx, call, fn, o)
		if again && tries < maxTries {
			continue
		}
		return out, err
	}
}

func (s *Session) tool1(ctx context.Context, call cairn.ToolCall, fn func(context.Context) (string, error), o stepOptions) (string, bool, error) {
	k := s.step + 1
	asked := fmt.Sprintf("tool %q call %s", call.Name, call.ID)
	var haveStart int64
	r, err := s.next()
	if err != nil {
		return "", false, err
	}
	if r != nil {
		switch {
		case r.kind == recToolStarted && r.started.CallID == call.ID && r.started.Name == call.Name:
			if err := s.pass(r); err != nil {
				return "", false, err
			}
			s.step = k
			nr, err := s.next()
			if err != nil {
				return "", false, err
			}
			switch {
			case nr != nil && nr.kind == recToolResult && nr.result.CallID == call.ID:
				r = nr
			case nr == nil && s.notRun[r.e.Seq]:
				haveStart = r.e.Seq
			default:
				s.open = &started{name: call.Name, callID: call.ID, step: k, seq: r.e.Seq}
				return "", false, &OutcomeUnknownError{Session: s.id, Name: call.Name, CallID: call.ID, Step: k, Seq: r.e.Seq}
			}
		case r.kind == recToolResult && r.result.CallID == call.ID && r.result.Name == call.Name:
		default:
			return "", false, s.mismatch(k, asked, r)
		}
		if haveStart == 0 {
			if err := s.pass(r); err != nil {
				return "", false, err
			}
			s.step = k
			if r.result.IsError {
				return "", false, &StepError{Code: CodeToolError, Message: r.result.Output}
			}
			return r.result.Output, false, nil
		}
	}
	if s.finished() {
		return "", false, fmt.Errorf("session %s, %s: %w", s.id, asked, ErrFinished)
	}
	i := slices.IndexFunc(s.state.Pending, func(p cairn.PendingCall) bool { return p.ID == call.ID })
	if i < 0 {
		return "", false, fmt.Errorf("session %s: %s: no model response of this run asked for that call, or it has a result already (record the model's response with steps.Model and use its calls, or run the function with steps.Run)", s.id, asked)
	}
	p := s.state.Pending[i]
	if p.Name != call.Name {
		return "", false, fmt.Errorf("session %s: call %s is a call of tool %q, not %q", s.id, call.ID, p.Name, call.Name)
	}
	if p.Started && haveStart == 0 {
		// Its start is behind the loop, which went on without a result.
		seq := s.startSeq(call.ID)
		s.step = k
		s.open = &started{name: call.Name, callID: call.ID, step: k, seq: seq}
		return "", false, &OutcomeUnknownError{Session: s.id, Name: call.Name, CallID: call.ID, Step: k, Seq: seq}
	}
	var start func() cairn.Event
	if o.notIdempotent {
		start = func() cairn.Event {
			return cairn.MustEvent(cairn.KindToolStarted, "", cairn.ToolStarted{CallID: p.ID, Name: p.Name, Args: p.Args})
		}
	}
	out, again, err := s.execute(ctx, attempt{
		name: call.Name, callID: call.ID, k: k, start: start, haveStart: haveStart,
		run: func(ctx context.Context) (_ []byte, err error) {
			safety := "idempotent"
			if o.notIdempotent {
				safety = "side_effect"
			}
			ctx, span := s.tel.StartTool(ctx, s.id, call.Name, call.ID, safety, false, p.Args)
			out := ""
			defer func() { // a panic, too, ends it
				switch {
				case err != nil:
					span.End("error", err.Error(), true)
				default:
					span.End("ok", out, false)
				}
			}()
			out, err = fn(ctx)
			return []byte(out), err
		},
		result: func(out []byte, err error, d time.Duration) (cairn.Event, bool) {
			tr := cairn.ToolResult{CallID: p.ID, Name: p.Name, Output: string(out), DurationMS: d.Milliseconds()}
			if err != nil {
				if o.retryable {
					return cairn.Event{}, false
				}
				tr.Output, tr.IsError = err.Error(), true
			}
			return cairn.MustEvent(cairn.KindToolResult, "", tr), true
		},
	})
	return string(out), again, err
}

// startSeq returns the seq of the tool.started of call id, 0 if none.
func (s *Session) startSeq(id string) int64 {
	for i := s.mem.Len() - 1; i >= 0; i-- {
		e := s.mem.Event(i)
		if e.Seq > s.pos || e.Kind != cairn.KindToolStarted {
			continue
		}
		if v, err := e.Decode(); err == nil && v.(*cairn.ToolStarted).CallID == id {
			return e.Seq
		}
	}
	return 0
}
