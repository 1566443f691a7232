package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn/agent"
)

// DefaultCallTimeout bounds a tool call when Config.CallTimeout is 0.
const DefaultCallTimeout = 2 * time.Minute

// Config says how to reach one MCP server and how to treat its tools.
type Config struct {
	// Name is the server's name, 1-32 letters, digits or '-': its tools
	// are called Name_TOOL, so the first "_" of a recorded name ends it.
	Name string
	// Transport returns a new transport to the server for each
	// connection: Connect calls it, and the first call after the server
	// died calls it again to restart it. Command and HTTP make one.
	Transport func() (sdk.Transport, error)
	// Policy pins the class of tools over their annotations; PolicySource
	// names where it comes from in Class.Why ("config", say).
	Policy       Policy
	PolicySource string
	// CallTimeout bounds each call; 0 means DefaultCallTimeout, a negative
	// value no bound. A call past it is cancelled and gets an error result.
	CallTimeout time.Duration
	// MaxOutput is the most bytes of a result's text kept; 0 means
	// DefaultMaxOutput. Longer results are cut, saying so.
	MaxOutput int
	// Blobs keeps binary content; nil keeps only a reference (kind, type,
	// size, SHA-256) in the result.
	Blobs BlobFunc
	// Logger receives the SDK's log and cairn's warnings; nil means
	// slog.Default().
	Logger *slog.Logger
}

// ToolInfo describes one tool of a server as the agent has it.
type ToolInfo struct {
	Name        string // as the model calls it: SERVER_TOOL
	Server      string // the server's name
	Tool        string // the tool's name on the server
	Description string
	Class       Class
	Annotations *sdk.ToolAnnotations // as the server gave them, nil if none
}

// Skipped is a tool of a server that the agent does not get, and why.
type Skipped struct {
	Server string
	Tool   string
	Reason string
}

// Server is a connection to one MCP server whose tools are agent tools.
// When the server dies, the call in flight gets an error result and the
// next call starts it again (a Server made by Tools, on a session it does
// not own, cannot). It is safe for concurrent use.
type Server struct {
	cfg     Config
	impl    *sdk.Implementation // the server's own name and version
	tools   []*agent.Tool
	infos   []ToolInfo
	skipped []Skipped
	unknown []string // tools the policy names that the server does not offer

	mu       sync.Mutex
	cs       *sdk.ClientSession // nil once it died: the next call reconnects
	closed   bool
	restarts int
}

// Connect starts (or connects to) the server through cfg.Transport and
// lists its tools. The caller closes the Server.
func Connect(ctx context.Context, cfg Config) (*Server, error) {
	if err := checkName(cfg.Name); err != nil {
		return nil, err
	}
	if cfg.Transport == nil {
		return nil, fmt.Errorf("MCP server %s: no transport", cfg.Name)
	}
	s := &Server{cfg: cfg}
	cs, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	s.cs = cs
	if err := s.load(ctx, cs); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Tools returns the tools of the server that cs is connected to as agent
// tools, named cfg.Name + "_" + the tool's name and classified by their
// annotations and cfg.Policy. cfg.Transport is not used: a call after the
// session ended gets an error result, and the caller keeps closing cs.
func Tools(ctx context.Context, cs *sdk.ClientSession, cfg Config) ([]*agent.Tool, error) {
	if err := checkName(cfg.Name); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, cs: cs}
	s.cfg.Transport = nil
	if err := s.load(ctx, cs); err != nil {
		return nil, err
	}
	for _, sk := range s.skipped {
		s.logger().Warn("MCP tool skipped", "server", sk.Server, "tool", sk.Tool, "reason", sk.Reason)
	}
	return s.tools, nil
}

// Name returns the server's name, the prefix of its tools' names.
func (s *Server) Name() string { return s.cfg.Name }

// Implementation returns the name and version the server gave.
func (s *Server) Implementation() *sdk.Implementation { return s.impl }

// Tools returns the server's tools, sorted by name.
func (s *Server) Tools() []*agent.Tool { return slices.Clone(s.tools) }

// Infos describes the server's tools, in the order of Tools.
func (s *Server) Infos() []ToolInfo { return slices.Clone(s.infos) }

