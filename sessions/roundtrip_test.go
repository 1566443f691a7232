package sessions_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store/storetest"
)

var update = flag.Bool("update", false, "rewrite the golden exports in testdata/")

var importTime = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func opts() sessions.ImportOptions {
	return sessions.ImportOptions{Now: func() time.Time { return importTime }, RunID: "imported-run"}
}

// memories are the sessions every format is tested on.
func memories(t *testing.T) map[string]*cairn.Memory {
	t.Helper()
	build := func(evs ...[]cairn.Event) *cairn.Memory {
		m, err := cairn.NewMemory(slices.Concat(evs...)...)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// rich: every event kind, then a second turn that continues it.
	rich := build(storetest.Conversation(0, "run-1", "What is 2*(3+4)?"), storetest.UserTurn(16, "run-2", "Thanks <3"))
	rich.Session = &cairn.SessionMeta{ID: "rich-1", CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Labels: map[string]string{"team": "a"}}
	// multi: three runs, the second of which resets the memory.
	multi := build(storetest.UserTurn(0, "run-1", "hello"), storetest.Conversation(4, "run-2", "Now some maths"),
		storetest.UserTurn(20, "run-3", "and again"))
	return map[string]*cairn.Memory{"rich": rich, "multi": multi, "parts": partsMemory(t), "empty": build()}
}

// partsMemory is a run with a user message of several parts, two tool
// calls of which one fails, a call left without a result, and variables.
func partsMemory(t *testing.T) *cairn.Memory {
	t.Helper()
	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	ev := func(kind cairn.Kind, v any) cairn.Event {
		e := cairn.MustEvent(kind, "run-p", v)
		e.At = at
		return e
	}
	calls := []cairn.ToolCall{
		{ID: "c1", Name: "lookup", Args: json.RawMessage(`{"q":"x"}`)},
		{ID: "c2", Name: "lookup", Args: json.RawMessage(`"not an object"`)},
	}
	var m cairn.Memory
	_, err := m.Add(
		ev(cairn.KindRunStarted, cairn.RunStarted{RunID: "run-p", Agent: "viewer", Model: "m"}),
		ev(cairn.KindMessageSystem, cairn.MessageSystem{Text: "Describe images."}),
		ev(cairn.KindMessageUser, cairn.MessageUser{Parts: []cairn.Part{
			{Type: "text", Text: "What is in "}, {Type: "text", Text: "these?"},
			{Type: "image", MIME: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
			{Type: "image", URL: "https://example.com/cat.jpg"},
			{Type: "file", MIME: "application/pdf", Data: []byte("%PDF-1.7"), Text: "a.pdf"},
		}}),
		ev(cairn.KindModelResponse, cairn.ModelResponse{Text: "", ToolCalls: calls, FinishReason: "tool_calls"}),
		ev(cairn.KindToolResult, cairn.ToolResult{CallID: "c1", Name: "lookup", Output: "no such thing", IsError: true}),
		ev(cairn.KindModelResponse, cairn.ModelResponse{Text: "Again.", ToolCalls: []cairn.ToolCall{{ID: "c3", Name: "lookup", Args: json.RawMessage(`{}`)}}}),
		ev(cairn.KindToolResult, cairn.ToolResult{CallID: "c3", Name: "lookup", Output: "a cat"}),
		ev(cairn.KindStateSet, cairn.StateSet{Set: map[string]json.RawMessage{"count": json.RawMessage(`2`), "seen": json.RawMessage(`["cat",null,true]`)}}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return &m
}

func state(t *testing.T, m *cairn.Memory) *cairn.State {
	t.Helper()
	st, err := m.State()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func export(t *testing.T, f sessions.Format, m *cairn.Memory) ([]byte, *sessions.Report) {
	t.Helper()
	var buf bytes.Buffer
	rep, err := sessions.Export(&buf, f, m)
	if err != nil {
		t.Fatalf("export %s: %v", f, err)
	}
	return buf.Bytes(), rep
}

// reimport imports data, an export in format f, back.
func reimport(t *testing.T, f sessions.Format, data []byte) (*cairn.Memory, *sessions.Report) {
	t.Helper()
	m, rep, err := sessions.Import(data, f, opts())
	if err != nil {
		t.Fatalf("import of the %s export: %v\n%s", f, err, data)
	}
	return m, rep
}

// messagesOf returns the messages as JSON without their seqs, which no
// format but cairn keeps.
func messagesOf(t *testing.T, msgs []cairn.Message, keepErrors bool) string {
	t.Helper()
	out := slices.Clone(msgs)
	for i := range out {
		out[i].Seq = 0
		if !keepErrors {
			out[i].IsError = false
		}
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestExport_CairnRoundTrip(t *testing.T) {
	for name, m := range memories(t) {
		t.Run(name, func(t *testing.T) {
			data, rep := export(t, sessions.Cairn, m)
			if !rep.Empty() {
				t.Errorf("report = %q, want empty", rep)
			}
			golden(t, name+".cairn.json", data)
			got, rep := reimport(t, sessions.Cairn, data)
			if !rep.Empty() {
				t.Errorf("import report = %q, want empty", rep)
			}
			want, _ := state(t, m).Snapshot()
			snap, _ := state(t, got).Snapshot()
			if !bytes.Equal(snap, want) {
				t.Errorf("snapshot after round trip:\n got %s\nwant %s", snap, want)
			}
			if (m.Session == nil) != (got.Session == nil) || m.Session != nil && got.Session.ID != m.Session.ID {
				t.Errorf("session = %+v, want %+v", got.Session, m.Session)
			}
		})
	}
}

func TestExport_OpenAIRoundTrip(t *testing.T) {
	for name, m := range memories(t) {
		t.Run(name, func(t *testing.T) {
			data, rep := export(t, sessions.OpenAI, m)
			golden(t, name+".openai.json", data)
			got, _ := reimport(t, sessions.OpenAI, data)
			want := state(t, m)
			gst := state(t, got)
			wantMsgs := exportedMessages(want)
			if g, w := messagesOf(t, gst.Messages, false), messagesOf(t, wantMsgs, false); g != w {
				t.Errorf("messages after round trip:\n got %s\nwant %s", g, w)
			}
			if len(gst.Variables) != 0 {
				t.Errorf("variables = %s, want none", gst.Variables)
			}
			checkPending(t, gst, want)
			t.Logf("report: %s", rep)
		})
	}
}

func TestExport_CheckpointRoundTrip(t *testing.T) {
	for name, m := range memories(t) {
		t.Run(name, func(t *testing.T) {
			data, rep := export(t, sessions.Checkpoint, m)
			golden(t, name+".checkpoint.json", data)
			got, irep := reimport(t, sessions.Checkpoint, data)
			want, gst := state(t, m), state(t, got)
			if g, w := messagesOf(t, gst.Messages, true), messagesOf(t, exportedMessages(want), true); g != w {
				t.Errorf("messages after round trip:\n got %s\nwant %s", g, w)
			}
			gv, _ := json.Marshal(gst.Variables)
			wv, _ := json.Marshal(want.Variables)
			if !bytes.Equal(gv, wv) {
				t.Errorf("variables = %s, want %s", gv, wv)
			}
			if gst.Agent != want.Agent {
				t.Errorf("agent = %q, want %q", gst.Agent, want.Agent)
			}
			if m.Len() > 0 && !gst.UpdatedAt.Equal(want.UpdatedAt) {
				t.Errorf("updated at = %v, want %v", gst.UpdatedAt, want.UpdatedAt)
			}
			checkPending(t, gst, want)
			t.Logf("report: %s; import: %s", rep, irep)
		})
	}
}

// exportedMessages are the messages of st that an export keeps: all but
// tool results whose call a compaction removed.
func exportedMessages(st *cairn.State) []cairn.Message {
	asked := map[string]bool{}
	var out []cairn.Message
	for _, m := range st.Messages {
		for _, c := range m.ToolCalls {
			asked[c.ID] = true
		}
		if m.Role == cairn.RoleTool && !asked[m.ToolCallID] {
			continue
		}
		out = append(out, m)
	}
	return out
}

func checkPending(t *testing.T, got, want *cairn.State) {
	t.Helper()
	g, _ := json.Marshal(got.Pending)
	w, _ := json.Marshal(want.Pending)
	if !bytes.Equal(g, w) {
		t.Errorf("pending = %s, want %s", g, w)
	}
	if len(want.Pending) > 0 && got.Status != cairn.StatusInterrupted {
		t.Errorf("status = %s with calls pending, want interrupted", got.Status)
	}
}

func TestExport_Reports(t *testing.T) {
	ms := memories(t)
	tests := []struct {
		memory string
		format sessions.Format
		want   []string
	}{
		{"rich", sessions.OpenAI, []string{"1 session variable", "the agent name (tester)", "token usage", "event timestamps",
			"run boundaries, outcomes and agent fingerprints (2 runs)", "1 approval decision", "1 interruption",
			"1 custom event (test.note)", "1 tool start record", "model IDs, finish reasons and latencies", "tool durations",
			"1 message superseded by a memory reset or a compaction summary", "the session's ID, creation time and labels"}},
		{"rich", sessions.Checkpoint, []string{"token usage", "event timestamps (only updated_at is kept)",
			"run boundaries, outcomes and agent fingerprints (2 runs)", "1 approval decision", "1 custom event (test.note)"}},
		{"multi", sessions.OpenAI, []string{"3 messages superseded by a memory reset or a compaction summary"}},
		{"parts", sessions.OpenAI, []string{"2 session variables", "the error flag of 1 tool result"}},
	}
	for _, tt := range tests {
		t.Run(tt.memory+"/"+string(tt.format), func(t *testing.T) {
			_, rep := export(t, tt.format, ms[tt.memory])
			for _, w := range tt.want {
				if !slices.Contains(rep.Dropped, w) {
					t.Errorf("report lacks %q; it says %q", w, rep.Dropped)
				}
			}
			if tt.format == sessions.Checkpoint {
				for _, d := range rep.Dropped {
					if strings.Contains(d, "variable") || strings.Contains(d, "agent name") || strings.Contains(d, "error flag") {
						t.Errorf("checkpoint report drops %q, which the format keeps", d)
					}
				}
			}
		})
	}
}

func TestImport_ReportsWhatItMadeUp(t *testing.T) {
	data := []byte(`[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]`)
	_, rep, err := sessions.Import(data, sessions.OpenAI, opts())
	if err != nil {
		t.Fatal(err)
	}
	want := "event times set to the import time (2026-03-04T05:06:07Z)"
	if !slices.Contains(rep.Generated, want) {
		t.Errorf("generated = %q, want it to hold %q", rep.Generated, want)
	}
}

// golden compares data with testdata/name, or writes it with -update.
func golden(t *testing.T, name string, data []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(data, want) {
		t.Errorf("%s differs from the export (run with -update if the change is intended):\n got %s\nwant %s", path, data, want)
	}
}
