package mcp_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/mcptest"
	"github.com/cairnhq/cairn/mcp"
	"github.com/cairnhq/cairn/provider/script"
	"github.com/cairnhq/cairn/store/memory"
)

// TestAgent_RecordsTheClass: in an agent's run, a call of a tool that is
// not idempotent has its tool.started recorded before it runs, a read-only
// one has none, and a destructive one waits for approval, recorded with
// the response that asks for it.
func TestAgent_RecordsTheClass(t *testing.T) {
	log := filepath.Join(t.TempDir(), "calls")
	srv := startTest(t, mcp.Config{}, "MCPTEST_LOG="+log)
	st, err := memory.New(cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	model, err := script.New(script.Script{Steps: []script.Step{
		{ToolCalls: []script.Call{{Name: "t_look", Arguments: json.RawMessage(`{"note":"a"}`)}, {Name: "t_write", Arguments: json.RawMessage(`{"note":"b"}`)}}},
		{ToolCalls: []script.Call{{Name: "t_destroy", Arguments: json.RawMessage(`{"note":"c"}`)}}},
		{Text: "done"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	a := &agent.Agent{Model: model, Tools: srv.Tools(), Store: st}
	s, err := a.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(t.Context(), "go")
	if err != nil || res.Status != cairn.StatusAwaiting || len(res.Awaiting) != 1 || res.Awaiting[0].Name != "t_destroy" {
		t.Fatalf("run: %+v, %v; want it awaiting approval of t_destroy", res, err)
	}
	var kinds []string
	for _, e := range s.Memory().Events() {
		if e.Kind == cairn.KindToolStarted || e.Kind == cairn.KindToolResult || e.Kind == cairn.KindModelResponse || e.Kind == cairn.KindRunInterrupted {
			v, _ := e.Decode()
			name := ""
			switch d := v.(type) {
			case *cairn.ToolStarted:
				name = " " + d.Name
			case *cairn.ToolResult:
				name = " " + d.Name
			}
			kinds = append(kinds, string(e.Kind)+name)
		}
	}
	// The calls of one response run at once: the start of t_write may be
	// recorded before or after the result of t_look.
	got := strings.Join(kinds, "|")
	want1 := "model.response|tool.started t_write|tool.result t_look|tool.result t_write|model.response|run.interrupted"
	want2 := "model.response|tool.result t_look|tool.started t_write|tool.result t_write|model.response|run.interrupted"
	if got != want1 && got != want2 {
		t.Errorf("events:\n%s\nwant\n%s", got, want1)
	}
	if err := s.Approve(t.Context(), res.Awaiting[0].ID, true, ""); err != nil {
		t.Fatal(err)
	}
	if res, err = s.ResumeRun(t.Context()); err != nil || res.Output != "done" {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	if got := strings.Join(mcptest.Calls(t, log), "|"); got != "look a|write b|destroy c" && got != "write b|look a|destroy c" {
		t.Errorf("calls %q", got)
	}
}
