package mcp_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/testing/mcptest"
	"github.com/cairnhq/cairn/mcp"
	"github.com/cairnhq/cairn/provider/script"
	"github.com/cairnhq/cairn/store/memory"
)

// startSession starts a session of an agent with the tools of srv, a
// script model of steps and a memory store.
func startSession(t *testing.T, srv *mcp.Server, steps ...script.Step) *agent.Session {
	t.Helper()
	st, err := memory.New(cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	model, err := script.New(script.Script{Steps: steps})
	if err != nil {
		t.Fatal(err)
	}
	a := &agent.Agent{Model: model, Tools: srv.Tools(), Store: st}
	s, err := a.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAgent_RecordsTheClass: in an agent's run, a call of a tool that is
// not idempotent has its tool.started recorded before it runs, a read-only
// one has none, and a destructive one waits for approval, recorded with
// the response that asks for it.
func TestAgent_RecordsTheClass(t *testing.T) {
	log := filepath.Join(t.TempDir(), "calls")
	srv := startTest(t, mcp.Config{}, "MCPTEST_LOG="+log)
	s := startSession(t, srv,
		script.Step{ToolCalls: []script.Call{{Name: "t_look", Arguments: json.RawMessage(`{"note":"a"}`)}, {Name: "t_write", Arguments: json.RawMessage(`{"note":"b"}`)}}},
		script.Step{ToolCalls: []script.Call{{Name: "t_destroy", Arguments: json.RawMessage(`{"note":"c"}`)}}},
		script.Step{Text: "done"},
	)
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

// TestAgent_HugeMCPError: a server that answers a call with a JSON-RPC
// error of 3 MiB, three times the store's event limit: the error is cut,
// the run goes on and finishes, and the tool.result holds the cut error.
func TestAgent_HugeMCPError(t *testing.T) {
	srv := startTest(t, mcp.Config{})
	s := startSession(t, srv,
		script.Step{ToolCalls: []script.Call{{Name: "t_refuse", Arguments: json.RawMessage(`{"bytes":3145728}`)}}},
		script.Step{Text: "done"},
	)
	res, err := s.Run(t.Context(), "go")
	if err != nil || res.Status != cairn.StatusCompleted || res.Output != "done" {
		t.Fatalf("run: %+v, %v; want it completed", res, err)
	}
	var results []*cairn.ToolResult
	for _, e := range s.Memory().Events() {
		if e.Kind == cairn.KindToolResult {
			v, _ := e.Decode()
			results = append(results, v.(*cairn.ToolResult))
		}
	}
	if len(results) != 1 {
		t.Fatalf("%d tool results, want 1", len(results))
	}
	r := results[0]
	const prefix = "MCP server t refused the call of refuse: rrr"
	note := fmt.Sprintf("the first %d are shown]", mcp.DefaultMaxOutput)
	if !r.IsError || !strings.HasPrefix(r.Output, prefix) || !strings.HasSuffix(r.Output, note) || len(r.Output) > mcp.DefaultMaxOutput+100 {
		t.Errorf("tool.result: error %v, %d bytes, %.60q…%q; want the error cut to %d bytes",
			r.IsError, len(r.Output), r.Output, r.Output[max(0, len(r.Output)-60):], mcp.DefaultMaxOutput)
	}
}