// Skipped lists the server's tools the agent does not get, and why: a
// schema a model cannot take, a name another of its tools took. Tools the
// policy hides are not listed.
func (s *Server) Skipped() []Skipped { return slices.Clone(s.skipped) }

// Unmatched returns the tools Policy.Tools names that the server does not
// offer (a misspelt name, a tool it no longer has), sorted.
func (s *Server) Unmatched() []string { return slices.Clone(s.unknown) }

// Restarts returns how many times the server was started again after it
// died.
func (s *Server) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// Close ends the connection (a command is asked to exit: its standard
// input is closed, then it is terminated). Calls after Close get an error
// result.
func (s *Server) Close() error {
	s.mu.Lock()
	cs := s.cs
	s.cs, s.closed = nil, true
	owned := s.cfg.Transport != nil
	s.mu.Unlock()
	if cs == nil || !owned {
		return nil
	}
	return cs.Close()
}

func (s *Server) logger() *slog.Logger {
	if s.cfg.Logger != nil {
		return s.cfg.Logger
	}
	return slog.Default()
}

// connect makes a new session through the configured transport.
func (s *Server) connect(ctx context.Context) (*sdk.ClientSession, error) {
	t, err := s.cfg.Transport()
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: %w", s.cfg.Name, err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "cairn", Version: version()}, &sdk.ClientOptions{
		Logger:       s.logger(),
		Capabilities: &sdk.ClientCapabilities{},
	})
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		err = fmt.Errorf("MCP server %s: start: %w", s.cfg.Name, err)
		if d, ok := t.(interface{ stderrTail() string }); ok && d.stderrTail() != "" {
			err = fmt.Errorf("%w; its error output ends with: %s", err, d.stderrTail())
		}
		return nil, err
	}
	go func() {
		cs.Wait()
		s.mu.Lock()
		if s.cs == cs {
			s.cs = nil // it died: the next call starts it again
		}
		s.mu.Unlock()
	}()
	return cs, nil
}

// session returns the live session, restarting the server if it died.
func (s *Server) session(ctx context.Context) (*sdk.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, fmt.Errorf("MCP server %s is closed", s.cfg.Name)
	case s.cs != nil:
		return s.cs, nil
	case s.cfg.Transport == nil:
		return nil, fmt.Errorf("MCP server %s: the session ended", s.cfg.Name)
	}
	cs, err := s.connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w (a restart after it stopped)", err)
	}
	s.cs = cs
	s.restarts++
	s.logger().Warn("MCP server restarted after it stopped", "server", s.cfg.Name)
	return cs, nil
}

// drop forgets a session whose connection failed, and closes it if the
// Server made it (a caller's own session is the caller's to close).
func (s *Server) drop(cs *sdk.ClientSession) {
	s.mu.Lock()
	if s.cs == cs {
		s.cs = nil
	}
	s.mu.Unlock()
	if s.cfg.Transport != nil {
		go cs.Close()
	}
}

// load lists the server's tools and makes the agent tools.
func (s *Server) load(ctx context.Context, cs *sdk.ClientSession) error {
	if r := cs.InitializeResult(); r != nil {
		s.impl = r.ServerInfo
	}
	var listed []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("MCP server %s: list tools: %w", s.cfg.Name, err)
		}
		listed = append(listed, t)
	}
	slices.SortFunc(listed, func(a, b *sdk.Tool) int { return strings.Compare(a.Name, b.Name) })
	for name := range s.cfg.Policy.Tools {
		if !slices.ContainsFunc(listed, func(t *sdk.Tool) bool { return t.Name == name }) {
			s.unknown = append(s.unknown, name)
		}
	}
	slices.Sort(s.unknown)
	taken := map[string]string{}
	for _, t := range listed {
		info, schema, reason := s.describe(t, taken)
		if reason == hidden {
			continue
		}
		if reason != "" {
			s.skipped = append(s.skipped, Skipped{Server: s.cfg.Name, Tool: t.Name, Reason: reason})
			continue
		}
		taken[info.Name] = t.Name
		s.infos = append(s.infos, info)
		s.tools = append(s.tools, agent.NewRawTool(info.Name, info.Description, schema, s.caller(info), info.Class.Options()...))
	}
	return nil
}

