package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/telemetry"
)

// Messages of the error results the agent gives calls it did not run.
const (
	// OutcomeUnknown is the result of a started call of a tool that is not
	// idempotent whose result was never recorded: the process stopped
	// after the start was stored, before or while the tool ran.
	OutcomeUnknown = "outcome unknown: the call's start was recorded and its result was not, so the tool may have run; it is not run again"

	// NotRun is the result of a call whose start the store recorded
	// although the process that wrote it heard an error (the reply was
	// lost) and so did not run the tool: it is known not to have run.
	NotRun       = "not run: the store did not confirm that this call's start was recorded, so the tool was not run"
	deniedPrefix = "denied by a person: "
	undecided    = "not run: the conversation went on without a decision on this call"
)

// outcome is what running one pending call produced.
type outcome struct {
	result    cairn.ToolResult
	scope     *callScope
	cancelled bool  // the run was cancelled before the call finished: it stays pending
	notRun    error // the call may not run now (lease expired, start not recordable): it stays pending
	err       error // recording tool.started failed
}

// act runs the pending tool calls. Calls from one response run
// concurrently; their results are appended (each with any state.set it
// caused) in the model's order, skipping the calls that did not finish,
// which stay pending. If a call needs approval that nobody gave, the other
// calls run and the run stops awaiting approval of it, unless continuing (a
// new input went on without a decision), where such calls get an error
// result. A
// call needs approval when the session recorded that it does or when this
// agent's tool requires it. A call asked for before this run call whose
// tool this agent lacks is an error (*UnknownToolError). It returns a nil
// Result when the loop goes on.
func (r *runner) act(ctx context.Context, continuing bool) (*Result, error) {
	st := r.s.State()
	if len(st.Pending) == 0 {
		return nil, nil
	}
	var awaiting []cairn.ToolCall
	for _, p := range st.Pending {
		d, decided := st.Approvals[p.ID]
		if r.s.agent.tool(p.Name) == nil && !r.asked[p.ID] && !(decided && !d.Approved) {
			return &Result{Status: st.Status}, &UnknownToolError{Session: r.s.id, Call: p.ToolCall, Tools: r.s.agent.toolNames()}
		}
		if r.needsApproval(p) && !decided {
			awaiting = append(awaiting, p.ToolCall)
		}
	}
	if len(awaiting) > 0 && !continuing {
		// The calls that need no decision run first; only those that do
		// wait.
		var ready []cairn.PendingCall
		for _, p := range st.Pending {
			if _, decided := st.Approvals[p.ID]; decided || !r.needsApproval(p) {
				ready = append(ready, p)
			}
		}
		if len(ready) > 0 {
			if res, err := r.runCalls(ctx, ready, st, continuing); res != nil || err != nil {
				return res, err
			}
		}
		res := &Result{Status: cairn.StatusAwaiting, Awaiting: awaiting}
		if r.s.awaitingRecorded(awaiting) {
			return res, nil
		}
		e := cairn.MustEvent(cairn.KindRunInterrupted, r.runID, cairn.RunInterrupted{Reason: cairn.InterruptApproval, Pending: awaiting})
		if err := r.s.append(ctx, e); err != nil {
			return res, fmt.Errorf("run session %s: record the wait for approval: %w", r.s.id, err)
		}
		return res, nil
	}
	return r.runCalls(ctx, st.Pending, st, continuing)
}

// runCalls runs the pending calls given, concurrently, and appends their
// results in the model's order (see act). It returns a nil Result when the
// loop goes on.
func (r *runner) runCalls(ctx context.Context, pending []cairn.PendingCall, st *cairn.State, continuing bool) (*Result, error) {
	if ctx.Err() != nil {
		return r.interrupt(ctx)
	}
	outcomes := make([]chan outcome, len(pending))
	for i, p := range pending {
		outcomes[i] = make(chan outcome, 1)
		go func() { outcomes[i] <- r.call(ctx, p, st, continuing) }()
	}
	var stop, notRun error
	cancelled := false
	for i := range pending {
		out := <-outcomes[i]
		switch {
		case stop != nil:
			// An earlier result could not be recorded: the store refuses
			// the session's writes, so later ones wait for the resume.
		case out.err != nil:
			stop = out.err
		case out.notRun != nil:
			if notRun == nil {
				notRun = out.notRun
			}
		case out.cancelled:
			cancelled = true
		default:
			if err := r.s.append(ctx, resultEvents(r.runID, out)...); err != nil {
				stop = fmt.Errorf("run session %s: record result of %s: %w", r.s.id, out.result.CallID, err)
			}
		}
	}
	switch {
	case stop != nil:
		return &Result{Status: cairn.StatusFailed}, stop
	case notRun != nil:
		return r.interruptFor(ctx, notRun)
	case cancelled || ctx.Err() != nil:
		return r.interrupt(ctx)
	}
	return nil, nil
}

