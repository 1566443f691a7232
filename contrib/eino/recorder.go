package eino

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/cloudwego/eino/callbacks"
	"github.com/cloudwego/eino/components"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/steps"
)

// Options configure NewRecorder.
type Options struct {
	// Name is recorded as the agent's name in each run's run.started, as
	// `cairn sessions show` shows it. Empty is allowed.
	Name string
	// Labels are given to the session when NewRecorder creates it.
	Labels map[string]string
}

// Recorder records an Eino graph's model calls and tool calls in a cairn
// session as they happen, with the events cairn's own agent writes
// (model.response, tool.started, tool.result), through a steps.Session:
// `cairn sessions show ID --transcript`, the inspector, export, TTL,
// encryption and erasure work on the session unchanged.
//
// Pass Handler to the graph's run (compose.WithCallbacks) and wrap its
// tools with Tool. A Recorder serves one run of the graph at a time.
type Recorder struct {
	s     *steps.Session
	store cairn.Store
	id    string

	mu      sync.Mutex                  // serializes the steps and guards what follows
	results map[string]cairn.ToolResult // the recorded result of each call, by call ID
	unknown map[string]bool             // calls started without a result, by call ID
	streams sync.WaitGroup              // model streams not yet recorded
	errs    []error                     // records that failed in callbacks
}

// NewRecorder opens the session id of store, creating it when the store
// does not hold it, for a run of an Eino graph: a new run when the
// session has none or its last one finished, or the last run again when it
// has not finished (a graph resumed from its checkpoint after an interrupt
// or a crash). The steps that run recorded are passed: the Recorder knows
// each recorded tool call's result, and each call whose start was recorded
// without a result (Tool reports it as outcome unknown and does not run
// it).
func NewRecorder(ctx context.Context, store cairn.Store, id string, opts Options) (*Recorder, error) {
	s, err := steps.Open(ctx, store, id, steps.Options{Name: opts.Name, Labels: opts.Labels})
	if err != nil {
		return nil, err
	}
	r := &Recorder{s: s, store: store, id: id, results: map[string]cairn.ToolResult{}, unknown: map[string]bool{}}
	if err := r.pass(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return r, nil
}

// pass walks the recorded steps of the session's last run through the
// steps.Session, which returns their recorded results without running
// anything, so that the session's position is the end of the history.
func (r *Recorder) pass(ctx context.Context) error {
	if r.s.Finished() {
		return nil // the next step begins a new run
	}
	rec, err := r.store.Load(ctx, r.id, 0)
	if err != nil {
		return fmt.Errorf("session %s: %w", r.id, err)
	}
	events := rec.Events
	start := -1
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind == cairn.KindRunStarted {
			start = i
			break
		}
	}
	if start < 0 {
		return nil
	}
	notRun := func(context.Context) (cairn.ModelResponse, error) {
		return cairn.ModelResponse{}, errors.New("not run again")
	}
	for i := start + 1; i < len(events); i++ {
		v, err := events[i].Decode()
		if err != nil {
			return fmt.Errorf("session %s, seq %d: %w", r.id, events[i].Seq, err)
		}
		switch d := v.(type) {
		case *cairn.ModelResponse:
			if _, err := steps.Model(ctx, r.s, notRun); err != nil {
				return fmt.Errorf("session %s: pass the model call of seq %d: %w", r.id, events[i].Seq, err)
			}
		case *cairn.ToolStarted:
			if i+1 < len(events) && resultOf(events[i+1], d.CallID) {
				continue // passed with its result
			}
			_, err := steps.Tool(ctx, r.s, cairn.ToolCall{ID: d.CallID, Name: d.Name}, notRunTool, steps.NotIdempotent())
			if !errors.Is(err, steps.ErrOutcomeUnknown) {
				return fmt.Errorf("session %s: pass the start of call %s (seq %d): %v", r.id, d.CallID, events[i].Seq, err)
			}
			r.unknown[d.CallID] = true
		case *cairn.ToolResult:
			if _, err := steps.Tool(ctx, r.s, cairn.ToolCall{ID: d.CallID, Name: d.Name}, notRunTool); err != nil && !errors.Is(err, steps.ErrOutcomeUnknown) {
				var se *steps.StepError
				if !errors.As(err, &se) || se.Code != steps.CodeToolError {
					return fmt.Errorf("session %s: pass the result of call %s (seq %d): %w", r.id, d.CallID, events[i].Seq, err)
				}
			}
			r.results[d.CallID] = *d
		case *cairn.MessageUser:
			if err := r.s.User(ctx, d.Text()); err != nil {
				return err
			}
		case *cairn.MessageSystem:
			if err := r.s.System(ctx, d.Text); err != nil {
				return err
			}
		case *cairn.Custom:
			if d.Type != steps.TypeStep {
				continue
			}
			rec, err := steps.DecodeRecord(d.Payload)
			if err != nil {
				return fmt.Errorf("session %s, seq %d: %w", r.id, events[i].Seq, err)
			}
			_, err = steps.Run(ctx, r.s, rec.Name, func(context.Context) (json.RawMessage, error) {
				return nil, errors.New("not run again")
			})
			var se *steps.StepError
			if err != nil && !errors.As(err, &se) {
				return fmt.Errorf("session %s: pass step %q (seq %d): %w", r.id, rec.Name, events[i].Seq, err)
			}
		}
	}
	return nil
}

