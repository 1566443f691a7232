package agent_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/agent/builtin"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/offline"
	"github.com/cairnhq/cairn/provider/script"
	"github.com/cairnhq/cairn/store/sqlite"
)

// budgetModel passes calls to a model and checks every chat request: its
// estimate (times scale, the wrapped model's own count) stays within the
// budget, and each tool result follows its call. It can make the wrapped
// model's usage scale times larger (a tokenizer that counts more than the
// estimate), report none, or fail summary requests.
type budgetModel struct {
	provider.Model
	t       *testing.T
	budget  int
	scale   int  // usage reported: scale times the estimate; 0 reports none
	failSum bool // summary requests fail

	mu                     sync.Mutex
	chats, summaries, over int
	largest                int // the largest chat request, in estimated tokens times scale
}

func (m *budgetModel) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	m.mu.Lock()
	if req.Purpose == provider.PurposeSummary {
		m.summaries++
		m.mu.Unlock()
		if m.failSum {
			return nil, errors.New("summaries are down")
		}
		return m.Model.Generate(ctx, req)
	}
	m.chats++
	est := provider.EstimateTokens(req) * max(m.scale, 1)
	m.largest = max(m.largest, est)
	if est > m.budget {
		m.over++
	}
	asked := map[string]bool{}
	for _, msg := range req.Messages {
		for _, c := range msg.ToolCalls {
			asked[c.ID] = true
		}
		if msg.Role == cairn.RoleTool && !asked[msg.ToolCallID] {
			m.t.Errorf("request %d: the result of %s is sent without its call", m.chats, msg.ToolCallID)
		}
	}
	m.mu.Unlock()
	resp, err := m.Model.Generate(ctx, req)
	if err == nil {
		resp.Usage.InputTokens *= int64(m.scale)
		resp.Usage.OutputTokens *= int64(m.scale)
	}
	return resp, err
}

