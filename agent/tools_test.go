package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/script"
)

type nameIn struct {
	Name string `json:"name"`
}

func TestSession_ParallelTools(t *testing.T) {
	st := &testcheck.Recording{Store: testcheck.MemoryStore(t)}
	// Each tool waits for the other to have started: they finish only if
	// they run at the same time. "first" also waits for "second" to end,
	// so the results complete in the reverse of the model's order.
	aStarted, bStarted, bDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	wait := func(ctx context.Context, c chan struct{}, what string) error {
		select {
		case <-c:
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("not concurrent: " + what + " never happened")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	first := agent.NewTool("first", "", func(ctx context.Context, _ struct{}) (string, error) {
		close(aStarted)
		if err := wait(ctx, bStarted, "second started"); err != nil {
			return "", err
		}
		return "A", wait(ctx, bDone, "second done")
	})
	second := agent.NewTool("second", "", func(ctx context.Context, _ struct{}) (string, error) {
		close(bStarted)
		defer close(bDone)
		return "B", wait(ctx, aStarted, "first started")
	})
	var mu sync.Mutex
	var observed []string
	a := offlineAgent(st)
	a.Tools = []*agent.Tool{first, second}
	a.Model = scripted(t, script.Step{ToolCalls: []script.Call{call("first", `{}`), call("second", `{}`)}}, script.Step{Text: "done"})
	s, _ := a.Start(t.Context())
	res, err := s.Run(t.Context(), "go", agent.ObserveTools(func(e agent.ToolEvent) {
		mu.Lock()
		defer mu.Unlock()
		observed = append(observed, e.Call.Name+map[bool]string{false: " start", true: " done"}[e.Done])
	}))
	if err != nil || res.Output != "done" {
		t.Fatalf("run: %v %v", res, err)
	}
	results := decoded[cairn.ToolResult](t, loadEvents(t, st, s.ID()), cairn.KindToolResult)
	if len(results) != 2 || results[0].CallID != "call_0_0" || results[1].CallID != "call_0_1" {
		t.Fatalf("results not in the model's order: %+v", results)
	}
	for _, r := range results {
		if r.IsError {
			t.Errorf("%s: %s", r.Name, r.Output)
		}
	}
	n := 0
	for _, k := range batchKinds(st) {
		if k[0] == cairn.KindToolResult {
			n++
			if len(k) != 1 {
				t.Errorf("a tool result shares its append: %v", k)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d appends of tool results, want 2", n)
	}
	if len(observed) != 4 {
		t.Errorf("observer saw %v, want 4 events", observed)
	}
}

func TestSession_ToolErrors(t *testing.T) {
	st := testcheck.MemoryStore(t)
	failing := agent.NewTool("fail", "", func(context.Context, struct{}) (string, error) { return "", errors.New("disk on fire") })
	panicking := agent.NewTool("panic", "", func(context.Context, struct{}) (string, error) { panic("boom") })
	greet := agent.NewTool("greet", "", func(_ context.Context, in nameIn) (string, error) { return "hello " + in.Name, nil })
	a := offlineAgent(st)
	a.Tools = []*agent.Tool{failing, panicking, greet}
	a.Model = scripted(t, script.Step{ToolCalls: []script.Call{
		call("fail", `{}`), call("panic", `{}`), call("nosuch", `{}`),
		call("greet", `{"name":7}`), call("greet", `{"nom":"x"}`), call("greet", `{}`), call("greet", `{"name":"Ada"}`),
	}}, script.Step{Text: "ok"})
	s, _ := a.Start(t.Context())
	res, err := s.Run(t.Context(), "go")
	if err != nil || res.Status != cairn.StatusCompleted {
		t.Fatalf("a tool error crashed the run: %v %v", res, err)
	}
	want := []struct {
		isErr bool
		has   string
	}{
		{true, "disk on fire"},
		{true, "tool panic panicked: boom"},
		{true, `unknown tool "nosuch"`},
		{true, `bad argument "name"`},
		{true, `bad argument "nom"`},
		{true, `bad argument "name": is missing`},
		{false, "hello Ada"},
	}
	results := decoded[cairn.ToolResult](t, loadEvents(t, st, s.ID()), cairn.KindToolResult)
	if len(results) != len(want) {
		t.Fatalf("%d results, want %d", len(results), len(want))
	}
	for i, w := range want {
		if results[i].IsError != w.isErr || !strings.Contains(results[i].Output, w.has) {
			t.Errorf("result %d: got %v %q, want %v and %q", i, results[i].IsError, results[i].Output, w.isErr, w.has)
		}
	}
}

func TestNewTool(t *testing.T) {
	type in struct {
		Expression string  `json:"expression" jsonschema:"description=what to compute"`
		Digits     int     `json:"digits,omitempty"`
		Scale      float64 `json:"scale"`
	}
	tool := agent.NewTool("calc", "Compute.", func(_ context.Context, v in) (string, error) { return v.Expression, nil }, agent.NotIdempotent(), agent.RequireApproval())
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(tool.Schema(), &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || len(schema.Properties) != 3 || strings.Join(schema.Required, ",") != "expression,scale" {
		t.Errorf("schema: %s", tool.Schema())
	}
	if tool.Idempotent() || !tool.RequiresApproval() || tool.RerunsOnResume() {
		t.Errorf("options not applied")
	}
	if out, err := tool.Call(t.Context(), json.RawMessage(`{"expression":"1","scale":2}`)); err != nil || out != "1" {
		t.Errorf("call: %q %v", out, err)
	}
	_, err := tool.Call(t.Context(), json.RawMessage(`{"expression":1,"scale":2}`))
	if ae, ok := errors.AsType[*agent.ArgumentError](err); !ok || ae.Field != "expression" {
		t.Errorf("a mistyped argument: got %v", err)
	}
	if _, err := tool.Call(t.Context(), json.RawMessage(`[1]`)); err == nil {
		t.Errorf("an array of arguments was accepted")
	}
	if err := agent.SetVar(t.Context(), "k", 1); !errors.Is(err, agent.ErrNoSession) {
		t.Errorf("SetVar outside a call: %v", err)
	}
}

func TestSession_Approval(t *testing.T) {
	st := testcheck.MemoryStore(t)
	var ran atomic.Int32
	deploy := agent.NewTool("deploy", "", func(_ context.Context, in nameIn) (string, error) {
		ran.Add(1)
		return "deployed " + in.Name, nil
	}, agent.RequireApproval())
	mk := func() *agent.Agent {
		a := offlineAgent(st)
		a.Tools = []*agent.Tool{deploy}
		a.Model = scripted(t, script.Step{ToolCalls: []script.Call{call("deploy", `{"name":"web"}`), call("deploy", `{"name":"db"}`)}}, script.Step{Text: "finished"})
		return a
	}
	s, _ := mk().Start(t.Context(), agent.WithID("ap"))
	res, err := s.Run(t.Context(), "ship it")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != cairn.StatusAwaiting || len(res.Awaiting) != 2 || ran.Load() != 0 {
		t.Fatalf("got %s with %d awaiting, %d ran; want awaiting_approval, 2, 0", res.Status, len(res.Awaiting), ran.Load())
	}
	intr := decoded[cairn.RunInterrupted](t, loadEvents(t, st, "ap"), cairn.KindRunInterrupted)
	if len(intr) != 1 || intr[0].Reason != cairn.InterruptApproval || len(intr[0].Pending) != 2 {
		t.Fatalf("run.interrupted: %+v", intr)
	}
	// Later, another process: resume, decide, finish.
	s2, err := mk().Resume(t.Context(), "ap")
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := s2.ResumeRun(t.Context()); res.Status != cairn.StatusAwaiting {
		t.Errorf("resume without decisions: %s, want awaiting_approval", res.Status)
	}
	if err := s2.Approve(t.Context(), "call_0_0", true, ""); err != nil {
		t.Fatal(err)
	}
	if err := s2.Approve(t.Context(), "call_0_1", false, "not on a Friday"); err != nil {
		t.Fatal(err)
	}
	if err := s2.Approve(t.Context(), "call_9_9", true, ""); err == nil {
		t.Errorf("approving an unknown call succeeded")
	}
	res, err = s2.ResumeRun(t.Context())
	if err != nil || res.Status != cairn.StatusCompleted || res.Output != "finished" {
		t.Fatalf("resume: %+v %v", res, err)
	}
	if ran.Load() != 1 {
		t.Errorf("the tool ran %d times, want 1", ran.Load())
	}
	results := decoded[cairn.ToolResult](t, loadEvents(t, st, "ap"), cairn.KindToolResult)
	if results[0].Output != "deployed web" || results[1].Output != "denied by a person: not on a Friday" || !results[1].IsError {
		t.Errorf("results: %+v", results)
	}
	if n := len(decoded[cairn.RunInterrupted](t, loadEvents(t, st, "ap"), cairn.KindRunInterrupted)); n != 1 {
		t.Errorf("%d run.interrupted, want 1 (resuming without a decision records nothing)", n)
	}
	checkReplay(t, s2, st)
}

// slowTool returns a tool named slow that, until release is called, says
// on started that it has begun and waits for its context to end; after
// release it returns "finished".
func slowTool() (slow *agent.Tool, started <-chan struct{}, release func()) {
	var block atomic.Bool
	block.Store(true)
	ch := make(chan struct{}, 1)
	slow = agent.NewTool("slow", "", func(ctx context.Context, _ struct{}) (string, error) {
		if block.Load() {
			ch <- struct{}{}
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "finished", nil
	})
	return slow, ch, func() { block.Store(false) }
}

// cancelOn returns a context that is cancelled once started receives.
func cancelOn(t *testing.T, started <-chan struct{}) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		select {
		case <-started:
		case <-ctx.Done():
		}
		cancel()
	}()
	return ctx
}

func TestSession_InterruptDuringTool(t *testing.T) {
	st := testcheck.MemoryStore(t)
	slow, started, release := slowTool()
	a := offlineAgent(st)
	a.Tools = []*agent.Tool{slow}
	a.Model = scripted(t, script.Step{ToolCalls: []script.Call{call("slow", `{}`)}}, script.Step{Text: "done"})
	s, _ := a.Start(t.Context(), agent.WithID("int"))
	ctx := cancelOn(t, started)
	res, err := s.Run(ctx, "go")
	if !errors.Is(err, context.Canceled) || res.Status != cairn.StatusInterrupted {
		t.Fatalf("got %v %v, want interrupted and context.Canceled", res, err)
	}
	events := loadEvents(t, st, "int")
	last := events[len(events)-1]
	intr := decoded[cairn.RunInterrupted](t, events[len(events)-1:], cairn.KindRunInterrupted)
	if last.Kind != cairn.KindRunInterrupted || intr[0].Reason != cairn.InterruptCancelled || len(intr[0].Pending) != 1 {
		t.Fatalf("last event %s %+v, want run.interrupted{cancelled} with the pending call", last.Kind, intr)
	}
	release()
	s2, _ := a.Resume(t.Context(), "int")
	res, err = s2.ResumeRun(t.Context())
	if err != nil || res.Status != cairn.StatusCompleted || res.Output != "done" {
		t.Fatalf("resume: %+v %v", res, err)
	}
	results := decoded[cairn.ToolResult](t, loadEvents(t, st, "int"), cairn.KindToolResult)
	if len(results) != 1 || results[0].Output != "finished" {
		t.Errorf("results: %+v", results)
	}
	testcheck.History(t, s2.State().Messages)
}

func TestSession_InterruptDuringModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := testcheck.MemoryStore(t)
		a := offlineAgent(st)
		a.Model = scripted(t, script.Step{Text: "slow answer", DelayMS: 60_000})
		s, _ := a.Start(t.Context(), agent.WithID("im"))
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			synctest.Wait() // the run waits in the model call
			cancel()
		}()
		if _, err := s.Run(ctx, "go"); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
		if st := s.State(); st.Status != cairn.StatusInterrupted || st.Interrupt != cairn.InterruptCancelled {
			t.Fatalf("state %s/%s, want interrupted/cancelled", st.Status, st.Interrupt)
		}
		if n := len(decoded[cairn.ModelResponse](t, loadEvents(t, st, "im"), cairn.KindModelResponse)); n != 0 {
			t.Errorf("%d model responses recorded, want 0", n)
		}
		// Continue after an interrupt keeps the memory.
		a.Model = scripted(t, script.Step{Text: "quick"}, script.Step{Text: "second"})
		res, err := s.Run(t.Context(), "again", agent.Continue())
		if err != nil || res.Output != "quick" {
			t.Fatalf("continue: %+v %v", res, err)
		}
		if n := len(s.State().Messages); n != 4 {
			t.Errorf("%d messages, want 4 (system, go, again, quick)", n)
		}
	})
}

