package sessions_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/sessions"
)

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]sessions.Format{"cairn": sessions.Cairn, "OpenAI": sessions.OpenAI, " checkpoint ": sessions.Checkpoint} {
		got, err := sessions.ParseFormat(in)
		if err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := sessions.ParseFormat("yaml"); err == nil || !strings.Contains(err.Error(), "want cairn, openai or checkpoint") {
		t.Errorf("ParseFormat(yaml) error = %v, want one listing the formats", err)
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		in   string
		want sessions.Format
		err  string
	}{
		{in: `{"format":"cairn.memory","version":1,"events":[]}`, want: sessions.Cairn},
		{in: `{"version":1,"events":[]}`, want: sessions.Cairn},
		{in: ` [] `, want: sessions.OpenAI},
		{in: `{"model":"gpt","messages":[]}`, want: sessions.OpenAI},
		{in: `{"agent_profile":"bot","history":[]}`, want: sessions.Checkpoint},
		{in: `{"format":"other"}`, err: `a cairn memory document has "format": "cairn.memory"`},
		{in: `{"messages":[],"history":[]}`, err: "both"},
		{in: `{"thread":1}`, err: "cannot tell the format"},
		{in: `42`, err: "cannot tell the format of a number"},
		{in: `{"history":`, err: "truncated JSON"},
		{in: ``, err: "truncated JSON"},
	}
	for _, tt := range tests {
		got, err := sessions.Detect([]byte(tt.in))
		if tt.err != "" {
			if _, ok := errors.AsType[*sessions.ImportError](err); !ok || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Detect(%s) = %q, %v; want an *ImportError saying %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Detect(%s) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestImport_DetectsTheFormat(t *testing.T) {
	for name, m := range memories(t) {
		for _, f := range sessions.Formats {
			data, _ := export(t, f, m)
			if _, _, err := sessions.Import(data, "", opts()); err != nil {
				t.Errorf("%s as %s: import without a format: %v", name, f, err)
			}
		}
	}
}

// The checkpoint example of the persistence document this format comes
// from: tool calls without IDs, a tool result that names only its tool.
func TestImport_CheckpointSeedExample(t *testing.T) {
	doc := `{
  "agent_profile": "support_bot",
  "current_step": 2,
  "updated_at": "2023-10-27T10:00:00Z",
  "variables": {"user_name": "Alice"},
  "history": [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Check order #123"},
    {"role": "assistant", "content": "Checking database...",
     "metadata": {"tool_calls": [{"name": "check_order_status", "args": {"order": 123}}]}},
    {"role": "tool", "name": "check_order_status", "content": "{'status': 'shipped'}"}
  ]
}`
	o := opts()
	o.ID = "order-123"
	m, rep, err := sessions.Import([]byte(doc), "", o)
	if err != nil {
		t.Fatal(err)
	}
	if m.Session == nil || m.Session.ID != "order-123" {
		t.Errorf("session = %+v, want ID order-123", m.Session)
	}
	st := state(t, m)
	if st.Agent != "support_bot" || st.Steps != 2 || len(st.Messages) != 4 {
		t.Errorf("agent %q, steps %d, %d messages; want support_bot, 2, 4", st.Agent, st.Steps, len(st.Messages))
	}
	if want := time.Date(2023, 10, 27, 10, 0, 0, 0, time.UTC); !st.UpdatedAt.Equal(want) || !st.CreatedAt.Equal(want) {
		t.Errorf("times %v, %v; want %v", st.CreatedAt, st.UpdatedAt, want)
	}
	var name string
	if ok, err := st.Var("user_name", &name); !ok || err != nil || name != "Alice" {
		t.Errorf("user_name = %q (%v, %v), want Alice", name, ok, err)
	}
	call := st.Messages[2].ToolCalls[0]
	tool := st.Messages[3]
	if call.Name != "check_order_status" || string(call.Args) != `{"order":123}` || tool.ToolCallID != call.ID || tool.Name != call.Name {
		t.Errorf("call %+v answered by %+v", call, tool)
	}
	if st.Status != cairn.StatusInterrupted || st.Interrupt != sessions.InterruptImported || len(st.Pending) != 0 {
		t.Errorf("status %s (%s), %d pending; want an interrupted run with nothing pending", st.Status, st.Interrupt, len(st.Pending))
	}
	for _, w := range []string{"1 tool call ID generated", "1 tool result matched to its call by tool name",
		"event times set to updated_at (2023-10-27T10:00:00Z)"} {
		if !slices.Contains(rep.Generated, w) {
			t.Errorf("report %q lacks %q", rep.Generated, w)
		}
	}
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "ends with a tool message") {
		t.Errorf("notes = %q, want one about the unfinished run", rep.Notes)
	}
}

func TestImport_OpenAIVariants(t *testing.T) {
	doc := `{"model": "gpt-x", "temperature": 0, "messages": [
  {"role": "developer", "content": [{"type": "text", "text": "Be "}, {"type": "text", "text": "brief."}]},
  {"role": "user", "name": "ann", "content": [{"type": "text", "text": "Look"}, {"type": "image_url", "image_url": {"url": "data:image/gif;base64,R0lG", "detail": "low"}}]},
  {"role": "assistant", "content": null, "refusal": null, "tool_calls": [
    {"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": ""}},
    {"id": "b", "function": {"name": "g", "arguments": "{not json"}},
    {"id": "c", "function": {"name": "h", "arguments": {"x": [1, 2]}}}]},
  {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "bad"}]},
  {"role": "tool", "tool_call_id": "a", "content": "ok"},
  {"role": "tool", "tool_call_id": "c", "content": "ok"},
  {"role": "assistant", "content": "", "refusal": "I can't."}
]}`
	m, rep, err := sessions.Import([]byte(doc), "", opts())
	if err != nil {
		t.Fatal(err)
	}
	st := state(t, m)
	msgs := st.Messages
	if len(msgs) != 7 {
		t.Fatalf("%d messages, want 7", len(msgs))
	}
	if msgs[0].Role != cairn.RoleSystem || msgs[0].Content != "Be brief." {
		t.Errorf("developer message became %+v", msgs[0])
	}
	if msgs[1].Content != "Look" || len(msgs[1].Parts) != 1 || msgs[1].Parts[0].MIME != "image/gif" || string(msgs[1].Parts[0].Data) != "GIF" {
		t.Errorf("user message became %+v", msgs[1])
	}
	args := []string{}
	for _, c := range msgs[2].ToolCalls {
		args = append(args, string(c.Args))
	}
	if want := []string{`{}`, `"{not json"`, `{"x":[1,2]}`}; !slices.Equal(args, want) {
		t.Errorf("arguments = %q, want %q", args, want)
	}
	if msgs[3].Name != "g" || msgs[3].Content != "bad" {
		t.Errorf("tool message became %+v", msgs[3])
	}
	if msgs[6].Content != "I can't." || st.Status != cairn.StatusCompleted || st.Output != "I can't." {
		t.Errorf("last message %+v, status %s, output %q", msgs[6], st.Status, st.Output)
	}
	for _, w := range []string{"the request fields model and temperature", "the name of 1 message"} {
		if !slices.Contains(rep.Dropped, w) {
			t.Errorf("report %q lacks %q", rep.Dropped, w)
		}
	}
	if !slices.Contains(rep.Notes, "1 developer message read as system messages") {
		t.Errorf("notes %q lack the developer message", rep.Notes)
	}
}

func TestImport_RunIDAndTimes(t *testing.T) {
	m, _, err := sessions.Import([]byte(`[{"role":"user","content":"hi"}]`), sessions.OpenAI, sessions.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs := m.Events()
	kinds := []cairn.Kind{}
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
		if e.Run != evs[0].Run || e.At.IsZero() || e.At.Location() != time.UTC {
			t.Errorf("event %d: run %q at %v; want run %q at a UTC time", e.Seq, e.Run, e.At, evs[0].Run)
		}
	}
	if want := []cairn.Kind{cairn.KindRunStarted, cairn.KindMessageUser, cairn.KindRunInterrupted}; !slices.Equal(kinds, want) {
		t.Errorf("kinds = %v, want %v", kinds, want)
	}
	if err := cairn.ValidateID(evs[0].Run); err != nil {
		t.Errorf("run ID %q: %v", evs[0].Run, err)
	}
}

// A compaction that cuts between a tool call and its result leaves a tool
// message whose call is gone: exports leave it out, so that the history
// stays one a provider accepts, and say so.
func TestExport_LeavesOutOrphanToolResults(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := func(kind cairn.Kind, v any) cairn.Event {
		e := cairn.MustEvent(kind, "r", v)
		e.At = at
		return e
	}
	var m cairn.Memory
	_, err := m.Add(
		ev(cairn.KindMessageUser, cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: "go"}}}),
		ev(cairn.KindModelResponse, cairn.ModelResponse{ToolCalls: []cairn.ToolCall{{ID: "x", Name: "t", Args: json.RawMessage(`{}`)}}}),
		ev(cairn.KindToolResult, cairn.ToolResult{CallID: "x", Name: "t", Output: "done"}),
		ev(cairn.KindMemoryCompacted, cairn.MemoryCompacted{Summary: "went", UpTo: 2}),
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []sessions.Format{sessions.OpenAI, sessions.Checkpoint} {
		data, rep := export(t, f, &m)
		if !slices.Contains(rep.Dropped, "1 tool result whose call is no longer in the history (compacted away)") {
			t.Errorf("%s report %q does not name the tool result", f, rep.Dropped)
		}
		got, _, err := sessions.Import(data, f, opts())
		if err != nil {
			t.Fatalf("%s: import of the export: %v", f, err)
		}
		if msgs := state(t, got).Messages; len(msgs) != 1 || msgs[0].Content != "went" {
			t.Errorf("%s: messages %+v, want the summary alone", f, msgs)
		}
	}
}

