package cli

import (
	"slices"
	"testing"

	"github.com/cairnhq/cairn/agent/builtin"
	"github.com/cairnhq/cairn/internal/config"
)

// TestConfigTools_MatchBuiltins: agent.require_approval accepts exactly the
// names of the built-in tools the command gives every agent.
func TestConfigTools_MatchBuiltins(t *testing.T) {
	var names []string
	for _, tool := range builtin.Tools() {
		names = append(names, tool.Name())
	}
	if !slices.Equal(names, config.Tools) {
		t.Errorf("config.Tools = %v, the built-in tools are %v", config.Tools, names)
	}
}
