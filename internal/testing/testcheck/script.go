package testcheck

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairnhq/cairn/provider/script"
)

// CrashScript writes, in dir, a 14-step script whose tool calls append to the
// file side, one line per step, with calc and remember calls beside them,
// and returns its path. The model pauses before each step for pace
// milliseconds and up to three times more, so that a kill lands at every
// point of a step.
func CrashScript(t testing.TB, dir, side string, pace int) string {
	t.Helper()
	var s script.Script
	for i := range 13 {
		st := script.Step{Text: fmt.Sprintf("step %d", i), DelayMS: pace + i%4*pace}
		line, _ := json.Marshal(map[string]string{"path": side, "line": fmt.Sprintf("line %d", i)})
		st.ToolCalls = append(st.ToolCalls, script.Call{Name: "append_file", Arguments: line})
		if i%2 == 0 {
			st.ToolCalls = append(st.ToolCalls, script.Call{Name: "calc", Arguments: json.RawMessage(fmt.Sprintf(`{"expression":"%d*(3+4)"}`, i))})
		}
		if i%3 == 0 {
			st.ToolCalls = append(st.ToolCalls, script.Call{Name: "remember", Arguments: json.RawMessage(fmt.Sprintf(`{"key":"k%d","value":%d}`, i, i))})
		}
		s.Steps = append(s.Steps, st)
	}
	s.Steps = append(s.Steps, script.Step{Text: "all done", DelayMS: pace})
	return WriteScript(t, dir, s)
}

// WriteScript writes s to dir/script.json and returns its path.
func WriteScript(t testing.TB, dir string, s script.Script) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "script.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
