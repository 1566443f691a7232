package agent_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/agent/builtin"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/offline"
	"github.com/cairnhq/cairn/provider/script"
	"github.com/cairnhq/cairn/store/crypt"
)

func offlineAgent(st cairn.Store) *agent.Agent {
	return &agent.Agent{Name: "t", Instructions: "Be brief.", Model: offline.New(), Tools: builtin.Tools(), Store: st, Logger: quietLogger()}
}

func TestSession_RunContinue(t *testing.T) {
	st := &testcheck.Recording{Store: testcheck.MemoryStore(t)}
	s, err := offlineAgent(st).Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := cairn.ValidateID(s.ID()); err != nil {
		t.Fatalf("generated id: %v", err)
	}
	if _, err := s.Run(t.Context(), "I like tea"); err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(t.Context(), "What do I like?", agent.Continue())
	if err != nil {
		t.Fatal(err)
	}
	want := `Turn 2. You said "What do I like?". Before that you told me "I like tea".`
	if res.Output != want || res.Status != cairn.StatusCompleted {
		t.Errorf("got %q %s, want %q completed", res.Output, res.Status, want)
	}
	// Each step is one atomic append.
	wantBatches := [][]cairn.Kind{
		{cairn.KindRunStarted, cairn.KindMemoryReset, cairn.KindMessageSystem, cairn.KindMessageUser},
		{cairn.KindModelResponse, cairn.KindRunFinished},
		{cairn.KindRunStarted, cairn.KindMessageUser},
		{cairn.KindModelResponse, cairn.KindRunFinished},
	}
	if got := batchKinds(st); !slices.EqualFunc(got, wantBatches, slices.Equal) {
		t.Errorf("appends\n got %v\nwant %v", got, wantBatches)
	}
	starts := decoded[cairn.RunStarted](t, loadEvents(t, st, s.ID()), cairn.KindRunStarted)
	if len(starts) != 2 || !starts[0].Reset || starts[1].Reset {
		t.Errorf("run.started reset flags: got %+v", starts)
	}
	resp := decoded[cairn.ModelResponse](t, loadEvents(t, st, s.ID()), cairn.KindModelResponse)[1]
	if resp.Model != "offline" || resp.FinishReason != "stop" || resp.Usage.InputTokens == 0 {
		t.Errorf("model.response: got %+v", resp)
	}
	checkReplay(t, s, st)
}

func TestSession_RunResets(t *testing.T) {
	st := testcheck.MemoryStore(t)
	s, _ := offlineAgent(st).Start(t.Context())
	s.Run(t.Context(), "one")
	s.Run(t.Context(), "remember x=1", agent.Continue())
	res, err := s.Run(t.Context(), "fresh start")
	if err != nil {
		t.Fatal(err)
	}
	want := `Turn 1. You said "fresh start". This is the start of our conversation.`
	if res.Output != want {
		t.Errorf("got %q, want %q", res.Output, want)
	}
	state := s.State()
	if len(state.Messages) != 3 || len(state.Variables) != 0 {
		t.Errorf("after a fresh run: %d messages, variables %v; want 3 and none", len(state.Messages), state.Variables)
	}
	if n := len(decoded[cairn.MessageUser](t, loadEvents(t, st, s.ID()), cairn.KindMessageUser)); n != 3 {
		t.Errorf("the log keeps %d user messages, want 3 (a reset keeps earlier events for audit)", n)
	}
}

func TestAgent_Open(t *testing.T) {
	st := testcheck.MemoryStore(t)
	s1, err := offlineAgent(st).Open(t.Context(), "thread-1")
	if err != nil {
		t.Fatal(err)
	}
	s1.Run(t.Context(), "first", agent.Continue())
	// Another process: a new agent on the same store, knowing only the ID.
	s2, err := offlineAgent(st).Open(t.Context(), "thread-1")
	if err != nil {
		t.Fatal(err)
	}
	res, err := s2.Run(t.Context(), "second", agent.Continue())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Output, `Before that you told me "first"`) {
		t.Errorf("the reopened thread forgot the first turn: %q", res.Output)
	}
	if _, err := offlineAgent(st).Open(t.Context(), "../x"); !errors.Is(err, cairn.ErrInvalidID) {
		t.Errorf("Open of a bad id: got %v, want ErrInvalidID", err)
	}
}