// resultOf reports whether e is the result of call id.
func resultOf(e cairn.Event, id string) bool {
	if e.Kind != cairn.KindToolResult {
		return false
	}
	v, err := e.Decode()
	return err == nil && v.(*cairn.ToolResult).CallID == id
}

func notRunTool(context.Context) (string, error) { return "", errors.New("not run again") }

// Session returns the steps.Session the Recorder writes: the graph's own
// steps (steps.Run) and variables (Set) go in the same session.
func (r *Recorder) Session() *steps.Session { return r.s }

// ID returns the session's ID.
func (r *Recorder) ID() string { return r.id }

// Err returns the errors of the records the Handler could not write (a
// callback cannot fail the graph): nil when every model call and tool call
// of the run is in the session.
func (r *Recorder) Err() error {
	r.streams.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

// Handler returns the Eino callbacks handler that records each chat model
// call (model.response, when the model returns, streamed or not) and each
// tool call not wrapped by Tool (tool.result, when the tool returns) of
// the graph it is given to (compose.WithCallbacks). Other components are
// not recorded.
func (r *Recorder) Handler() callbacks.Handler {
	return callbacks.NewHandlerBuilder().
		OnEndFn(r.onEnd).
		OnErrorFn(r.onError).
		OnEndWithStreamOutputFn(r.onEndStream).
		Build()
}

func (r *Recorder) onEnd(ctx context.Context, info *callbacks.RunInfo, out callbacks.CallbackOutput) context.Context {
	if info == nil {
		return ctx
	}
	switch info.Component {
	case components.ComponentOfChatModel:
		o := model.ConvCallbackOutput(out)
		if o == nil || o.Message == nil {
			return ctx
		}
		r.recordModel(ctx, o)
	case components.ComponentOfTool:
		o := tool.ConvCallbackOutput(out)
		if o == nil {
			return ctx
		}
		r.recordTool(ctx, info.Name, o.Response, nil)
	}
	return ctx
}

func (r *Recorder) onError(ctx context.Context, info *callbacks.RunInfo, err error) context.Context {
	if info == nil || info.Component != components.ComponentOfTool || isInterrupt(err) {
		return ctx
	}
	r.recordTool(ctx, info.Name, "", err)
	return ctx
}

func (r *Recorder) onEndStream(ctx context.Context, info *callbacks.RunInfo, out *schema.StreamReader[callbacks.CallbackOutput]) context.Context {
	if info == nil || info.Component != components.ComponentOfChatModel {
		out.Close()
		return ctx
	}
	r.streams.Add(1)
	go func() {
		defer r.streams.Done()
		defer out.Close()
		var msgs []*schema.Message
		var last *model.CallbackOutput
		for {
			chunk, err := out.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return // a failed stream is not a model call to record
			}
			o := model.ConvCallbackOutput(chunk)
			if o == nil || o.Message == nil {
				continue
			}
			msgs = append(msgs, o.Message)
			last = o
		}
		if len(msgs) == 0 {
			return
		}
		msg, err := schema.ConcatMessages(msgs)
		if err != nil {
			r.fail(fmt.Errorf("session %s: concatenate the model's stream: %w", r.id, err))
			return
		}
		r.recordModel(context.WithoutCancel(ctx), &model.CallbackOutput{Message: msg, Config: last.Config, TokenUsage: last.TokenUsage})
	}()
	return ctx
}

