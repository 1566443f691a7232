package builtin_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/agent/builtin"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/provider/script"
	"github.com/cairnhq/cairn/store/sqlite"
)

// memory_save in one session, then in another session of the same
// namespace: the memory recalled into the context at the start of the run
// (a system message before the input), and found by memory_search; the
// item's Source is the first session and the seq of the model response
// that asked for the save. Another namespace sees nothing.
func TestMemoryTools(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "cairn.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mem, err := longterm.Open(ctx, "sqlite://"+path, longterm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()

	m, _ := script.New(script.Script{Steps: []script.Step{
		{ToolCalls: []script.Call{{Name: "memory_save", Arguments: json.RawMessage(`{"key":"food","text":"Ada's favourite food is pizza"}`)}}},
		{Text: "noted"},
	}})
	a := &agent.Agent{Model: m, Tools: append(builtin.Tools(), builtin.MemoryTools(mem, "users/ada")...), Store: st}
	s1, _ := a.Start(ctx)
	if _, err := s1.Run(ctx, "I love pizza"); err != nil {
		t.Fatal(err)
	}
	it, err := mem.Get(ctx, "users/ada", "food")
	if err != nil {
		t.Fatal(err)
	}
	var asked int64
	for _, msg := range s1.State().Messages {
		if msg.Role == cairn.RoleAssistant && len(msg.ToolCalls) > 0 {
			asked = msg.Seq
		}
	}
	if it.Source.Session != s1.ID() || it.Source.Seq != asked || asked == 0 {
		t.Fatalf("source %+v, want session %s seq %d", it.Source, s1.ID(), asked)
	}

	recalled, err := builtin.RecallMemories(ctx, mem, "users/ada", "what food should I order", 3)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(recalled, builtin.RecallMemoriesHeader) || !strings.Contains(recalled, "- food: Ada's favourite food is pizza") {
		t.Fatalf("recall: %q", recalled)
	}
	m2, _ := script.New(script.Script{Steps: []script.Step{
		{ToolCalls: []script.Call{{Name: "memory_search", Arguments: json.RawMessage(`{"query":"pizza"}`)}}},
		{Text: "pizza"},
	}})
	a2 := &agent.Agent{Model: m2, Tools: a.Tools, Store: st}
	s2, _ := a2.Start(ctx)
	res, err := s2.Run(ctx, "what food should I order", agent.Background(recalled))
	if err != nil || res.Output != "pizza" {
		t.Fatal(res, err)
	}
	msgs := s2.State().Messages
	var background, found bool
	for i, msg := range msgs {
		if msg.Role == cairn.RoleSystem && msg.Content == recalled {
			background = i+1 < len(msgs) && msgs[i+1].Role == cairn.RoleUser
		}
		if msg.Role == cairn.RoleTool && msg.Name == "memory_search" && strings.Contains(msg.Content, "pizza") && !msg.IsError {
			found = true
		}
	}
	if !background || !found {
		t.Fatalf("background %v, search found %v: %+v", background, found, msgs)
	}

	if r, _ := builtin.RecallMemories(ctx, mem, "users/bob", "food", 3); r != "" {
		t.Errorf("users/bob recalled %q", r)
	}
	if _, err := builtin.MemorySave(mem, "users/ada").Call(ctx, json.RawMessage(`{"key":"a b","text":"x"}`)); err == nil ||
		!strings.Contains(err.Error(), `bad argument "key"`) {
		t.Errorf("a bad key: %v", err)
	}
}