func TestAgent_Start(t *testing.T) {
	st := testcheck.MemoryStore(t)
	a := offlineAgent(st)
	if _, err := a.Start(t.Context(), agent.WithID("review-pr-42"), agent.WithLabels(map[string]string{"team": "a"})); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Start(t.Context(), agent.WithID("review-pr-42")); !errors.Is(err, cairn.ErrExists) {
		t.Errorf("second Start with the same id: got %v, want ErrExists", err)
	}
	if _, err := a.Resume(t.Context(), "nobody"); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Resume of a missing session: got %v, want ErrNotFound", err)
	}
	rec, _ := st.Load(t.Context(), "review-pr-42", 0)
	if rec.Info.Labels["team"] != "a" {
		t.Errorf("labels: got %v", rec.Info.Labels)
	}
	// No store: a private, volatile one.
	v := &agent.Agent{Model: offline.New()}
	s, err := v.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res, err := s.Run(t.Context(), "hi"); err != nil || res.Status != cairn.StatusCompleted {
		t.Errorf("volatile run: %v %v", res, err)
	}
}

func TestSession_Variables(t *testing.T) {
	st := &testcheck.Recording{Store: testcheck.MemoryStore(t)}
	a := offlineAgent(st)
	a.Model = scripted(t,
		script.Step{ToolCalls: []script.Call{call("remember", `{"key":"color","value":{"shade":"blue"}}`)}},
		script.Step{ToolCalls: []script.Call{call("recall", `{"key":"color"}`), call("recall", `{"key":"size"}`)}},
		script.Step{Text: "ok"},
	)
	s, _ := a.Start(t.Context())
	if _, err := s.Run(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	var got struct{ Shade string }
	if ok, err := s.State().Var("color", &got); !ok || err != nil || got.Shade != "blue" {
		t.Errorf("variable color: %v %v %+v", ok, err, got)
	}
	if !slices.ContainsFunc(batchKinds(st), func(k []cairn.Kind) bool {
		return slices.Equal(k, []cairn.Kind{cairn.KindToolResult, cairn.KindStateSet})
	}) {
		t.Errorf("no append holds tool.result with its state.set: %v", batchKinds(st))
	}
	msgs := s.State().Messages
	recall, missing := msgs[len(msgs)-3], msgs[len(msgs)-2]
	if recall.Content != `{"shade":"blue"}` || recall.IsError || !missing.IsError {
		t.Errorf("recall results: %+v / %+v", recall, missing)
	}
	checkReplay(t, s, st)
}

func TestSession_ModelError(t *testing.T) {
	st := testcheck.MemoryStore(t)
	a := offlineAgent(st)
	a.Model = scripted(t, script.Step{ToolCalls: []script.Call{call("calc", `{"expression":"1+1"}`)}})
	s, _ := a.Start(t.Context())
	res, err := s.Run(t.Context(), "go")
	if !errors.Is(err, provider.ErrScriptEnded) {
		t.Fatalf("got %v, want ErrScriptEnded", err)
	}
	if res.Status != cairn.StatusFailed || res.Error == nil || res.Error.Code != "script_ended" {
		t.Errorf("result: %+v", res)
	}
	fin := decoded[cairn.RunFinished](t, loadEvents(t, st, s.ID()), cairn.KindRunFinished)
	if len(fin) != 1 || fin[0].Status != cairn.StatusFailed || fin[0].Error == nil || fin[0].Error.Message == "" {
		t.Errorf("run.finished: %+v", fin)
	}
}

func TestSession_MaxSteps(t *testing.T) {
	st := testcheck.MemoryStore(t)
	a := offlineAgent(st)
	a.MaxSteps = 3
	var steps []script.Step
	for range 5 {
		steps = append(steps, script.Step{Text: "again", ToolCalls: []script.Call{call("calc", `{"expression":"2*2"}`)}})
	}
	a.Model = scripted(t, steps...)
	s, _ := a.Start(t.Context())
	res, err := s.Run(t.Context(), "loop")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != cairn.StatusMaxSteps || res.Steps != 3 || res.Output != "again" {
		t.Errorf("got %s after %d steps (%q), want max_steps after 3", res.Status, res.Steps, res.Output)
	}
	events := loadEvents(t, st, s.ID())
	if n := len(decoded[cairn.ModelResponse](t, events, cairn.KindModelResponse)); n != 3 {
		t.Errorf("%d model responses, want 3", n)
	}
	if fin := decoded[cairn.RunFinished](t, events, cairn.KindRunFinished); len(fin) != 1 || fin[0].Status != cairn.StatusMaxSteps {
		t.Errorf("run.finished: %+v", fin)
	}
	testcheck.History(t, s.State().Messages)
	// The default limit is 20.
	a.MaxSteps = 0
	a.Model = scripted(t, slices.Repeat(steps[:1], 25)...)
	s, _ = a.Start(t.Context())
	if res, _ := s.Run(t.Context(), "loop"); res.Steps != agent.DefaultMaxSteps {
		t.Errorf("default limit: %d steps, want %d", res.Steps, agent.DefaultMaxSteps)
	}
}

func TestSession_ResumeWarning(t *testing.T) {
	st := testcheck.MemoryStore(t)
	s, _ := offlineAgent(st).Start(t.Context(), agent.WithID("w"))
	if res, _ := s.Run(t.Context(), "hi"); len(res.Warnings) != 0 || len(s.Warnings()) != 0 {
		t.Fatalf("first run warned: %v", res.Warnings)
	}
	same, _ := offlineAgent(st).Resume(t.Context(), "w")
	if res, _ := same.Run(t.Context(), "again", agent.Continue()); len(res.Warnings) != 0 {
		t.Errorf("the same agent warned: %v", res.Warnings)
	}
	other := offlineAgent(st)
	other.Instructions = "Be verbose."
	s2, _ := other.Resume(t.Context(), "w")
	res, err := s2.Run(t.Context(), "more", agent.Continue())
	if err != nil || res.Status != cairn.StatusCompleted {
		t.Fatalf("the run did not go on: %v %v", res, err)
	}
	if len(res.Warnings) != 1 || len(s2.Warnings()) != 1 {
		t.Fatalf("warnings: result %v, session %v; want one", res.Warnings, s2.Warnings())
	}
	w, ok := errors.AsType[*agent.ResumeWarning](res.Warnings[0])
	if !ok || w.Recorded == w.Current || !strings.Contains(w.Error(), "other instructions") {
		t.Errorf("warning: %v", res.Warnings[0])
	}
	if res, _ := s2.Run(t.Context(), "once more", agent.Continue()); len(res.Warnings) != 0 || len(s2.Warnings()) != 1 {
		t.Errorf("the next run by the new agent: result warnings %v, session %v; want none new", res.Warnings, s2.Warnings())
	}
	if starts := decoded[cairn.RunStarted](t, loadEvents(t, st, "w"), cairn.KindRunStarted); starts[2].Fingerprint != other.Fingerprint() {
		t.Errorf("run.started records %+v, want %+v", starts[2].Fingerprint, other.Fingerprint())
	}
}

func TestSession_Conflict(t *testing.T) {
	st := testcheck.MemoryStore(t)
	s1, _ := offlineAgent(st).Start(t.Context(), agent.WithID("c"))
	s1.Run(t.Context(), "one")
	s2, _ := offlineAgent(st).Resume(t.Context(), "c")
	s2.Run(t.Context(), "two", agent.Continue())
	_, err := s1.Run(t.Context(), "three", agent.Continue())
	if !errors.Is(err, cairn.ErrConflict) || !strings.Contains(err.Error(), "session c was changed by another process") {
		t.Errorf("got %v, want a conflict naming the session", err)
	}
}

// TestAgent_ResumeSealed: a session whose events are sealed (an encrypted
// store read without its key) is refused by Resume and Open, naming the
// session and the data key: nothing reaches a model and nothing is
// appended after the ciphertext.
func TestAgent_ResumeSealed(t *testing.T) {
	st := testcheck.MemoryStore(t)
	enc := testcheck.Sealed(t, st, 9)
	if err := enc.Create(t.Context(), cairn.SessionMeta{ID: "enc"}); err != nil {
		t.Fatal(err)
	}
	events := []cairn.Event{
		cairn.MustEvent(cairn.KindRunStarted, "r1", cairn.RunStarted{RunID: "r1", Agent: "a"}),
		cairn.MustEvent(cairn.KindMessageSystem, "r1", cairn.MessageSystem{Text: "be brief"}),
		cairn.MustEvent(cairn.KindMessageUser, "r1", cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: "the vault code is 4711"}}}),
	}
	for i := range events {
		events[i].Seq = int64(i + 1)
	}
	if err := enc.Append(t.Context(), "enc", 0, events...); err != nil {
		t.Fatal(err)
	}
	a := offlineAgent(st)
	for _, open := range []func() error{
		func() error { _, err := a.Resume(t.Context(), "enc"); return err },
		func() error { _, err := a.Open(t.Context(), "enc"); return err },
	} {
		err := open()
		var se *crypt.SealedError
		if !errors.As(err, &se) || se.DataKey == "" || se.Session != "enc" || se.Seq != 1 {
			t.Fatalf("got %v, want a *crypt.SealedError naming the session and data key", err)
		}
	}
	if n := len(loadEvents(t, st, "enc")); n != 3 {
		t.Errorf("%d events stored, want the 3 sealed ones only", n)
	}
}