// needsApproval reports whether call p waits for a person's decision: the
// session recorded so, or this agent's tool requires it.
func (r *runner) needsApproval(p cairn.PendingCall) bool {
	t := r.s.agent.tool(p.Name)
	return p.Approval || (t != nil && t.opts.approval)
}

// UnknownToolError says that a session has a pending tool call, asked for
// before this run began, of a tool the agent resuming it does not have. The
// run does not go on: resume it with the program that has the tool, or
// deny the call (Session.Approve with approved false) to give it an error
// result.
type UnknownToolError struct {
	Session string
	Call    cairn.ToolCall
	Tools   []string // the tools the agent has
}

// Error names the call, the tool and the tools the agent has.
func (e *UnknownToolError) Error() string {
	return fmt.Sprintf("session %s: pending call %s asks for tool %q, which this agent does not have (tools: %s)",
		e.Session, e.Call.ID, e.Call.Name, strings.Join(e.Tools, ", "))
}

func resultEvents(runID string, out outcome) []cairn.Event {
	events := []cairn.Event{cairn.MustEvent(cairn.KindToolResult, runID, out.result)}
	if sc := out.scope; sc != nil && (len(sc.set) > 0 || len(sc.deleted) > 0) {
		set := sc.set
		if set == nil {
			set = map[string]json.RawMessage{}
		}
		events = append(events, cairn.MustEvent(cairn.KindStateSet, runID, cairn.StateSet{Set: set, Deleted: slices.Clone(sc.deleted)}))
	}
	return events
}

// call runs one pending call, or decides its error result without running it.
func (r *runner) call(ctx context.Context, p cairn.PendingCall, st *cairn.State, continuing bool) outcome {
	res := cairn.ToolResult{CallID: p.ID, Name: p.Name, IsError: true}
	t := r.s.agent.tool(p.Name)
	decision, decided := st.Approvals[p.ID]
	switch {
	case decided && !decision.Approved:
		res.Output = deniedPrefix + decision.Note
	case t == nil:
		res.Output = fmt.Sprintf("unknown tool %q (tools: %s)", p.Name, strings.Join(r.s.agent.toolNames(), ", "))
	case r.needsApproval(p) && !decided && continuing:
		res.Output = undecided
	case p.Started && !t.opts.rerun:
		res.Output = OutcomeUnknown
	default:
		return r.run(ctx, t, p, st)
	}
	res.Output = CutOutput(res.Output, r.s.agent.maxToolOutput())
	_, span := r.startTool(ctx, t, p)
	span.End(notRunOutcome(res.Output), res.Output, true)
	r.observe(ToolEvent{Call: p.ToolCall})
	r.observe(ToolEvent{Call: p.ToolCall, Done: true, Output: res.Output, IsError: true})
	return outcome{result: res}
}

// startTool starts the span of a tool call, with the tool's safety class.
func (r *runner) startTool(ctx context.Context, t *Tool, p cairn.PendingCall) (context.Context, *telemetry.Tool) {
	safety, approval := "unknown", p.Approval
	if t != nil {
		safety, approval = t.safety(), approval || t.opts.approval
	}
	return r.s.agent.telemetry().StartTool(ctx, r.s.id, p.Name, p.ID, safety, approval, p.Args)
}

// notRunOutcome names, for a tool call's span, why the call got an error
// result without running.
func notRunOutcome(output string) string {
	switch {
	case strings.HasPrefix(output, deniedPrefix):
		return "denied"
	case output == OutcomeUnknown:
		return "outcome_unknown"
	case output == undecided:
		return "undecided"
	}
	return "unknown_tool"
}

