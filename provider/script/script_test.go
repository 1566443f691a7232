package script_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/script"
)

func write(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoad(t *testing.T) {
	path := write(t, `{"steps": [
  {"text": "hi", "delay_ms": 1},
  {"tool_calls": [{"name": "calc", "arguments": {"expression": "1+1"}}, {"name": "clock"}]},
  {"text": "bye"}
]}`)
	m, err := script.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID() != "script:"+path || m.Steps() != 3 {
		t.Errorf("id %q, %d steps", m.ID(), m.Steps())
	}
}

func TestLoad_Errors(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"not json", `{"steps": [`, "truncated JSON"},
		{"malformed", "{\"steps\": [\n  {\"text\": \"a\"},\n  {\"text\": }\n]}", ":3:12: malformed JSON"},
		{"unknown top field", `{"steps": [], "extra": 1}`, `:1:15: extra: unknown field`},
		{"unknown step field", "{\"steps\": [\n  {\"text\": \"a\"},\n  {\"txt\": \"b\"}\n]}", `:3:3: step 2: json: unknown field "txt"`},
		{"mistyped", "{\"steps\": [{\"text\": 5}]}", `step 1: text: has a number where a string belongs`},
		{"call without name", "{\"steps\": [\n {\"text\": \"a\"},\n {\"tool_calls\": [{\"arguments\": {}}]}]}", `:3:2: step 2: tool_calls[0].name: is missing`},
		{"arguments not object", `{"steps": [{"tool_calls": [{"name": "x", "arguments": [1]}]}]}`, `step 1: tool_calls[0].arguments: must be a JSON object`},
		{"negative delay", `{"steps": [{"delay_ms": -1}]}`, `step 1: delay_ms: is -1`},
		{"no steps", `{"steps": []}`, `steps: is empty`},
		{"missing steps", `{}`, `steps: is missing`},
		{"trailing", `{"steps": [{}]} x`, `:1:17: malformed JSON: invalid character 'x' after top-level value`},
		{"array", `[]`, `must be a JSON object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := write(t, tt.text)
			_, err := script.Load(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("got %v, want an error naming the file and %q", err, tt.want)
			}
			if _, ok := errors.AsType[*script.LoadError](err); !ok {
				t.Errorf("not a *LoadError: %T", err)
			}
		})
	}
	if _, err := script.Load(filepath.Join(t.TempDir(), "none.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestModel_Generate(t *testing.T) {
	m, err := script.New(script.Script{Steps: []script.Step{
		{Text: "zero"},
		{Text: "one", ToolCalls: []script.Call{{Name: "calc", Arguments: []byte(`{"expression":"1"}`)}, {Name: "clock"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// The step comes from the request (the recorded history), not from
	// how many calls this value has answered.
	for range 2 {
		resp, err := m.Generate(t.Context(), &provider.Request{Responses: 1})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != "one" || len(resp.ToolCalls) != 2 || resp.FinishReason != "tool_calls" {
			t.Fatalf("step 1: %+v", resp)
		}
		want := []cairn.ToolCall{{ID: "call_1_0", Name: "calc", Args: []byte(`{"expression":"1"}`)}, {ID: "call_1_1", Name: "clock", Args: []byte(`{}`)}}
		for i, c := range resp.ToolCalls {
			if c.ID != want[i].ID || c.Name != want[i].Name || string(c.Args) != string(want[i].Args) {
				t.Errorf("call %d: %+v, want %+v", i, c, want[i])
			}
		}
	}
	var streamed string
	resp, _ := m.Generate(t.Context(), &provider.Request{Responses: 0, OnText: func(s string) { streamed += s }})
	if resp.Text != "zero" || streamed != "zero" || resp.FinishReason != "stop" {
		t.Errorf("step 0: %+v, streamed %q", resp, streamed)
	}
	_, err = m.Generate(t.Context(), &provider.Request{Responses: 2})
	if !errors.Is(err, provider.ErrScriptEnded) || !strings.Contains(err.Error(), "step 3 of a 2-step script") {
		t.Errorf("past the end: %v", err)
	}
}

func TestModel_DelayCancel(t *testing.T) {
	m, _ := script.New(script.Script{Steps: []script.Step{{Text: "slow", DelayMS: 60_000}}})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := m.Generate(ctx, &provider.Request{}); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	if _, err := script.New(script.Script{}); err == nil {
		t.Errorf("an empty script was accepted")
	}
}

// A summary request gets a digest and consumes no step: the step a chat
// request gets still follows from Responses alone, even past the last one.
func TestModel_Summary(t *testing.T) {
	m, err := script.New(script.Script{Steps: []script.Step{{Text: "one", DelayMS: 60_000}}})
	if err != nil {
		t.Fatal(err)
	}
	req := &provider.Request{Purpose: provider.PurposeSummary, Responses: 7, Messages: []cairn.Message{
		{Role: cairn.RoleUser, Content: "hello"}, {Role: cairn.RoleAssistant, Content: "one"},
	}}
	resp, err := m.Generate(t.Context(), req) // no delay: the step's delay is not the summary's
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != provider.Digest(req) || resp.Usage.InputTokens != int64(provider.EstimateTokens(req)) {
		t.Errorf("summary %q, usage %+v", resp.Text, resp.Usage)
	}
	if _, err := m.Generate(t.Context(), &provider.Request{Responses: 1}); !errors.Is(err, provider.ErrScriptEnded) {
		t.Errorf("a chat request past the last step: %v, want ErrScriptEnded", err)
	}
}