// A 2,000-turn session on SQLite: every request stays within the budget,
// the store still holds every turn, and the model's view is the
// instructions, a summary and the recent turns.
func TestCompaction_LongSession(t *testing.T) {
	const turns, budget = 2000, 1500
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "cairn.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	model := &budgetModel{Model: offline.New(), t: t, budget: budget, scale: 1}
	a := &agent.Agent{Instructions: "Be brief.", Model: model, Tools: builtin.Tools(), Store: st, ContextTokens: budget, Logger: quietLogger()}
	s, err := a.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var res *agent.Result
	for i := 1; i <= turns; i++ {
		input := fmt.Sprintf("message number %d of a long conversation", i)
		if i%10 == 0 {
			input = fmt.Sprintf("calc %d*2", i) // a tool call and its result
		}
		if res, err = s.Run(t.Context(), input, agent.Continue()); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	if model.over > 0 || model.chats != turns+turns/10 {
		t.Errorf("%d of %d requests over the budget of %d (the largest %d); want none of %d", model.over, model.chats, budget, model.largest, turns+turns/10)
	}
	if model.summaries < 20 {
		t.Errorf("%d summaries; a session this long needs many", model.summaries)
	}
	t.Logf("%d requests, the largest %d tokens; %d summaries", model.chats, model.largest, model.summaries)
	if res.Output != "2000*2 = 4000." {
		t.Errorf("last answer %q", res.Output)
	}

	events := loadEvents(t, st, s.ID())
	users := decoded[cairn.MessageUser](t, events, cairn.KindMessageUser)
	if len(users) != turns || users[0].Text() != "message number 1 of a long conversation" || users[turns-1].Text() != "calc 2000*2" {
		t.Errorf("the store holds %d user messages, want all %d", len(users), turns)
	}
	if n := len(decoded[cairn.MemoryCompacted](t, events, cairn.KindMemoryCompacted)); n != model.summaries {
		t.Errorf("%d memory.compacted events for %d summaries", n, model.summaries)
	}
	state := s.State()
	msgs := state.Messages
	if !msgs[0].IsInstructions() || msgs[0].Content != "Be brief." || !msgs[1].IsSummary() {
		t.Fatalf("the model's view starts with %+v, %+v; want the instructions, then the summary", msgs[0], msgs[1])
	}
	if !strings.HasPrefix(msgs[1].Content, "Summary of ") || !strings.Contains(msgs[1].Content, `First user message: "message number 1 of a long conversation"`) {
		t.Errorf("summary %q", msgs[1].Content)
	}
	if len(msgs) > 200 {
		t.Errorf("%d messages in the model's view", len(msgs))
	}
	checkReplay(t, s, st)
	// Another process resumes the compacted session and goes on within
	// the budget, without compacting again at once.
	again, err := a.Resume(t.Context(), s.ID())
	if err != nil {
		t.Fatal(err)
	}
	before := model.summaries
	if res, err = again.Run(t.Context(), "and one more", agent.Continue()); err != nil {
		t.Fatal(err)
	}
	if model.over > 0 || model.summaries != before {
		t.Errorf("after resume: %d requests over the budget, %d new summaries", model.over, model.summaries-before)
	}
	// The offline model counts the turns through its digests.
	if want := `Turn 2001. You said "and one more". Before that you told me "calc 2000*2".`; res.Output != want {
		t.Errorf("answer %q, want %q", res.Output, want)
	}
}

// Each strategy and the model's own count: drop compacts without a model
// call and says how many messages it dropped; off never compacts; a model
// whose count is three times the estimate compacts to fit its count; one
// that reports no usage is estimated from characters.
func TestCompaction_Strategies(t *testing.T) {
	const turns, budget = 150, 900
	tests := []struct {
		name       string
		compaction string
		scale      int
		over       bool // requests go over the budget
		summaries  bool // summary calls are made
		compacted  bool
	}{
		{"summarize", agent.CompactSummarize, 1, false, true, true},
		{"drop", agent.CompactDrop, 1, false, false, true},
		{"off", agent.CompactOff, 1, true, false, false},
		{"usage three times the estimate", "", 3, false, true, true},
		{"no usage", "", 0, false, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := testcheck.MemoryStore(t)
			model := &budgetModel{Model: offline.New(), t: t, budget: budget, scale: tt.scale}
			a := &agent.Agent{Instructions: "Be brief.", Model: model, Store: st, ContextTokens: budget, Compaction: tt.compaction, Logger: quietLogger()}
			s, err := a.Start(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for i := range turns {
				if _, err := s.Run(t.Context(), fmt.Sprintf("turn %d", i+1), agent.Continue()); err != nil {
					t.Fatal(err)
				}
			}
			if (model.over > 0) != tt.over || (model.summaries > 0) != tt.summaries {
				t.Errorf("%d requests over the budget (largest %d), %d summaries", model.over, model.largest, model.summaries)
			}
			compactions := decoded[cairn.MemoryCompacted](t, loadEvents(t, st, s.ID()), cairn.KindMemoryCompacted)
			if (len(compactions) > 0) != tt.compacted {
				t.Fatalf("%d compactions", len(compactions))
			}
			if tt.compaction == agent.CompactDrop {
				// Every message but the instructions and those kept was
				// dropped: the note counts them all.
				state := s.State()
				want := fmt.Sprintf("[%d earlier messages were dropped to fit the context window.]", 2*turns-(len(state.Messages)-2))
				if got := state.Messages[1].Content; got != want {
					t.Errorf("summary %q, want %q", got, want)
				}
			}
			checkReplay(t, s, st)
		})
	}
}

// A summary call that fails: the compaction drops the older messages
// instead, keeps the earlier summary's text, and says so in a warning; the
// run goes on.
func TestCompaction_SummaryFails(t *testing.T) {
	st := testcheck.MemoryStore(t)
	model := &budgetModel{Model: offline.New(), t: t, budget: 600, scale: 1}
	a := &agent.Agent{Instructions: "Be brief.", Model: model, Store: st, ContextTokens: 600, Logger: quietLogger()}
	s, err := a.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var warned []error
	for i := range 100 {
		model.failSum = i >= 60 // summaries work at first, then fail
		res, err := s.Run(t.Context(), fmt.Sprintf("turn %d", i+1), agent.Continue())
		if err != nil || res.Status != cairn.StatusCompleted {
			t.Fatalf("turn %d: %v, %v", i+1, res, err)
		}
		warned = append(warned, res.Warnings...)
	}
	var cw *agent.CompactionWarning
	if len(warned) == 0 || !errors.As(warned[0], &cw) || !strings.Contains(cw.Error(), "summaries are down") {
		t.Fatalf("warnings %v, want a *CompactionWarning naming the model's error", warned)
	}
	summary := s.State().Messages[1]
	if !summary.IsSummary() || !strings.HasPrefix(summary.Content, "Summary of ") || !strings.Contains(summary.Content, "earlier messages were dropped to fit the context window.]") {
		t.Errorf("summary %q, want the last digest and a note of what was dropped since", summary.Content)
	}
	if model.over > 0 {
		t.Errorf("%d requests over the budget", model.over)
	}
}

// A run cancelled during the model call that follows a compaction: the
// compaction is in the store, and resuming makes the model call without
// compacting again.
func TestCompaction_CrashAfterCompaction(t *testing.T) {
	st := testcheck.MemoryStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var summaries int
	model := funcModel(func(req *provider.Request) (*provider.Response, error) {
		if req.Purpose == provider.PurposeSummary {
			summaries++
			return offline.New().Generate(context.Background(), req)
		}
		if summaries == 1 && ctx.Err() == nil {
			cancel() // the process dies while the model thinks
			return nil, context.Canceled
		}
		return offline.New().Generate(context.Background(), req)
	})
	a := &agent.Agent{Model: model, Store: st, ContextTokens: 400, Logger: quietLogger()}
	s, err := a.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var i int
	for i = 1; summaries == 0; i++ {
		if _, err = s.Run(ctx, fmt.Sprintf("turn %d", i), agent.Continue()); err != nil {
			break
		}
	}
	if !errors.Is(err, context.Canceled) || summaries != 1 {
		t.Fatalf("turn %d: %v after %d summaries; want the cancelled model call after the first", i, err, summaries)
	}
	resumed, err := a.Resume(t.Context(), s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if got := resumed.State().Messages; !got[1].IsSummary() {
		t.Fatalf("resumed view %+v, want the summary", got[:2])
	}
	res, err := resumed.ResumeRun(t.Context())
	if err != nil || res.Status != cairn.StatusCompleted {
		t.Fatalf("resume: %v, %v", res, err)
	}
	events := loadEvents(t, st, s.ID())
	if n := len(decoded[cairn.MemoryCompacted](t, events, cairn.KindMemoryCompacted)); n != 1 || summaries != 1 {
		t.Errorf("%d compactions and %d summary calls, want 1 of each", n, summaries)
	}
}

func TestAgent_CompactionSettings(t *testing.T) {
	for _, tt := range []struct {
		a    *agent.Agent
		want string
	}{
		{&agent.Agent{Model: offline.New(), ContextTokens: -1}, "agent ContextTokens is -1"},
		{&agent.Agent{Model: offline.New(), Compaction: "forget"}, `agent Compaction is "forget"; want "summarize", "drop" or "off"`},
	} {
		s, err := tt.a.Start(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Run(t.Context(), "hi"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run error %v, want one saying %q", err, tt.want)
		}
	}
}

// A script model's summaries consume no step: every turn still gets its
// own step, in order, through compactions.
func TestCompaction_ScriptSteps(t *testing.T) {
	const turns = 40
	var steps []script.Step
	for i := range turns {
		steps = append(steps, script.Step{Text: fmt.Sprintf("answer %d: %s", i+1, strings.Repeat("words ", 10))})
	}
	model := &budgetModel{Model: scripted(t, steps...), t: t, budget: 500, scale: 1}
	a := &agent.Agent{Model: model, Store: testcheck.MemoryStore(t), ContextTokens: 500, Logger: quietLogger()}
	s, err := a.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i := range turns {
		res, err := s.Run(t.Context(), fmt.Sprintf("question %d", i+1), agent.Continue())
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("answer %d: ", i+1); !strings.HasPrefix(res.Output, want) {
			t.Fatalf("turn %d: %q, want step %d", i+1, res.Output, i+1)
		}
	}
	if model.summaries == 0 || model.over > 0 {
		t.Errorf("%d summaries, %d requests over the budget", model.summaries, model.over)
	}
}
