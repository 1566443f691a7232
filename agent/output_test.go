package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/provider/script"
)

// TestSession_HugeToolText: a tool's output, its error and a panic's value
// of 3 MiB each, far past the store's 1 MiB event limit, are cut to the
// agent's limit in their tool.result, saying so; the run goes on and
// finishes, and the model sees the cut text.
func TestSession_HugeToolText(t *testing.T) {
	const size = 3 << 20
	huge := strings.Repeat("x", size)
	st := testcheck.MemoryStore(t)
	a := offlineAgent(st)
	a.Tools = []*agent.Tool{
		agent.NewTool("big", "", func(context.Context, struct{}) (string, error) { return huge, nil }),
		agent.NewTool("bigerr", "", func(context.Context, struct{}) (string, error) { return "", errors.New(huge) }),
		agent.NewTool("bigpanic", "", func(context.Context, struct{}) (string, error) { panic(huge) }),
	}
	var mu sync.Mutex
	var seen []string
	a.Model = scripted(t, script.Step{ToolCalls: []script.Call{call("big", `{}`), call("bigerr", `{}`), call("bigpanic", `{}`)}}, script.Step{Text: "done"})
	s, err := a.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(t.Context(), "go", agent.ObserveTools(func(e agent.ToolEvent) {
		if e.Done {
			mu.Lock()
			seen = append(seen, e.Output)
			mu.Unlock()
		}
	}))
	if err != nil || res.Status != cairn.StatusCompleted || res.Output != "done" {
		t.Fatalf("run: %+v, %v; want it completed", res, err)
	}
	results := decoded[cairn.ToolResult](t, loadEvents(t, st, s.ID()), cairn.KindToolResult)
	if len(results) != 3 {
		t.Fatalf("%d results, want 3", len(results))
	}
	limit := agent.DefaultMaxToolOutput
	for i, w := range []struct {
		isErr  bool
		prefix string
		total  int
	}{
		{false, "xxx", size},
		{true, "xxx", size},
		{true, "tool bigpanic panicked: xxx", size + len("tool bigpanic panicked: ")},
	} {
		r := results[i]
		note := fmt.Sprintf("\n[cut: the result has %d bytes; the first %d are shown]", w.total, limit)
		if r.IsError != w.isErr || !strings.HasPrefix(r.Output, w.prefix) || !strings.HasSuffix(r.Output, note) || len(r.Output) != limit+len(note) {
			t.Errorf("result %d (%s): error %v, %d bytes ending %q; want error %v, %d bytes ending %q",
				i, r.Name, r.IsError, len(r.Output), r.Output[max(0, len(r.Output)-80):], w.isErr, limit+len(note), note)
		}
	}
	for i, o := range seen {
		if len(o) > limit+100 {
			t.Errorf("the observer saw %d bytes of result %d, more than the tool.result holds", len(o), i)
		}
	}
}

// TestSession_MaxToolOutput: Agent.MaxToolOutput sets where a tool's text
// is cut, on a character boundary; a denial's note is cut there too.
func TestSession_MaxToolOutput(t *testing.T) {
	st := testcheck.MemoryStore(t)
	a := offlineAgent(st)
	a.MaxToolOutput = 10
	a.Tools = []*agent.Tool{
		agent.NewTool("short", "", func(context.Context, struct{}) (string, error) { return "0123456789", nil }),
		agent.NewTool("accents", "", func(context.Context, struct{}) (string, error) { return "ééééééé", nil }), // 14 bytes
		agent.NewTool("ask", "", func(context.Context, struct{}) (string, error) { return "ran", nil }, agent.RequireApproval()),
	}
	a.Model = scripted(t, script.Step{ToolCalls: []script.Call{call("short", `{}`), call("accents", `{}`), call("ask", `{}`)}}, script.Step{Text: "done"})
	s, err := a.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(t.Context(), "go")
	if err != nil || res.Status != cairn.StatusAwaiting {
		t.Fatalf("run: %+v, %v; want it awaiting approval", res, err)
	}
	if err := s.Approve(t.Context(), res.Awaiting[0].ID, false, strings.Repeat("no", 20)); err != nil {
		t.Fatal(err)
	}
	if res, err := s.ResumeRun(t.Context()); err != nil || res.Status != cairn.StatusCompleted {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	results := decoded[cairn.ToolResult](t, loadEvents(t, st, s.ID()), cairn.KindToolResult)
	want := []string{
		"0123456789",
		"ééééé\n[cut: the result has 14 bytes; the first 10 are shown]",
		"denied by \n[cut: the result has 60 bytes; the first 10 are shown]",
	}
	if len(results) != len(want) {
		t.Fatalf("%d results, want %d", len(results), len(want))
	}
	for i, w := range want {
		if results[i].Output != w {
			t.Errorf("result %d: %q, want %q", i, results[i].Output, w)
		}
	}
}

func TestCutOutput(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc\n[cut: the result has 4 bytes; the first 3 are shown]"},
		{"aé", 2, "a\n[cut: the result has 3 bytes; the first 1 are shown]"}, // not inside é
		{"€uro", 2, "\n[cut: the result has 6 bytes; the first 0 are shown]"},
		{strings.Repeat("y", agent.DefaultMaxToolOutput+1), 0, strings.Repeat("y", agent.DefaultMaxToolOutput) +
			fmt.Sprintf("\n[cut: the result has %d bytes; the first %d are shown]", agent.DefaultMaxToolOutput+1, agent.DefaultMaxToolOutput)},
	} {
		if got := agent.CutOutput(c.in, c.max); got != c.want {
			t.Errorf("CutOutput(%.10q…, %d) = %.80q, want %.80q", c.in, c.max, got, c.want)
		}
	}
}
