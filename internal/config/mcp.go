package config

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// MCP configures the MCP (Model Context Protocol) servers whose tools join
// the agent's: one [mcp.servers.NAME] table each.
type MCP struct {
	Servers map[string]MCPServer `toml:"servers"`
	// BlobDir is a folder where binary content of tool results (images,
	// audio, blobs) is written as SHA256.EXT, the result naming the file.
	// "" keeps only a reference (type, size, SHA-256) in the history.
	BlobDir string `toml:"blob_dir"`
}

// MCPServer is one MCP server: a command that speaks MCP on its standard
// input and output (Command, Args, Env, Cwd), or a streamable-HTTP server
// (URL, Headers). Values of Env and Headers may name environment variables
// as ${VAR}, read when the server starts, so that secrets stay out of the
// file.
type MCPServer struct {
	Enabled *bool             `toml:"enabled"` // false: not started; nil or true: started
	Command string            `toml:"command"`
	Args    []string          `toml:"args"`
	Env     map[string]string `toml:"env"` // added to cairn's own environment
	Cwd     string            `toml:"cwd"`
	URL     string            `toml:"url"`
	Headers map[string]string `toml:"headers"`

	// Idempotent pins whether every tool of the server may run again when
	// a run is resumed after a crash; nil follows each tool's annotations
	// (readOnlyHint or idempotentHint: yes).
	Idempotent *bool `toml:"idempotent"`
	// Approval pins whether every call of the server's tools waits for a
	// person's decision; nil follows the annotations (destructive: yes).
	Approval *bool `toml:"approval"`

	TimeoutSeconds        int `toml:"timeout_seconds"`         // per call; 0: 120
	StartupTimeoutSeconds int `toml:"startup_timeout_seconds"` // to start and list tools; 0: 60 (300 for npx, uvx, …)
	MaxOutputBytes        int `toml:"max_output_bytes"`        // of a result's text; 0: 100000

	// Tools holds per-tool settings, by the tool's name on the server.
	Tools map[string]MCPTool `toml:"tools"`
}

// MCPTool pins how one tool of a server is treated, over the server's
// settings and the tool's annotations.
type MCPTool struct {
	Enabled        *bool `toml:"enabled"` // false: the model never sees the tool
	Idempotent     *bool `toml:"idempotent"`
	Approval       *bool `toml:"approval"`
	TimeoutSeconds int   `toml:"timeout_seconds"` // per call of this tool; 0: the server's
}

// On reports whether the server is to be started.
func (s MCPServer) On() bool { return s.Enabled == nil || *s.Enabled }

// MCPServerNames returns the names of the servers to start, sorted.
func (c *Config) MCPServerNames() []string {
	var names []string
	for name, s := range c.MCP.Servers {
		if s.On() {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// mcpNameRe is what a server's name may hold. It has no "_": the tools are
// named SERVER_TOOL, so the first "_" of a recorded tool name ends the
// server's name.
var mcpNameRe = regexp.MustCompile(`^[A-Za-z0-9-]{1,32}$`)

// envRefRe finds ${VAR} references.
var envRefRe = regexp.MustCompile(`\$\{([^}]*)\}`)

var envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validateMCP checks the [mcp.servers.NAME] tables.
func (c *Config) validateMCP(file string) error {
	names := make([]string, 0, len(c.MCP.Servers))
	for name := range c.MCP.Servers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := validateMCPServer(file, name, c.MCP.Servers[name]); err != nil {
			return err
		}
	}
	for _, t := range c.Agent.RequireApproval {
		server, tool, ok := strings.Cut(t, "_")
		if _, isServer := c.MCP.Servers[server]; ok && isServer && !slices.Contains(Tools, t) && !slices.Contains(MemoryTools, t) {
			return &Error{File: file, Key: "agent.require_approval", Msg: fmt.Sprintf(
				"%q is a tool of MCP server %s: set approval = true in [mcp.servers.%s.tools.%s] (or approval = true in [mcp.servers.%s] for all its tools)",
				t, server, server, tool, server)}
		}
	}
	return nil
}

func validateMCPServer(file, name string, s MCPServer) error {
	key := "mcp.servers." + name
	bad := func(k, format string, args ...any) error {
		if k != "" {
			k = key + "." + k
		} else {
			k = key
		}
		return &Error{File: file, Key: k, Msg: fmt.Sprintf(format, args...)}
	}
	if !mcpNameRe.MatchString(name) {
		return bad("", "the server's name %q must be 1-32 letters, digits or '-' (its tools are called NAME_TOOL, so no '_')", name)
	}
	switch {
	case s.Command == "" && s.URL == "":
		return bad("", "set command (a server on standard input and output) or url (a streamable-HTTP server)")
	case s.Command != "" && s.URL != "":
		return bad("url", "command and url are both set; a server is one or the other")
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("url", "%q is not an http:// or https:// URL", s.URL)
		}
		for _, k := range []string{"args", "env", "cwd"} {
			if (k == "args" && len(s.Args) > 0) || (k == "env" && len(s.Env) > 0) || (k == "cwd" && s.Cwd != "") {
				return bad(k, "is for a command; this server has a url")
			}
		}
	}
	if s.Command != "" && len(s.Headers) > 0 {
		return bad("headers", "are for a url; this server is a command")
	}
	for k, v := range s.Env {
		if !envNameRe.MatchString(k) {
			return bad("env", "%q is not an environment variable name", k)
		}
		if err := checkEnvRefs(v); err != nil {
			return bad("env", "%s: %v", k, err)
		}
	}
	for k, v := range s.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			return bad("headers", "%q is not a header name", k)
		}
		if err := checkEnvRefs(v); err != nil {
			return bad("headers", "%s: %v", k, err)
		}
	}
	for k, n := range map[string]int{"timeout_seconds": s.TimeoutSeconds, "startup_timeout_seconds": s.StartupTimeoutSeconds, "max_output_bytes": s.MaxOutputBytes} {
		if n < 0 {
			return bad(k, "must not be negative")
		}
	}
	for tool, t := range s.Tools {
		if t.TimeoutSeconds < 0 {
			return bad("tools."+tool+".timeout_seconds", "must not be negative")
		}
	}
	return nil
}

// checkEnvRefs checks the ${VAR} references of a value.
func checkEnvRefs(v string) error {
	for _, m := range envRefRe.FindAllStringSubmatch(v, -1) {
		if !envNameRe.MatchString(m[1]) {
			return fmt.Errorf("${%s} does not name an environment variable", m[1])
		}
	}
	return nil
}

// ExpandEnv replaces the ${VAR} references of v with the values getenv
// gives; a variable that is unset or empty is an error naming it.
func ExpandEnv(v string, getenv func(string) string) (string, error) {
	var missing []string
	out := envRefRe.ReplaceAllStringFunc(v, func(ref string) string {
		name := ref[2 : len(ref)-1]
		val := getenv(name)
		if val == "" {
			missing = append(missing, name)
		}
		return val
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("the environment variable %s is not set", strings.Join(missing, ", "))
	}
	return out, nil
}