// run runs a tool, recording tool.started first for one that is not idempotent.
func (r *runner) run(ctx context.Context, t *Tool, p cairn.PendingCall, st *cairn.State) outcome {
	if ctx.Err() != nil {
		return outcome{cancelled: true}
	}
	if err := r.s.checkClaim(); err != nil {
		return outcome{notRun: err}
	}
	ctx, span := r.startTool(ctx, t, p)
	if !t.Idempotent() && !p.Started {
		// The start must be in the store before the side effect: in
		// degrade mode too, an outage keeps the call from running.
		e := cairn.MustEvent(cairn.KindToolStarted, r.runID, cairn.ToolStarted{CallID: p.ID, Name: p.Name, Args: p.Args})
		if err := r.s.appendDurable(ctx, e); err != nil {
			span.End("not_recorded", "", true)
			if nr, ok := errors.AsType[*NotRecordedError](err); ok {
				return outcome{notRun: nr}
			}
			return outcome{err: fmt.Errorf("run session %s: record start of %s: %w", r.s.id, p.ID, err)}
		}
		if err := r.s.checkClaim(); err != nil {
			// Recorded as started and not run: a resume reports its
			// outcome as unknown, which is safe.
			span.End("not_run", "", true)
			return outcome{notRun: err}
		}
	}
	r.observe(ToolEvent{Call: p.ToolCall})
	scope := &callScope{callID: p.ID, vars: maps.Clone(st.Variables), session: r.s.id, seq: askedAt(st, p.ID)}
	begin := time.Now()
	output, err := r.safeCall(withScope(ctx, scope), t, p)
	d := time.Since(begin)
	if err != nil && ctx.Err() != nil {
		span.End("cancelled", "", true)
		return outcome{cancelled: true}
	}
	res := cairn.ToolResult{CallID: p.ID, Name: p.Name, Output: output, DurationMS: d.Milliseconds()}
	if err != nil {
		res.Output, res.IsError = err.Error(), true
		scope = nil // a failed call changes no variable
	}
	// Whatever the tool, its text enters the history cut to the limit, so
	// that no output nor error can make a tool.result the store refuses.
	res.Output = CutOutput(res.Output, r.s.agent.maxToolOutput())
	if res.IsError {
		span.End("error", res.Output, true)
	} else {
		span.End("ok", res.Output, false)
	}
	r.observe(ToolEvent{Call: p.ToolCall, Done: true, Output: res.Output, IsError: res.IsError, Duration: d})
	return outcome{result: res, scope: scope}
}

// safeCall runs the tool and turns a panic into an error.
func (r *runner) safeCall(ctx context.Context, t *Tool, p cairn.PendingCall) (out string, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("tool %s panicked: %v", t.name, v)
			r.s.agent.logger().Error(err.Error(), "session", r.s.id, "call", p.ID, "stack", string(debug.Stack()))
		}
	}()
	return t.call(ctx, p.Args)
}

func (r *runner) observe(e ToolEvent) {
	if r.o.observe != nil {
		r.o.observe(e)
	}
}

func (a *Agent) toolNames() []string {
	names := make([]string, 0, len(a.Tools))
	for _, t := range a.Tools {
		names = append(names, t.name)
	}
	return names
}

// awaitingRecorded reports whether the session's last events are a
// run.interrupted{approval} followed only by decisions, and every call of
// awaiting is marked as waiting: the wait for approval is already
// recorded.
func (s *Session) awaitingRecorded(awaiting []cairn.ToolCall) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range awaiting {
		if i := slices.IndexFunc(s.state.Pending, func(p cairn.PendingCall) bool { return p.ID == c.ID }); i < 0 || !s.state.Pending[i].Approval {
			return false
		}
	}
	for i := s.mem.Len() - 1; i >= 0; i-- {
		e := s.mem.Event(i)
		switch e.Kind {
		case cairn.KindApprovalDecided:
			continue
		case cairn.KindRunInterrupted:
			v, err := e.Decode()
			ri, _ := v.(*cairn.RunInterrupted)
			return err == nil && ri.Reason == cairn.InterruptApproval
		}
		return false
	}
	// Every event held is a decision: the wait began before the memory's
	// base (a snapshot) if the state there was already awaiting.
	base := s.mem.BaseState()
	return base != nil && base.Status == cairn.StatusAwaiting
}

// askedAt returns the seq of the model response that asked for call id:
// the event of the assistant message that holds it, 0 if none does.
func askedAt(st *cairn.State, id string) int64 {
	for i := len(st.Messages) - 1; i >= 0; i-- {
		m := st.Messages[i]
		if m.Role == cairn.RoleAssistant && slices.ContainsFunc(m.ToolCalls, func(c cairn.ToolCall) bool { return c.ID == id }) {
			return m.Seq
		}
	}
	return 0
}