// A process died after tool.started of calls that were not idempotent, and
// after a model asked for an idempotent call: resuming gives the first an
// "outcome unknown" result, runs the one that opted into reruns, and runs
// the idempotent one.
func TestSession_ResumeAfterCrash(t *testing.T) {
	st := testcheck.MemoryStore(t)
	var sends, rerunCalls, reads atomic.Int32
	send := agent.NewTool("send", "", func(context.Context, struct{}) (string, error) { sends.Add(1); return "sent", nil }, agent.NotIdempotent())
	rerun := agent.NewTool("rerun", "", func(context.Context, struct{}) (string, error) { rerunCalls.Add(1); return "ok", nil }, agent.NotIdempotent(), agent.RerunOnResume())
	read := agent.NewTool("read", "", func(context.Context, struct{}) (string, error) { reads.Add(1); return "data", nil })
	a := offlineAgent(st)
	a.Tools = []*agent.Tool{send, rerun, read}
	a.Model = scripted(t, script.Step{ToolCalls: []script.Call{call("send", `{}`), call("rerun", `{}`), call("read", `{}`)}}, script.Step{Text: "done"})
	// The dead process's history, written as it would have written it.
	if err := st.Create(t.Context(), cairn.SessionMeta{ID: "crashed"}); err != nil {
		t.Fatal(err)
	}
	mem := &cairn.Memory{}
	fp := a.Fingerprint()
	steps := [][]cairn.Event{
		{
			cairn.MustEvent(cairn.KindRunStarted, "r1", cairn.RunStarted{RunID: "r1", Fingerprint: fp, Model: fp.Model, Reset: true}),
			cairn.MustEvent(cairn.KindMemoryReset, "r1", cairn.MemoryReset{}),
			cairn.MustEvent(cairn.KindMessageUser, "r1", cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: "go"}}}),
		},
		{cairn.MustEvent(cairn.KindModelResponse, "r1", cairn.ModelResponse{ToolCalls: []cairn.ToolCall{
			{ID: "call_0_0", Name: "send", Args: json.RawMessage(`{}`)},
			{ID: "call_0_1", Name: "rerun", Args: json.RawMessage(`{}`)},
			{ID: "call_0_2", Name: "read", Args: json.RawMessage(`{}`)},
		}, Model: "script", FinishReason: "tool_calls"})},
		{cairn.MustEvent(cairn.KindToolStarted, "r1", cairn.ToolStarted{CallID: "call_0_0", Name: "send", Args: json.RawMessage(`{}`)})},
		{cairn.MustEvent(cairn.KindToolStarted, "r1", cairn.ToolStarted{CallID: "call_0_1", Name: "rerun", Args: json.RawMessage(`{}`)})},
	}
	for _, evs := range steps {
		last := mem.LastSeq()
		numbered, err := mem.Add(evs...)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Append(t.Context(), "crashed", last, numbered...); err != nil {
			t.Fatal(err)
		}
	}
	s, err := a.Resume(t.Context(), "crashed")
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.ResumeRun(t.Context())
	if err != nil || res.Status != cairn.StatusCompleted {
		t.Fatalf("resume: %+v %v", res, err)
	}
	if sends.Load() != 0 || rerunCalls.Load() != 1 || reads.Load() != 1 {
		t.Errorf("calls: send %d, rerun %d, read %d; want 0, 1, 1", sends.Load(), rerunCalls.Load(), reads.Load())
	}
	results := decoded[cairn.ToolResult](t, loadEvents(t, st, "crashed"), cairn.KindToolResult)
	if results[0].Output != agent.OutcomeUnknown || !results[0].IsError || results[1].Output != "ok" || results[2].Output != "data" {
		t.Errorf("results: %+v", results)
	}
	if n := len(decoded[cairn.ModelResponse](t, loadEvents(t, st, "crashed"), cairn.KindModelResponse)); n != 2 {
		t.Errorf("%d model responses, want 2 (the recorded one is not made again)", n)
	}
	testcheck.History(t, s.State().Messages)
}

