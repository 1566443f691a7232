package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/config"
	"github.com/cairnhq/cairn/mcp"
)

// Defaults of an [mcp.servers.NAME] table.
const (
	DefaultMCPStartup = 60 * time.Second
	// DefaultMCPDownloadStartup is the startup timeout of a server whose
	// command fetches it before it starts (npx, uvx, bunx, pipx): the
	// first start downloads the server and its dependencies.
	DefaultMCPDownloadStartup = 5 * time.Minute
	DefaultMCPTimeout         = mcp.DefaultCallTimeout
)

// downloaders are the commands that fetch a package before they run it.
var downloaders = []string{"npx", "uvx", "bunx", "pipx", "pnpx"}

// downloads reports whether the server's command fetches it before it
// starts (its base name is npx, uvx, …; a Windows .cmd or .exe too).
func downloads(s config.MCPServer) bool {
	base := filepath.Base(s.Command)
	base = strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(base), ".cmd"), ".exe")
	return s.URL == "" && slices.Contains(downloaders, base)
}

// MCPStartupTimeout returns the time a server has to start and list its
// tools: startup_timeout_seconds if set, else DefaultMCPDownloadStartup for
// a command that downloads the server first (npx, uvx, …) and
// DefaultMCPStartup for any other.
func MCPStartupTimeout(s config.MCPServer) time.Duration {
	switch {
	case s.StartupTimeoutSeconds > 0:
		return time.Duration(s.StartupTimeoutSeconds) * time.Second
	case downloads(s):
		return DefaultMCPDownloadStartup
	}
	return DefaultMCPStartup
}

// mcpSet is the MCP servers one App started, once, for its commands.
type mcpSet struct {
	once    sync.Once
	servers []*mcp.Server
	err     error
}

// The MCP servers each App started, closed by App.Close. Kept beside the
// App rather than in it so that the App stays a plain set of fields.
var (
	mcpMu      sync.Mutex
	mcpStarted = map[*App]*mcpSet{}
)

