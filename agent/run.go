package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/telemetry"
	"github.com/cairnhq/cairn/provider"
)

// RunOption configures Run and ResumeRun.
type RunOption func(*runOptions)

type runOptions struct {
	cont       bool
	background string
	onText     func(string)
	observe    func(ToolEvent)
}

// Continue keeps the session's memory: the run appends the new input to
// the conversation so far (run.started with reset false), the multi-turn
// pattern. Without it a run starts fresh: the memory is reset.
func Continue() RunOption { return func(o *runOptions) { o.cont = true } }

// Background gives the model text to know for this run (memories
// recalled for the input, say): a system message recorded just before the
// input, so that it is in the model's context and in the transcript. An
// empty text adds nothing.
func Background(text string) RunOption { return func(o *runOptions) { o.background = text } }

// OnText streams the model's text as it arrives.
func OnText(f func(delta string)) RunOption { return func(o *runOptions) { o.onText = f } }

// ObserveTools calls f when a tool call starts and when it finishes. f may
// be called from several goroutines at once (parallel calls).
func ObserveTools(f func(ToolEvent)) RunOption { return func(o *runOptions) { o.observe = f } }

// ToolEvent tells an observer about one tool call.
type ToolEvent struct {
	Call     cairn.ToolCall
	Done     bool          // false when the call starts, true when it finished
	Output   string        // when Done
	IsError  bool          // when Done
	Duration time.Duration // when Done
}

// Result is how a run (or the part of it this call ran) ended.
type Result struct {
	RunID    string
	Status   cairn.Status     // completed, failed, max_steps, interrupted or awaiting_approval
	Output   string           // the final answer (completed), or the last text (max_steps)
	Error    *cairn.ErrorInfo // why the run failed
	Awaiting []cairn.ToolCall // calls awaiting a person's decision
	Usage    cairn.Usage      // tokens of the model calls this call made
	Steps    int              // model responses in the run so far
	Warnings []error          // raised during this call: a *ResumeWarning, a *StoreWarning
	Unsaved  int              // events the store does not hold yet; see Session.Flush
	// StoreError is why the Unsaved events are not in the store: the
	// store's last error (an outage: cairn.IsUnavailable), nil when
	// Unsaved is 0.
	StoreError error
}

// Run starts a run with input. By default the run is fresh: run.started
// (reset), memory.reset, the instructions and the input are appended in
// one atomic write, then the think/act loop runs until the model answers
// without tool calls, MaxSteps model responses are reached, a tool needs
// approval, the context is cancelled or the model fails. With Continue the
// memory is kept. A cancelled run records run.interrupted and returns an
// error wrapping the context's error; a failed model call records
// run.finished{failed} and returns its error.
func (s *Session) Run(ctx context.Context, input string, opts ...RunOption) (*Result, error) {
	if !s.running.TryLock() {
		return nil, ErrBusy
	}
	defer s.running.Unlock()
	defer s.waitSnapshot()
	if err := s.agent.check(); err != nil {
		return nil, fmt.Errorf("run session %s: %w", s.id, err)
	}
	o := runOpts(opts)
	if o.cont && s.State().Status == cairn.StatusNew {
		o.cont = false // a first run starts with the instructions
	}
	w0 := len(s.Warnings())
	fp := s.agent.Fingerprint()
	s.checkFingerprint(fp)
	r := &runner{s: s, o: o, runID: cairn.NewID(), warned: w0}
	ctx, span := s.agent.telemetry().StartRun(ctx, s.agent.Name, s.id, r.runID, fp.Model, false, trace.SpanContext{})
	res, err := r.start(ctx, input, fp)
	endRun(span, res, err)
	return res, err
}