// Calls without an ID, with a repeated ID or with arguments that are not
// JSON are recorded so that the history stays valid, and answered.
func TestSession_MalformedCalls(t *testing.T) {
	st := testcheck.MemoryStore(t)
	a := offlineAgent(st)
	a.Model = funcModel(func(req *provider.Request) (*provider.Response, error) {
		if req.Responses > 0 {
			return &provider.Response{Text: "done"}, nil
		}
		return &provider.Response{ToolCalls: []cairn.ToolCall{
			{Name: "calc", Args: json.RawMessage(`{bad`)},
			{ID: "x", Name: "calc"},
			{ID: "x", Name: "calc", Args: json.RawMessage(`{"expression":"1"}`)},
		}}, nil
	})
	s, _ := a.Start(t.Context())
	res, err := s.Run(t.Context(), "go")
	if err != nil || res.Output != "done" {
		t.Fatalf("run: %+v %v", res, err)
	}
	events := loadEvents(t, st, s.ID())
	resp := decoded[cairn.ModelResponse](t, events, cairn.KindModelResponse)[0]
	ids := map[string]bool{}
	for _, c := range resp.ToolCalls {
		if c.ID == "" || ids[c.ID] || !json.Valid(c.Args) {
			t.Errorf("call recorded as %+v", c)
		}
		ids[c.ID] = true
	}
	if resp.FinishReason != "tool_calls" || resp.Model != "func" {
		t.Errorf("finish %q model %q", resp.FinishReason, resp.Model)
	}
	results := decoded[cairn.ToolResult](t, events, cairn.KindToolResult)
	if !results[0].IsError || !results[1].IsError || results[2].Output != "1" {
		t.Errorf("results: %+v", results)
	}
	testcheck.History(t, s.State().Messages)
}