func (r *Recorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

// recordModel records a model call's response as a step.
func (r *Recorder) recordModel(ctx context.Context, o *model.CallbackOutput) {
	resp := response(o)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.begin(ctx); err != nil {
		r.errs = append(r.errs, err)
		return
	}
	if _, err := steps.Model(ctx, r.s, func(context.Context) (cairn.ModelResponse, error) { return resp, nil }); err != nil {
		r.errs = append(r.errs, fmt.Errorf("record a model call: %w", err))
	}
}

// begin starts a new run when the session's last one finished. With r.mu held.
func (r *Recorder) begin(ctx context.Context) error {
	if !r.s.Finished() || r.s.Replaying() {
		return nil
	}
	if err := r.s.Begin(ctx); err != nil {
		return err
	}
	clear(r.results)
	clear(r.unknown)
	return nil
}

// response returns an Eino model output as cairn records it.
func response(o *model.CallbackOutput) cairn.ModelResponse {
	m := o.Message
	resp := cairn.ModelResponse{Text: m.Content}
	for _, c := range m.ToolCalls {
		resp.ToolCalls = append(resp.ToolCalls, cairn.ToolCall{ID: c.ID, Name: c.Function.Name, Args: json.RawMessage(c.Function.Arguments)})
	}
	if o.Config != nil {
		resp.Model = o.Config.Model
	}
	if meta := m.ResponseMeta; meta != nil {
		resp.FinishReason = meta.FinishReason
		if u := meta.Usage; u != nil {
			resp.Usage = cairn.Usage{InputTokens: int64(u.PromptTokens), OutputTokens: int64(u.CompletionTokens)}
		}
	}
	if u := o.TokenUsage; u != nil {
		resp.Usage = cairn.Usage{InputTokens: int64(u.PromptTokens), OutputTokens: int64(u.CompletionTokens)}
	}
	return resp
}

// recordTool records the result of a tool call that Tool did not record.
func (r *Recorder) recordTool(ctx context.Context, name, output string, failure error) {
	id := compose.GetToolCallID(ctx)
	if id == "" {
		return // a tool called outside a tools node: no call to answer
	}
	r.streams.Wait() // the model response that asked for the call
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.results[id]; ok || r.unknown[id] {
		return
	}
	out, err := steps.Tool(ctx, r.s, cairn.ToolCall{ID: id, Name: name}, func(context.Context) (string, error) { return output, failure })
	var se *steps.StepError
	switch {
	case err == nil:
		r.results[id] = cairn.ToolResult{CallID: id, Name: name, Output: out}
	case failure != nil && err == failure: // recorded as the call's error result
		r.results[id] = cairn.ToolResult{CallID: id, Name: name, Output: failure.Error(), IsError: true}
	case errors.As(err, &se) && se.Code == steps.CodeToolError:
		r.results[id] = cairn.ToolResult{CallID: id, Name: name, Output: se.Message, IsError: true}
	default:
		r.errs = append(r.errs, fmt.Errorf("record tool %q call %s: %w", name, id, err))
	}
}

func isInterrupt(err error) bool {
	if _, ok := compose.ExtractInterruptInfo(err); ok {
		return true
	}
	_, ok := compose.IsInterruptRerunError(err)
	return ok
}

// ToolOption configures a tool that Tool wraps.
type ToolOption func(*toolOptions)

type toolOptions struct{ notIdempotent bool }

// NotIdempotent marks a tool whose effect must not happen twice (a
// payment, a message sent): the start of each of its calls is recorded
// (tool.started), durable in the store, before it runs. A run that finds a
// call started without a result — the process stopped while the tool ran
// — does not run it again: the call fails with an error wrapping
// steps.ErrOutcomeUnknown, and the caller decides (Resolve).
func NotIdempotent() ToolOption { return func(o *toolOptions) { o.notIdempotent = true } }

// Tool wraps t so that each of its calls is a step of the session: its
// result is recorded (tool.result) before the tools node goes on, and a
// call already recorded — by an earlier process, before a crash or an
// interrupt — returns its recorded result without running t again. With
// NotIdempotent, a call runs at most once across crashes.
//
// The calls of wrapped tools run one at a time, in the order the tools
// node asks for them, even when the node runs tools in parallel.
func (r *Recorder) Tool(t tool.InvokableTool, opts ...ToolOption) tool.InvokableTool {
	var o toolOptions
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return &durableTool{r: r, t: t, o: o}
}

type durableTool struct {
	r *Recorder
	t tool.InvokableTool
	o toolOptions
}

func (d *durableTool) Info(ctx context.Context) (*schema.ToolInfo, error) { return d.t.Info(ctx) }

func (d *durableTool) InvokableRun(ctx context.Context, args string, opts ...tool.Option) (string, error) {
	r := d.r
	info, err := d.t.Info(ctx)
	if err != nil {
		return "", err
	}
	id := compose.GetToolCallID(ctx)
	if id == "" {
		return "", fmt.Errorf("session %s: tool %q was called outside a tools node (no call ID): it cannot be recorded", r.id, info.Name)
	}
	r.streams.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	if res, ok := r.results[id]; ok {
		if res.IsError {
			return "", &steps.StepError{Code: steps.CodeToolError, Message: res.Output}
		}
		return res.Output, nil
	}
	var so []steps.Option
	if d.o.notIdempotent {
		so = append(so, steps.NotIdempotent())
	}
	var toolErr error
	out, err := steps.Tool(ctx, r.s, cairn.ToolCall{ID: id, Name: info.Name}, func(ctx context.Context) (string, error) {
		out, err := d.t.InvokableRun(ctx, args, opts...)
		toolErr = err
		return out, err
	}, so...)
	var se *steps.StepError
	switch {
	case err == nil:
		r.results[id] = cairn.ToolResult{CallID: id, Name: info.Name, Output: out}
	case toolErr != nil && err == toolErr && ctx.Err() == nil: // recorded as the call's error result
		r.results[id] = cairn.ToolResult{CallID: id, Name: info.Name, Output: err.Error(), IsError: true}
	case errors.Is(err, steps.ErrOutcomeUnknown):
		r.unknown[id] = true
	case errors.As(err, &se) && se.Code == steps.CodeToolError:
		r.results[id] = cairn.ToolResult{CallID: id, Name: info.Name, Output: se.Message, IsError: true}
	}
	return out, err
}

// Unknown returns the IDs of the tool calls whose start was recorded
// without a result, sorted: their outcome is unknown (see NotIdempotent).
func (r *Recorder) Unknown() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for id := range r.unknown {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Resolve records output as the result of the tool call callID, whose
// outcome was unknown (its call failed with steps.ErrOutcomeUnknown, or
// Unknown lists it): the caller found out what happened. A run of the
// graph from its checkpoint then gets output as the call's result.
func (r *Recorder) Resolve(ctx context.Context, callID, output string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	name, err := r.pendingName(callID)
	if err != nil {
		return err
	}
	if err := r.reopen(ctx, callID, name); err != nil {
		return err
	}
	if err := r.s.Resolve(ctx, name, output); err != nil {
		return err
	}
	delete(r.unknown, callID)
	r.results[callID] = cairn.ToolResult{CallID: callID, Name: name, Output: output}
	return nil
}

// reopen makes the steps.Session meet the call's start again, so that
// Resolve follows it. With r.mu held.
func (r *Recorder) reopen(ctx context.Context, callID, name string) error {
	_, err := steps.Tool(ctx, r.s, cairn.ToolCall{ID: callID, Name: name}, notRunTool, steps.NotIdempotent())
	if !errors.Is(err, steps.ErrOutcomeUnknown) {
		return fmt.Errorf("session %s: resolve call %s: its outcome is not unknown (%v)", r.id, callID, err)
	}
	return nil
}

func (r *Recorder) pendingName(callID string) (string, error) {
	for _, p := range r.s.State().Pending {
		if p.ID == callID {
			return p.Name, nil
		}
	}
	return "", fmt.Errorf("session %s: no tool call %s waits for a result", r.id, callID)
}

// Pending returns the tool calls the session's model responses asked for
// that have no result yet.
func (r *Recorder) Pending() []cairn.PendingCall {
	return r.s.State().Pending
}

// Interrupted records that the graph's run stopped at an Eino interrupt
// (err, as Invoke returned it): a run.interrupted event, of reason
// approval when calls are pending (before a tools node), so that `cairn
// sessions list` shows the session awaiting approval. It reports whether
// err was an interrupt; any other error is left for the caller.
func (r *Recorder) Interrupted(ctx context.Context, err error) (bool, error) {
	if err == nil || !isInterrupt(err) {
		return false, nil
	}
	r.streams.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.s.State()
	ri := cairn.RunInterrupted{Reason: cairn.InterruptCancelled, Pending: []cairn.ToolCall{}}
	for _, p := range st.Pending {
		ri.Pending = append(ri.Pending, p.ToolCall)
	}
	if len(ri.Pending) > 0 {
		ri.Reason = cairn.InterruptApproval
	}
	if st.Status == cairn.StatusAwaiting || st.Status == cairn.StatusInterrupted {
		return true, nil // recorded by an earlier run
	}
	e, werr := cairn.NewEvent(cairn.KindRunInterrupted, st.Run, ri)
	if werr == nil {
		werr = appendEvents(ctx, r.store, r.id, nil, e)
	}
	if werr != nil {
		return true, fmt.Errorf("session %s: record the interrupt: %w", r.id, werr)
	}
	return true, nil
}

// Decide records a person's decision on the pending tool call callID
// (approval.decided), as `cairn sessions resume --approve` does; the
// transcript shows it. Running the graph on is the caller's part: Eino's
// resume from the checkpoint.
func (r *Recorder) Decide(ctx context.Context, callID string, approved bool, note string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.pendingName(callID); err != nil {
		return err
	}
	e, err := cairn.NewEvent(cairn.KindApprovalDecided, r.s.State().Run, cairn.ApprovalDecided{CallID: callID, Approved: approved, Note: note})
	if err == nil {
		err = appendEvents(ctx, r.store, r.id, nil, e)
	}
	if err != nil {
		return fmt.Errorf("session %s: record the decision on call %s: %w", r.id, callID, err)
	}
	return nil
}

// Finish ends the session's run as completed with output (run.finished),
// once the graph returned.
func (r *Recorder) Finish(ctx context.Context, output string) error {
	r.streams.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.s.Finish(ctx, output)
}

// Fail ends the session's run as failed with err.
func (r *Recorder) Fail(ctx context.Context, err error) error {
	r.streams.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.s.Fail(ctx, err)
}

// Close waits for the model streams being recorded and closes the session.
func (r *Recorder) Close() error {
	r.streams.Wait()
	return r.s.Close()
}
