package builtin_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/agent/builtin"
	"github.com/cairnhq/cairn/provider/script"
	"github.com/cairnhq/cairn/store/memory"
)

func TestEval(t *testing.T) {
	tests := []struct {
		expr string
		want string
	}{
		{"2*(3+4)", "14"},
		{"1 + 2 * 3", "7"},
		{"(1+2)*3", "9"},
		{"10/4", "2.5"},
		{"-3 + 5", "2"},
		{"--3", "3"},
		{"-(2+3)*2", "-10"},
		{"0.1+0.2", "0.3"},
		{".5*4", "2"},
		{"8/2/2", "2"},
		{"2-3-4", "-5"},
		{" 7 ", "7"},
		{"1.5e0", ""},
	}
	for _, tt := range tests {
		v, err := builtin.Eval(tt.expr)
		if tt.want == "" {
			if err == nil {
				t.Errorf("Eval(%q) = %v, want an error", tt.expr, v)
			}
			continue
		}
		if err != nil || builtin.Format(v) != tt.want {
			t.Errorf("Eval(%q) = %v, %v; want %s", tt.expr, builtin.Format(v), err, tt.want)
		}
	}
}

func TestEval_Errors(t *testing.T) {
	tests := []struct{ expr, msg string }{
		{"", "empty"},
		{"1/0", "division by zero"},
		{"1/(2-2)", "division by zero"},
		{"2*(3+4", "missing )"},
		{"2+", "ends where a number belongs"},
		{"2 3", `position 3: unexpected '3'`},
		{"abc", "position 1"},
		{"1..2", "position 3"},
		{"()", "position 2"},
		{strings.Repeat("(", 1000) + "1" + strings.Repeat(")", 1000), "nested too deeply"},
		{"1" + strings.Repeat("0", 400), "bad number"},
		{"1" + strings.Repeat("0", 300) + "*1" + strings.Repeat("0", 300), "too large"},
	}
	for _, tt := range tests {
		if _, err := builtin.Eval(tt.expr); err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Eval(%.20q): %v, want an error with %q", tt.expr, err, tt.msg)
		}
	}
}

func TestTools(t *testing.T) {
	var names []string
	for _, tool := range builtin.Tools() {
		names = append(names, tool.Name())
		if !json.Valid(tool.Schema()) || tool.Description() == "" {
			t.Errorf("%s: schema %s, description %q", tool.Name(), tool.Schema(), tool.Description())
		}
	}
	if got := strings.Join(names, " "); got != "calc clock remember recall append_file" {
		t.Errorf("tools: %s", got)
	}
	if builtin.AppendFile().Idempotent() || !builtin.Calc().Idempotent() {
		t.Errorf("append_file must be the one tool that is not idempotent")
	}
}

func TestCalc(t *testing.T) {
	out, err := builtin.Calc().Call(t.Context(), json.RawMessage(`{"expression":"2*(3+4)"}`))
	if err != nil || out != "14" {
		t.Errorf("calc: %q %v", out, err)
	}
	if _, err := builtin.Calc().Call(t.Context(), json.RawMessage(`{"expression":"1/0"}`)); err == nil {
		t.Errorf("calc 1/0 succeeded")
	}
	if _, err := builtin.Calc().Call(t.Context(), json.RawMessage(`{"expr":"1"}`)); err == nil || !strings.Contains(err.Error(), `"expr"`) {
		t.Errorf("a wrong argument name: %v", err)
	}
}

func TestClock(t *testing.T) {
	out, err := builtin.Clock().Call(t.Context(), json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339, out)
	if err != nil || time.Since(at) > time.Hour || time.Since(at) < -time.Hour {
		t.Errorf("clock: %q %v", out, err)
	}
}

func TestAppendFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	tool := builtin.AppendFile()
	for _, line := range []string{"one", "two"} {
		args, _ := json.Marshal(builtin.AppendFileInput{Path: path, Line: line})
		if _, err := tool.Call(t.Context(), args); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(path)
	if string(data) != "one\ntwo\n" {
		t.Errorf("file: %q", data)
	}
	if _, err := tool.Call(t.Context(), json.RawMessage(`{"path":"`+path+`","line":"a\nb"}`)); err == nil {
		t.Errorf("a line break was accepted")
	}
	if _, err := tool.Call(t.Context(), json.RawMessage(`{"path":"","line":"a"}`)); err == nil {
		t.Errorf("an empty path was accepted")
	}
}

// remember and recall through an agent: the variable is set with the
// call's result and survives into the next turn.
func TestRememberRecall(t *testing.T) {
	st, _ := memory.New(cairn.StoreOptions{})
	m, _ := script.New(script.Script{Steps: []script.Step{
		{ToolCalls: []script.Call{{Name: "remember", Arguments: json.RawMessage(`{"key":"color","value":["blue",1]}`)}}},
		{Text: "noted"},
		{ToolCalls: []script.Call{{Name: "recall", Arguments: json.RawMessage(`{"key":"color"}`)}, {Name: "recall", Arguments: json.RawMessage(`{"key":"size"}`)}}},
		{Text: "done"},
	}})
	a := &agent.Agent{Model: m, Tools: builtin.Tools(), Store: st}
	s, _ := a.Start(context.Background())
	if _, err := s.Run(t.Context(), "remember"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(t.Context(), "recall", agent.Continue()); err != nil {
		t.Fatal(err)
	}
	msgs := s.State().Messages
	got, missing := msgs[len(msgs)-3], msgs[len(msgs)-2]
	if got.Content != `["blue",1]` || got.IsError {
		t.Errorf("recall color: %+v", got)
	}
	if !missing.IsError || !strings.Contains(missing.Content, `nothing is remembered under "size"`) {
		t.Errorf("recall size: %+v", missing)
	}
	if _, err := builtin.Remember().Call(t.Context(), json.RawMessage(`{"key":"k","value":1}`)); err == nil {
		t.Errorf("remember outside a session succeeded")
	}
}