// A new input after a run was interrupted with a call pending: the call
// gets its result first, then the input, so the history stays valid.
func TestSession_ContinueAfterInterrupt(t *testing.T) {
	st := testcheck.MemoryStore(t)
	slow, started, release := slowTool()
	a := offlineAgent(st)
	a.Tools = []*agent.Tool{slow}
	a.Model = scripted(t, script.Step{ToolCalls: []script.Call{call("slow", `{}`)}}, script.Step{Text: "answer"})
	s, _ := a.Start(t.Context())
	ctx := cancelOn(t, started)
	if _, err := s.Run(ctx, "go"); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	release()
	res, err := s.Run(t.Context(), "and now?", agent.Continue())
	if err != nil || res.Output != "answer" {
		t.Fatalf("continue: %+v %v", res, err)
	}
	var roles []string
	for _, m := range s.State().Messages {
		roles = append(roles, m.Role+":"+m.Content)
	}
	want := "system:Be brief. user:go assistant: tool:finished user:and now? assistant:answer"
	if got := strings.Join(roles, " "); got != want {
		t.Errorf("messages\n got %s\nwant %s", got, want)
	}
	testcheck.History(t, s.State().Messages)
}

func TestSession_Busy(t *testing.T) {
	st := testcheck.MemoryStore(t)
	release, started := make(chan struct{}), make(chan struct{})
	hold := agent.NewTool("hold", "", func(context.Context, struct{}) (string, error) {
		close(started)
		<-release
		return "ok", nil
	})
	a := offlineAgent(st)
	a.Tools = []*agent.Tool{hold}
	a.Model = scripted(t, script.Step{ToolCalls: []script.Call{call("hold", `{}`)}}, script.Step{Text: "done"})
	s, _ := a.Start(t.Context())
	done := make(chan error, 1)
	go func() { _, err := s.Run(t.Context(), "go"); done <- err }()
	<-started
	if _, err := s.Run(t.Context(), "again"); !errors.Is(err, agent.ErrBusy) {
		t.Errorf("Run during a run: %v, want ErrBusy", err)
	}
	if _, err := s.ResumeRun(t.Context()); !errors.Is(err, agent.ErrBusy) {
		t.Errorf("ResumeRun during a run: %v, want ErrBusy", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestSession_ResumeRun(t *testing.T) {
	st := testcheck.MemoryStore(t)
	s, _ := offlineAgent(st).Start(t.Context())
	if _, err := s.ResumeRun(t.Context()); err == nil {
		t.Errorf("ResumeRun of a session with no run succeeded")
	}
	var streamed strings.Builder
	res, err := s.Run(t.Context(), "hello", agent.OnText(func(d string) { streamed.WriteString(d) }))
	if err != nil {
		t.Fatal(err)
	}
	if streamed.String() != res.Output || res.Usage.InputTokens == 0 || res.Usage.OutputTokens == 0 || res.Steps != 1 {
		t.Errorf("streamed %q, result %+v", streamed.String(), res)
	}
	again, err := s.ResumeRun(t.Context())
	if err != nil || again.Status != cairn.StatusCompleted || again.Output != res.Output {
		t.Errorf("ResumeRun of a finished run: %+v %v, want its result", again, err)
	}
	if n := s.Memory().Len(); n != 6 {
		t.Errorf("%d events, want 6 (ResumeRun of a finished run writes nothing)", n)
	}
}

// TestSession_ApprovalRecordedHolds: a program whose tool requires
// approval asks for a call; the need is recorded with the model's response
// (one append). Another program, whose same tool does not require
// approval, resumes the session: the call does not run until a person
// decides, and then runs once.
func TestSession_ApprovalRecordedHolds(t *testing.T) {
	st := &testcheck.Recording{Store: testcheck.MemoryStore(t)}
	var ran atomic.Int32
	mkTool := func(opts ...agent.ToolOption) *agent.Tool {
		return agent.NewTool("deploy", "", func(_ context.Context, in nameIn) (string, error) {
			ran.Add(1)
			return "deployed " + in.Name, nil
		}, opts...)
	}
	mk := func(tool *agent.Tool) *agent.Agent {
		a := offlineAgent(st)
		a.Tools = []*agent.Tool{tool, agent.NewTool("look", "", func(context.Context, struct{}) (string, error) { return "ok", nil })}
		a.Model = scripted(t, script.Step{ToolCalls: []script.Call{call("deploy", `{"name":"web"}`), call("look", `{}`)}}, script.Step{Text: "finished"})
		return a
	}
	s, _ := mk(mkTool(agent.RequireApproval())).Start(t.Context(), agent.WithID("ap2"))
	if res, err := s.Run(t.Context(), "ship it"); err != nil || res.Status != cairn.StatusAwaiting {
		t.Fatalf("run: %+v %v", res, err)
	}
	together := slices.ContainsFunc(batchKinds(st), func(k []cairn.Kind) bool {
		return slices.Equal(k, []cairn.Kind{cairn.KindModelResponse, cairn.KindRunInterrupted})
	})
	if !together {
		t.Fatalf("appends %v, want the response and the wait for approval together", batchKinds(st))
	}
	intr := decoded[cairn.RunInterrupted](t, loadEvents(t, st, "ap2"), cairn.KindRunInterrupted)
	if len(intr[0].Pending) != 1 || intr[0].Pending[0].Name != "deploy" {
		t.Fatalf("the wait lists %+v, want only the deploy call", intr[0].Pending)
	}

	lax := mk(mkTool()) // the same tool, without the approval rule
	s2, err := lax.Resume(t.Context(), "ap2")
	if err != nil {
		t.Fatal(err)
	}
	res, err := s2.ResumeRun(t.Context())
	if err != nil || res.Status != cairn.StatusAwaiting || len(res.Awaiting) != 1 || ran.Load() != 0 {
		t.Fatalf("resume by a program without the rule: %+v %v, ran %d; want still awaiting", res, err, ran.Load())
	}
	if err := s2.Approve(t.Context(), res.Awaiting[0].ID, true, "ok"); err != nil {
		t.Fatal(err)
	}
	if res, err := s2.ResumeRun(t.Context()); err != nil || res.Status != cairn.StatusCompleted || ran.Load() != 1 {
		t.Fatalf("after approval: %+v %v, ran %d", res, err, ran.Load())
	}
	checkReplay(t, s2, st)
}

// TestSession_ResumeUnknownTool: a session stopped with a pending call of
// a tool the resuming program lacks. The resume is an error naming the
// tool and writes nothing, instead of answering the call with an error and
// completing; denying the call lets the run go on.
func TestSession_ResumeUnknownTool(t *testing.T) {
	st := testcheck.MemoryStore(t)
	first := offlineAgent(st)
	first.Tools = []*agent.Tool{agent.NewTool("mail", "", func(context.Context, struct{}) (string, error) { return "sent", nil })}
	first.Model = scripted(t, script.Step{ToolCalls: []script.Call{call("mail", `{}`)}}, script.Step{Text: "finished"})
	s, _ := first.Start(t.Context(), agent.WithID("unk"))
	ctx, cancel := context.WithCancel(t.Context())
	first.Tools[0] = agent.NewTool("mail", "", func(context.Context, struct{}) (string, error) { cancel(); return "", ctx.Err() })
	if res, _ := s.Run(ctx, "mail them"); res.Status != cairn.StatusInterrupted {
		t.Fatalf("first run: %s, want interrupted", res.Status)
	}
	before := len(loadEvents(t, st, "unk"))

	other := offlineAgent(st)
	other.Model = first.Model
	s2, err := other.Resume(t.Context(), "unk")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s2.ResumeRun(t.Context())
	var ue *agent.UnknownToolError
	if !errors.As(err, &ue) || ue.Call.Name != "mail" || !strings.Contains(err.Error(), `"mail"`) {
		t.Fatalf("resume: %v, want an *UnknownToolError naming mail", err)
	}
	if n := len(loadEvents(t, st, "unk")); n != before {
		t.Fatalf("the refused resume wrote %d events", n-before)
	}
	if err := s2.Approve(t.Context(), ue.Call.ID, false, "no mail tool here"); err != nil {
		t.Fatal(err)
	}
	res, err := s2.ResumeRun(t.Context())
	if err != nil || res.Status != cairn.StatusCompleted {
		t.Fatalf("after the denial: %+v %v", res, err)
	}
	results := decoded[cairn.ToolResult](t, loadEvents(t, st, "unk"), cairn.KindToolResult)
	if len(results) != 1 || !strings.HasPrefix(results[0].Output, "denied by a person") {
		t.Errorf("results %+v, want the denial", results)
	}
}
