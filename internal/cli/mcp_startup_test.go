package cli

import (
	"testing"

	"github.com/cairnhq/cairn/internal/config"
)

// TestMCPStartupTimeout checks that a server started by a command that
// downloads it first has the longer default, and that a set timeout wins.
func TestMCPStartupTimeout(t *testing.T) {
	for _, c := range []struct {
		s    config.MCPServer
		want string
	}{
		{config.MCPServer{Command: "npx"}, "5m0s"},
		{config.MCPServer{Command: "/usr/local/bin/uvx"}, "5m0s"},
		{config.MCPServer{Command: "node"}, "1m0s"},
		{config.MCPServer{URL: "https://mcp.example.com/mcp"}, "1m0s"},
		{config.MCPServer{Command: "npx", StartupTimeoutSeconds: 20}, "20s"},
	} {
		if got := MCPStartupTimeout(c.s).String(); got != c.want {
			t.Errorf("MCPStartupTimeout(%+v) = %s, want %s", c.s, got, c.want)
		}
	}
}