// hidden is describe's reason for a tool the policy hides: it is neither
// a tool nor skipped.
const hidden = "\x00hidden"

// describe checks one listed tool and describes it, or says why it is skipped.
func (s *Server) describe(t *sdk.Tool, taken map[string]string) (ToolInfo, json.RawMessage, string) {
	class, on := s.cfg.Policy.classOf(t.Name, t.Annotations, s.cfg.PolicySource)
	if !on {
		return ToolInfo{}, nil, hidden
	}
	name := toolName(s.cfg.Name, t.Name)
	if other, ok := taken[name]; ok {
		return ToolInfo{}, nil, fmt.Sprintf("its name %s is taken by tool %q", name, other)
	}
	schema, err := checkSchema(t.InputSchema)
	if err != nil {
		return ToolInfo{}, nil, "input schema: " + err.Error()
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	if desc == "" && t.Annotations != nil {
		desc = t.Annotations.Title
	}
	return ToolInfo{Name: name, Server: s.cfg.Name, Tool: t.Name, Description: desc, Class: class, Annotations: t.Annotations}, schema, ""
}

// caller returns the function that calls the tool on the server.
func (s *Server) caller(info ToolInfo) func(context.Context, json.RawMessage) (string, error) {
	return func(ctx context.Context, args json.RawMessage) (string, error) {
		var obj map[string]json.RawMessage
		if len(args) > 0 {
			if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
				return "", &agent.ArgumentError{Msg: "the arguments must be a JSON object"}
			}
		}
		cctx, cancel := ctx, context.CancelFunc(func() {})
		timeout := s.cfg.CallTimeout
		if timeout == 0 {
			timeout = DefaultCallTimeout
		}
		if timeout > 0 {
			cctx, cancel = context.WithTimeout(ctx, timeout) // a restart counts in it
		}
		defer cancel()
		cs, err := s.session(cctx)
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return "", fmt.Errorf("not run: %w", err)
		}
		params := &sdk.CallToolParams{Name: info.Tool, Arguments: json.RawMessage("{}")}
		if len(args) > 0 {
			params.Arguments = args
		}
		res, err := cs.CallTool(cctx, params)
		if err != nil {
			return "", s.callError(ctx, cctx, cs, info, timeout, err)
		}
		out := render(ctx, res, s.cfg.Blobs, s.cfg.MaxOutput)
		if res.IsError {
			if out == "" {
				out = "the tool reported an error and said nothing more"
			}
			return "", errors.New(out)
		}
		return out, nil
	}
}

// callError is the error result of a call that got no result from the
// server: cancelled, past its timeout, refused with an MCP error, or cut
// off because the server stopped (which is then started again for the
// next call).
func (s *Server) callError(ctx, cctx context.Context, cs *sdk.ClientSession, info ToolInfo, timeout time.Duration, err error) error {
	if ctx.Err() != nil {
		return ctx.Err() // the run was cancelled: the call stays pending
	}
	unknown := ""
	if !info.Class.Idempotent {
		unknown = "; whether it had an effect is unknown"
	}
	if errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("MCP server %s: %s did not answer within %s and was cancelled%s", s.cfg.Name, info.Tool, timeout, unknown)
	}
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		code := ""
		if je.Code != 0 {
			code = fmt.Sprintf(" (MCP error %d)", je.Code)
		}
		return fmt.Errorf("MCP server %s refused the call of %s: %s%s", s.cfg.Name, info.Tool, je.Message, code)
	}
	s.drop(cs)
	what := "the connection failed"
	if s.cfg.Transport != nil {
		what += "; the server is started again for the next call"
	}
	return fmt.Errorf("MCP server %s stopped answering during the call of %s (%v)%s; %s", s.cfg.Name, info.Tool, err, unknown, what)
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range append([]*debug.Module{&bi.Main}, bi.Deps...) {
			if m.Path == "github.com/cairnhq/cairn" && m.Version != "" {
				return m.Version
			}
		}
	}
	return "devel"
}