// start records the run's start and input, then runs the loop.
func (r *runner) start(ctx context.Context, input string, fp cairn.Fingerprint) (*Result, error) {
	s, o := r.s, r.o
	started := []cairn.Event{cairn.MustEvent(cairn.KindRunStarted, r.runID, cairn.RunStarted{
		RunID: r.runID, Agent: s.agent.Name, Fingerprint: fp, Model: fp.Model, Reset: !o.cont,
	})}
	// The run's trace context, for the process that may resume it.
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		if e, ok := telemetry.TraceEvent(r.runID, span.SpanContext()); ok {
			started = append(started, e)
		}
	}
	inputs := []cairn.Event{cairn.MustEvent(cairn.KindMessageUser, r.runID, cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: input}}})}
	if o.background != "" {
		inputs = append([]cairn.Event{cairn.MustEvent(cairn.KindMessageSystem, r.runID, cairn.MessageSystem{Text: o.background})}, inputs...)
	}
	var err error
	switch {
	case !o.cont:
		err = s.append(ctx, append(append(started,
			cairn.MustEvent(cairn.KindMemoryReset, r.runID, cairn.MemoryReset{}),
			cairn.MustEvent(cairn.KindMessageSystem, r.runID, cairn.MessageSystem{Text: s.agent.Instructions})),
			inputs...)...)
	case len(s.State().Pending) > 0:
		// The last run stopped with tool calls asked for: they get their
		// results first, so that the history stays valid for a provider.
		if err = s.append(ctx, started...); err == nil {
			var res *Result
			if res, err = r.act(ctx, true); res != nil || err != nil {
				return r.result(res), err
			}
			err = s.append(ctx, inputs...)
		}
	default:
		err = s.append(ctx, append(started, inputs...)...)
	}
	if err != nil {
		return nil, fmt.Errorf("run session %s: %w", s.id, err)
	}
	return r.loop(ctx)
}

// endRun ends a run's span with how the run (or this call of it) ended.
func endRun(span trace.Span, res *Result, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	status := "error"
	var in, out int64
	if res != nil {
		status, in, out = string(res.Status), res.Usage.InputTokens, res.Usage.OutputTokens
	}
	telemetry.EndRun(span, status, in, out, err)
}

// ResumeRun finishes the session's current run with no new input: after a
// cancellation, a crash, or a person's approval decisions. Calls asked for
// without results are run (a started call of a tool that is not idempotent
// gets an "outcome unknown" error result instead, unless it reruns on
// resume); a model call that was in flight is made again. On a session
// whose last run has ended it returns that run's result.
func (s *Session) ResumeRun(ctx context.Context, opts ...RunOption) (*Result, error) {
	if !s.running.TryLock() {
		return nil, ErrBusy
	}
	defer s.running.Unlock()
	defer s.waitSnapshot()
	if err := s.agent.check(); err != nil {
		return nil, fmt.Errorf("resume run of session %s: %w", s.id, err)
	}
	st := s.State()
	r := &runner{s: s, o: runOpts(opts), runID: st.Run, warned: len(s.Warnings())}
	switch st.Status {
	case cairn.StatusNew:
		return nil, fmt.Errorf("resume run of session %s: the session has no run to resume", s.id)
	case cairn.StatusCompleted, cairn.StatusFailed, cairn.StatusMaxSteps:
		return r.result(&Result{Status: st.Status, Output: st.Output, Error: st.Error}), nil
	}
	s.checkFingerprint(s.agent.Fingerprint())
	ctx, span := s.agent.telemetry().StartRun(ctx, s.agent.Name, s.id, r.runID, s.agent.Fingerprint().Model, true, s.runLink(ctx, st.Run))
	res, err := r.loop(ctx)
	endRun(span, res, err)
	return res, err
}

// runLink returns the trace context that run recorded when it started
// (telemetry.TypeTrace), for the span of a run that resumes it to link
// to; an invalid one when tracing is off or the run recorded none. The
// events before a snapshot are read from the store only when tracing is on.
func (s *Session) runLink(ctx context.Context, run string) trace.SpanContext {
	if s.agent.TracerProvider == nil || run == "" {
		return trace.SpanContext{}
	}
	mem := s.Memory()
	if sc := telemetry.FindLink(mem.Events(), run); sc.IsValid() || mem.Base() == 0 {
		return sc
	}
	rec, err := s.store.Load(ctx, s.id, 0)
	if err != nil {
		return trace.SpanContext{}
	}
	return telemetry.FindLink(rec.Events, run)
}

