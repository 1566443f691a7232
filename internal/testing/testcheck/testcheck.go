// Package testcheck holds the checks, the script and the store wrappers
// that the crash tests of the agent runtime, of the durable steps and of
// the reliability suite share.
package testcheck

import (
	"os"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
)

// History checks that messages are valid for a provider: every assistant
// tool call is followed by exactly one result, before the next assistant,
// user or system message, and no result comes without its call.
func History(t testing.TB, msgs []cairn.Message) {
	t.Helper()
	open := map[string]bool{}
	for i, m := range msgs {
		switch m.Role {
		case cairn.RoleAssistant, cairn.RoleUser, cairn.RoleSystem:
			if len(open) > 0 {
				t.Fatalf("message %d (%s): tool calls %v have no result before it", i, m.Role, open)
			}
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		case cairn.RoleTool:
			if !open[m.ToolCallID] {
				t.Fatalf("message %d: result of %s without an open call", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		}
	}
	if len(open) > 0 {
		t.Fatalf("tool calls %v have no result", open)
	}
}

// UniqueLines checks that no line of the side-effect file at path was
// written twice.
func UniqueLines(t testing.TB, session, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if seen[line] {
			t.Errorf("session %s: side-effect line %q written twice", session, line)
		}
		seen[line] = true
	}
}