// A summary message after the instructions is imported as a compaction, so
// that it folds as the export's source did; one that follows other messages
// is an ordinary system message whose name is dropped.
func TestImport_Summary(t *testing.T) {
	doc := `[{"role":"system","content":"Be brief."},{"role":"system","name":"cairn_summary","content":"Earlier: arithmetic."},
	{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]`
	m, rep, err := sessions.Import([]byte(doc), sessions.OpenAI, opts())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(m.Events()); m.Event(2).Kind != cairn.KindMemoryCompacted || n != 6 {
		t.Errorf("event 3 is %s (of %d), want memory.compacted", m.Event(2).Kind, n)
	}
	st := state(t, m)
	if len(st.Messages) != 4 || !st.Messages[0].IsInstructions() || !st.Messages[1].IsSummary() || st.Messages[1].Content != "Earlier: arithmetic." {
		t.Errorf("messages %+v, want the instructions, the summary and the turn", st.Messages)
	}
	if slices.ContainsFunc(rep.Dropped, func(d string) bool { return strings.Contains(d, "name") }) {
		t.Errorf("report %q drops a name; the summary's name is kept", rep.Dropped)
	}

	doc = `[{"role":"user","content":"hi"},{"role":"system","name":"cairn_summary","content":"not a summary here"}]`
	m, rep, err = sessions.Import([]byte(doc), sessions.OpenAI, opts())
	if err != nil {
		t.Fatal(err)
	}
	st = state(t, m)
	if len(st.Messages) != 2 || !st.Messages[1].IsInstructions() || st.Messages[1].Content != "not a summary here" {
		t.Errorf("messages %+v, want the user message and a system message", st.Messages)
	}
	if !slices.Contains(rep.Dropped, "the name of 1 message") {
		t.Errorf("report %q does not drop the misplaced summary's name", rep.Dropped)
	}
}