func runOpts(opts []RunOption) runOptions {
	var o runOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

func (s *Session) checkFingerprint(fp cairn.Fingerprint) {
	st := s.State()
	if st.Run == "" || st.Fingerprint == fp {
		return
	}
	s.warn(&ResumeWarning{Session: s.id, Recorded: st.Fingerprint, Current: fp})
}

// runner is one call of Run or ResumeRun.
type runner struct {
	s      *Session
	o      runOptions
	runID  string
	usage  cairn.Usage
	warned int             // the session's warnings before this call
	asked  map[string]bool // the calls this call's model responses asked for
	noCut  bool            // a compaction found no valid cut (logged once)
}

// result completes res with what every result carries.
func (r *runner) result(res *Result) *Result {
	if res == nil {
		res = &Result{Status: cairn.StatusRunning}
	}
	st := r.s.State()
	res.RunID, res.Usage, res.Steps = r.runID, r.usage, st.RunSteps
	res.Warnings = r.s.Warnings()[r.warned:]
	res.Unsaved, res.StoreError = r.s.Unsaved(), r.s.StoreError()
	return res
}

// loop alternates act (pending tool calls) and think (a model call).
func (r *runner) loop(ctx context.Context) (*Result, error) {
	for {
		if res, err := r.act(ctx, false); res != nil || err != nil {
			return r.result(res), err
		}
		st := r.s.State()
		if output, ok := answered(st); ok {
			// The run's answer was recorded and its end was not (a fork,
			// or a process that stopped between the two): the answer is
			// the run's output, and the model is not asked again.
			return r.finish(ctx, cairn.RunFinished{Status: cairn.StatusCompleted, Output: output})
		}
		if st.RunSteps >= r.s.agent.maxSteps() {
			return r.finish(ctx, cairn.RunFinished{Status: cairn.StatusMaxSteps, Output: lastText(st)})
		}
		if ctx.Err() != nil {
			return r.interrupt(ctx)
		}
		if err := r.s.checkClaim(); err != nil {
			return r.interruptFor(ctx, err)
		}
		if res, err := r.think(ctx, st); res != nil || err != nil {
			return r.result(res), err
		}
	}
}

// think makes one model call and records it; with no tool calls asked
// for, the run's end is recorded in the same append. Before the call, the
// memory is compacted if the request would exceed the context budget.
func (r *runner) think(ctx context.Context, st *cairn.State) (*Result, error) {
	st, res, err := r.compact(ctx, st)
	if res != nil || err != nil {
		return res, err
	}
	req := &provider.Request{
		Messages:  st.Messages,
		Tools:     r.s.agent.toolSpecs(),
		Responses: st.Responses,
		Variables: maps.Clone(st.Variables),
		OnText:    r.o.onText,
	}
	chat := r.s.agent.telemetry().StartChat(ctx, r.s.id, r.s.agent.Model.ID())
	chat.Input(telemetry.SystemText(st.Messages), func() string { return telemetry.InputMessagesJSON(st.Messages) })
	begin := time.Now()
	resp, err := r.s.agent.Model.Generate(chat.Context(), req)
	latency := time.Since(begin)
	if err != nil {
		chat.End("", "", 0, 0, nil, err)
		if ctx.Err() != nil {
			return r.interrupt(ctx)
		}
		code := "model_error"
		if errors.Is(err, provider.ErrScriptEnded) {
			code = "script_ended"
		}
		res, ferr := r.finish(ctx, cairn.RunFinished{Status: cairn.StatusFailed, Error: &cairn.ErrorInfo{Code: code, Message: err.Error()}})
		return res, errors.Join(fmt.Errorf("run session %s: model %s: %w", r.s.id, r.s.agent.Model.ID(), err), ferr)
	}
	r.usage = r.usage.Add(resp.Usage)
	calls := normalizeCalls(resp.ToolCalls, st.LastSeq+1)
	model := resp.Model
	if model == "" {
		model = r.s.agent.Model.ID()
	}
	finish := resp.FinishReason
	if finish == "" {
		finish = "stop"
		if len(calls) > 0 {
			finish = "tool_calls"
		}
	}
	chat.End(model, finish, resp.Usage.InputTokens, resp.Usage.OutputTokens,
		func() string { return telemetry.OutputMessagesJSON(resp.Text, calls, finish) }, nil)
	events := []cairn.Event{cairn.MustEvent(cairn.KindModelResponse, r.runID, cairn.ModelResponse{
		Text: resp.Text, ToolCalls: calls, Model: model, Usage: resp.Usage,
		FinishReason: finish, LatencyMS: latency.Milliseconds(),
	})}
	if len(calls) == 0 {
		events = append(events, cairn.MustEvent(cairn.KindRunFinished, r.runID, cairn.RunFinished{Status: cairn.StatusCompleted, Output: resp.Text}))
	}
	// Calls that need a person's decision are recorded as such in the same
	// append as the response that asks for them, so that no process, with
	// whatever tools, runs them before a decision.
	var awaiting []cairn.ToolCall
	for _, c := range calls {
		if t := r.s.agent.tool(c.Name); t != nil && t.opts.approval {
			awaiting = append(awaiting, c)
		}
	}
	if len(awaiting) > 0 {
		events = append(events, cairn.MustEvent(cairn.KindRunInterrupted, r.runID, cairn.RunInterrupted{Reason: cairn.InterruptApproval, Pending: awaiting}))
	}
	if err := r.s.append(ctx, events...); err != nil {
		return &Result{Status: cairn.StatusFailed}, fmt.Errorf("run session %s: record model response: %w", r.s.id, err)
	}
	if r.asked == nil {
		r.asked = map[string]bool{}
	}
	for _, c := range calls {
		r.asked[c.ID] = true
	}
	if len(calls) == 0 {
		return &Result{Status: cairn.StatusCompleted, Output: resp.Text}, nil
	}
	return nil, nil
}

// normalizeCalls gives every call a unique ID and a JSON object of
// arguments, so the recorded history is valid for any provider.
func normalizeCalls(calls []cairn.ToolCall, seq int64) []cairn.ToolCall {
	out := slices.Clone(calls)
	seen := map[string]bool{}
	for i := range out {
		if out[i].ID == "" || seen[out[i].ID] {
			out[i].ID = fmt.Sprintf("call_%d_%d", seq, i)
		}
		seen[out[i].ID] = true
		switch {
		case len(out[i].Args) == 0 || string(out[i].Args) == "null":
			out[i].Args = []byte("{}")
		case !json.Valid(out[i].Args):
			// Kept as a JSON string: the tool refuses it with an error
			// result the model sees, and the history stays valid.
			out[i].Args, _ = json.Marshal(string(out[i].Args))
		}
	}
	return out
}

// finish records the end of the run.
func (r *runner) finish(ctx context.Context, f cairn.RunFinished) (*Result, error) {
	res := &Result{Status: cairn.Status(f.Status), Output: f.Output, Error: f.Error}
	if err := r.s.append(ctx, cairn.MustEvent(cairn.KindRunFinished, r.runID, f)); err != nil {
		return r.result(res), fmt.Errorf("run session %s: record the end of the run: %w", r.s.id, err)
	}
	return r.result(res), nil
}

// interrupt records run.interrupted{cancelled} with a write the
// cancellation cannot kill, and returns an error wrapping ctx's error.
func (r *runner) interrupt(ctx context.Context) (*Result, error) {
	return r.stop(ctx, cairn.InterruptCancelled, context.Cause(ctx))
}

// interruptFor stops the run because it may not go on: its lease could
// not be renewed in time (cause wraps ErrLeaseExpired or
// cairn.ErrLeaseLost), or the store could not record a step that must be
// durable (a *NotRecordedError).
func (r *runner) interruptFor(ctx context.Context, cause error) (*Result, error) {
	reason := cairn.InterruptDegraded
	if errors.Is(cause, ErrLeaseExpired) || errors.Is(cause, cairn.ErrLeaseLost) {
		reason = cairn.InterruptLease
	}
	return r.stop(ctx, reason, cause)
}

// stop records run.interrupted{reason} with a write the cancellation
// cannot kill, and returns an error wrapping cause.
func (r *runner) stop(ctx context.Context, reason string, cause error) (*Result, error) {
	pending := pendingCalls(r.s.State())
	e := cairn.MustEvent(cairn.KindRunInterrupted, r.runID, cairn.RunInterrupted{Reason: reason, Pending: pending})
	werr := r.s.append(context.WithoutCancel(ctx), e)
	err := fmt.Errorf("run session %s: interrupted: %w", r.s.id, cause)
	if werr != nil {
		err = errors.Join(err, werr)
	}
	return r.result(&Result{Status: cairn.StatusInterrupted}), err
}

// answered reports whether the run's last step is a model response that
// asked for no tool call, the run's answer, and returns its text. The
// conversation's last message is then that response: a new input or a
// tool result would follow it.
func answered(st *cairn.State) (string, bool) {
	if len(st.Pending) > 0 || len(st.Messages) == 0 || st.RunSteps == 0 {
		return "", false
	}
	m := st.Messages[len(st.Messages)-1]
	return m.Content, m.Role == cairn.RoleAssistant && len(m.ToolCalls) == 0
}

func pendingCalls(st *cairn.State) []cairn.ToolCall {
	out := make([]cairn.ToolCall, 0, len(st.Pending))
	for _, p := range st.Pending {
		out = append(out, p.ToolCall)
	}
	return out
}

func lastText(st *cairn.State) string {
	for i := len(st.Messages) - 1; i >= 0; i-- {
		if m := st.Messages[i]; m.Role == cairn.RoleAssistant && m.Content != "" {
			return m.Content
		}
	}
	return ""
}