// MCPConfig returns the mcp.Config of the configured server name: its
// transport with the ${VAR}s of its env and headers read from getenv, its
// policy, timeouts (a start again within its startup timeout), output
// limit and the blob folder.
func MCPConfig(cfg *config.Config, name string, getenv func(string) string, logger *slog.Logger) (mcp.Config, error) {
	s, ok := cfg.MCP.Servers[name]
	if !ok {
		return mcp.Config{}, fmt.Errorf("no MCP server %q is configured", name)
	}
	c := mcp.Config{
		Name:         name,
		PolicySource: "config",
		Policy:       mcp.Policy{Idempotent: s.Idempotent, Approval: s.Approval},
		CallTimeout:  time.Duration(s.TimeoutSeconds) * time.Second,
		StartTimeout: MCPStartupTimeout(s),
		MaxOutput:    s.MaxOutputBytes,
		Logger:       logger,
	}
	if cfg.MCP.BlobDir != "" {
		c.Blobs = mcp.BlobDir(cfg.MCP.BlobDir)
	}
	for tool, t := range s.Tools {
		if c.Policy.Tools == nil {
			c.Policy.Tools = map[string]mcp.ToolPolicy{}
		}
		c.Policy.Tools[tool] = mcp.ToolPolicy{Disabled: t.Enabled != nil && !*t.Enabled, Idempotent: t.Idempotent, Approval: t.Approval,
			Timeout: time.Duration(t.TimeoutSeconds) * time.Second}
	}
	expand := func(what string, m map[string]string) (map[string]string, error) {
		out := make(map[string]string, len(m))
		for k, v := range m {
			x, err := config.ExpandEnv(v, getenv)
			if err != nil {
				return nil, fmt.Errorf("mcp.servers.%s.%s.%s: %w", name, what, k, err)
			}
			out[k] = x
		}
		return out, nil
	}
	if s.URL != "" {
		headers, err := expand("headers", s.Headers)
		if err != nil {
			return mcp.Config{}, err
		}
		c.Transport = mcp.HTTP(s.URL, headers)
		return c, nil
	}
	env, err := expand("env", s.Env)
	if err != nil {
		return mcp.Config{}, err
	}
	var kv []string
	for k, v := range env {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	c.Transport = mcp.Command(s.Command, s.Args, kv, s.Cwd)
	return c, nil
}

// StartMCP starts the configured MCP server name (or connects to it) and
// lists its tools, within its startup timeout. The caller closes it.
func (a *App) StartMCP(ctx context.Context, name string) (*mcp.Server, error) {
	cfg, err := a.Config()
	if err != nil {
		return nil, err
	}
	logger := slog.New(slog.NewTextHandler(a.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := MCPConfig(cfg, name, a.Getenv, logger)
	if err != nil {
		return nil, Fail(err, "set the variable, or change [mcp.servers."+name+"]")
	}
	sc := cfg.MCP.Servers[name]
	d := MCPStartupTimeout(sc)
	sctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	s, err := mcp.Connect(sctx, c)
	if err != nil {
		if errors.Is(sctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("%w (it did not start within %s: startup_timeout_seconds)", err, d)
			if downloads(sc) {
				err = fmt.Errorf("%w; %s downloads the server on its first start, which can take minutes: "+
					"raise startup_timeout_seconds, or run the command once in a shell so that the next start finds it downloaded",
					err, filepath.Base(sc.Command))
			}
		}
		return nil, Fail(err, mcpHint(cfg, name))
	}
	return s, nil
}

func mcpHint(cfg *config.Config, name string) string {
	where := "the config file"
	if cfg.Source != "" {
		where = cfg.Source
	}
	return "`cairn doctor` starts each MCP server and shows what fails; fix [mcp.servers." + name + "] in " + where +
		", or set enabled = false there to go on without it"
}

// MCPServers starts the configured MCP servers, all at once and only once
// for the App; App.Close closes them. A server that does not start is an
// error naming it. The tools a server offers that the agent cannot take
// are reported as warnings.
func (a *App) MCPServers() ([]*mcp.Server, error) {
	mcpMu.Lock()
	set := mcpStarted[a]
	if set == nil {
		set = &mcpSet{}
		mcpStarted[a] = set
	}
	mcpMu.Unlock()
	set.once.Do(func() { set.servers, set.err = a.startAllMCP() })
	return set.servers, set.err
}

func (a *App) startAllMCP() ([]*mcp.Server, error) {
	cfg, err := a.Config()
	if err != nil {
		return nil, err
	}
	names := cfg.MCPServerNames()
	servers := make([]*mcp.Server, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { servers[i], errs[i] = a.StartMCP(context.Background(), name) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			for _, s := range servers {
				if s != nil {
					s.Close()
				}
			}
			return nil, errs[i]
		}
	}
	for _, s := range servers {
		for _, sk := range s.Skipped() {
			a.Warnf("MCP server %s: tool %q is left out: %s", sk.Server, sk.Tool, sk.Reason)
		}
		for _, t := range s.Unmatched() {
			a.Warnf("%s", UnmatchedTool(s.Name(), t))
		}
	}
	return servers, nil
}

// mcpTools returns the tools of the configured MCP servers, starting them
// if this App has not yet. A name that another tool already has is an
// error naming both.
func (a *App) mcpTools(others []*agent.Tool) ([]*agent.Tool, error) {
	servers, err := a.MCPServers()
	if err != nil {
		return nil, err
	}
	var tools []*agent.Tool
	for _, s := range servers {
		for _, t := range s.Tools() {
			if slices.ContainsFunc(others, func(o *agent.Tool) bool { return o.Name() == t.Name() }) {
				return nil, Fail(fmt.Errorf("MCP server %s: its tool %s has the name of a built-in tool", s.Name(), t.Name()),
					"rename the server in [mcp.servers."+s.Name()+"], or set enabled = false for that tool")
			}
			tools = append(tools, t)
		}
	}
	return tools, nil
}

// Close closes what the App's commands started and left open: the MCP
// servers (each command is asked to exit, then terminated).
func (a *App) Close() error {
	mcpMu.Lock()
	set := mcpStarted[a]
	delete(mcpStarted, a)
	mcpMu.Unlock()
	if set == nil {
		return nil
	}
	set.once.Do(func() {}) // a start in progress ends before the close
	var errs []error
	for _, s := range set.servers {
		if err := s.Close(); err != nil && !isExitError(err) {
			errs = append(errs, fmt.Errorf("close MCP server %s: %w", s.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// isExitError reports whether err only says how a server's process
// ended (terminated when it did not exit by itself).
func isExitError(err error) bool {
	_, ok := errors.AsType[*exec.ExitError](err)
	return ok
}

// UnmatchedTool says that the config has settings for a tool a server does
// not offer.
func UnmatchedTool(server, tool string) string {
	return fmt.Sprintf("[mcp.servers.%s.tools.%s] names a tool that MCP server %s does not offer; its settings do nothing (`cairn tools` lists the tools)",
		server, tool, server)
}
