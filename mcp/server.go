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

// DefaultStartTimeout bounds a start of a server again (after it stopped,
// or after a call was cut off) when Config.StartTimeout is 0.
const DefaultStartTimeout = time.Minute

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
	// value no bound; ToolPolicy.Timeout sets one tool's. A call past it
	// is cancelled and gets an error result, and the server is started
	// again for the next call (see Server).
	CallTimeout time.Duration
	// StartTimeout bounds each start of the server again; 0 means
	// DefaultStartTimeout. A start does not count in the timeout of the
	// call that waits for it. (Connect's own start is bounded by its
	// context.)
	StartTimeout time.Duration
	// MaxOutput is the most bytes of a result's text kept, or of an
	// error's; 0 means DefaultMaxOutput. Longer text is cut, saying so
	// (agent.CutOutput); the agent cuts at its own limit too
	// (agent.Agent.MaxToolOutput), whichever is less.
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
// It is safe for concurrent use.
//
// When the server dies, the calls in flight get error results and the
// next call starts it again. So does a call cut off, past its timeout or
// cancelled: the MCP specification tells a server not to answer a call it
// was told to cancel, so whether the server stopped working on it cannot
// be known, and a server deaf to cancellation would make every later call
// wait behind the one it is stuck in. The calls still in flight on the old
// session finish there (each within its own timeout); then the session is
// closed, and a command's process group is terminated at once rather than
// asked to exit. A Server made by Tools, on a session it does not own,
// restarts nothing: after a cut-off call it goes on with the session, and
// after the session ends every call is an error result.
type Server struct {
	cfg     Config
	impl    *sdk.Implementation // the server's own name and version
	tools   []*agent.Tool
	infos   []ToolInfo
	skipped []Skipped
	unknown []string // tools the policy names that the server does not offer

	done  context.Context // cancelled by Close: cuts off the calls in flight
	close context.CancelFunc

	mu       sync.Mutex
	cur      *conn              // the session new calls use; nil: the next call starts the server again
	live     map[*conn]struct{} // sessions not yet closed: cur, and retired ones with calls in flight
	why      string             // why cur is nil, for the log of the next start
	closed   bool
	restarts int
	closing  sync.WaitGroup // closes of retired sessions under way
}

// conn is one session with the server: a start of its command, or an
// HTTP session.
type conn struct {
	cs      *sdk.ClientSession
	stop    func() // terminates a command's process group at once; nil for HTTP
	calls   int    // calls in flight
	retired bool   // takes no new call; closed once its last call ends
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
	s := newServer(cfg)
	c, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.use(c)
	s.mu.Unlock()
	if err := s.load(ctx, c.cs); err != nil {
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
	s := newServer(cfg)
	s.cur = &conn{cs: cs}
	s.cfg.Transport = nil
	if err := s.load(ctx, cs); err != nil {
		return nil, err
	}
	for _, sk := range s.skipped {
		s.logger().Warn("MCP tool skipped", "server", sk.Server, "tool", sk.Tool, "reason", sk.Reason)
	}
	return s.tools, nil
}

func newServer(cfg Config) *Server {
	s := &Server{cfg: cfg}
	s.done, s.close = context.WithCancel(context.Background())
	return s
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
// died or a call was cut off.
func (s *Server) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// Close ends the connection (a command is asked to exit: its standard
// input is closed, then its process group is terminated, then killed) and
// waits for it to end, and for the sessions retired after cut-off calls.
// Calls in flight are cut off (a command that had some is terminated at
// once), and they and calls after Close get an error result.
func (s *Server) Close() error {
	s.close() // first: a start under way holds s.mu, and gives up on this
	s.mu.Lock()
	live := map[*conn]bool{} // whether calls were in flight
	for c := range s.live {
		live[c] = c.calls > 0
	}
	s.cur, s.live, s.closed = nil, nil, true
	owned := s.cfg.Transport != nil
	s.mu.Unlock()
	var errs []error
	if owned {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for c, busy := range live {
			wg.Go(func() {
				if busy && c.stop != nil {
					c.stop()
				}
				if err := c.cs.Close(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	s.closing.Wait()
	return errors.Join(errs...)
}

func (s *Server) logger() *slog.Logger {
	if s.cfg.Logger != nil {
		return s.cfg.Logger
	}
	return slog.Default()
}

// connect makes a new session through the configured transport.
func (s *Server) connect(ctx context.Context) (*conn, error) {
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
	c := &conn{cs: cs}
	if st, ok := t.(interface{ stop() }); ok {
		c.stop = st.stop
	}
	return c, nil
}

// use makes c the session new calls use, and watches for its end: then
// the next call starts the server again. s.mu is held.
func (s *Server) use(c *conn) {
	if s.live == nil {
		s.live = map[*conn]struct{}{}
	}
	s.live[c] = struct{}{}
	s.cur = c
	go func() {
		c.cs.Wait()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.retire(c, "it stopped")
	}()
}

// acquire returns the session for a new call, starting the server again
// (within StartTimeout) if the last one ended or was retired, and counts
// the call in flight on it: release it.
func (s *Server) acquire(ctx context.Context) (*conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, fmt.Errorf("MCP server %s is closed", s.cfg.Name)
	case s.cur != nil:
		s.cur.calls++
		return s.cur, nil
	case s.cfg.Transport == nil:
		return nil, fmt.Errorf("MCP server %s: the session ended", s.cfg.Name)
	}
	d := s.cfg.StartTimeout
	if d <= 0 {
		d = DefaultStartTimeout
	}
	sctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	defer context.AfterFunc(s.done, cancel)()
	c, err := s.connect(sctx)
	if err != nil {
		switch {
		case s.done.Err() != nil:
			return nil, fmt.Errorf("MCP server %s is closed", s.cfg.Name)
		case errors.Is(sctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
			err = fmt.Errorf("%w (it did not start within %s)", err, d)
		}
		return nil, fmt.Errorf("%w (a restart after %s)", err, s.why)
	}
	s.use(c)
	s.restarts++
	s.logger().Warn("MCP server started again", "server", s.cfg.Name, "after", s.why)
	c.calls++
	return c, nil
}

// release ends a call on c. With a reason, c takes no new call (the next
// one starts the server again) and is closed once its last call ends.
func (s *Server) release(c *conn, retire string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.calls--
	if retire != "" {
		s.retire(c, retire)
	}
	s.closeIdle(c)
}

// retire takes c out of use for the reason why: the next call starts
// the server again, or, on a caller's own session, is an error. s.mu is
// held.
func (s *Server) retire(c *conn, why string) {
	c.retired = true
	if s.cur == c {
		s.cur, s.why = nil, why
	}
	s.closeIdle(c)
}

// closeIdle closes c in the background if it is retired and has no call
// in flight: a command's process group is terminated at once (its server
// was cut off or died), then the session is closed. s.mu is held.
func (s *Server) closeIdle(c *conn) {
	if _, ok := s.live[c]; !ok || !c.retired || c.calls > 0 || s.cfg.Transport == nil {
		return
	}
	delete(s.live, c)
	s.closing.Add(1)
	go func() {
		defer s.closing.Done()
		if c.stop != nil {
			c.stop()
		}
		c.cs.Close()
	}()
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

// caller returns the function that calls the tool on the server. The
// text of every error result it gives is cut to MaxOutput, as a result's.
func (s *Server) caller(info ToolInfo) func(context.Context, json.RawMessage) (string, error) {
	return func(ctx context.Context, args json.RawMessage) (string, error) {
		out, err := s.call(ctx, info, args)
		if err == nil || ctx.Err() != nil {
			return out, err
		}
		if _, ok := errors.AsType[*agent.ArgumentError](err); ok {
			return "", err
		}
		return "", errors.New(agent.CutOutput(err.Error(), s.cfg.MaxOutput))
	}
}

// call calls the tool on the server.
func (s *Server) call(ctx context.Context, info ToolInfo, args json.RawMessage) (string, error) {
	var obj map[string]json.RawMessage
	if len(args) > 0 {
		if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
			return "", &agent.ArgumentError{Msg: "the arguments must be a JSON object"}
		}
	}
	c, err := s.acquire(ctx) // a start of the server again does not count in the call's timeout
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("not run: %w", err)
	}
	timeout := s.timeout(info.Tool)
	cctx, cancel := context.WithCancel(ctx)
	if timeout > 0 {
		cctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	defer context.AfterFunc(s.done, cancel)() // Close cuts the call off
	params := &sdk.CallToolParams{Name: info.Tool, Arguments: json.RawMessage("{}")}
	if len(args) > 0 {
		params.Arguments = args
	}
	res, err := c.cs.CallTool(cctx, params)
	if err != nil {
		retire, err := s.callError(ctx, cctx, info, timeout, err)
		s.release(c, retire)
		return "", err
	}
	s.release(c, "")
	out := render(ctx, res, s.cfg.Blobs, s.cfg.MaxOutput)
	if res.IsError {
		if out == "" {
			out = "the tool reported an error and said nothing more"
		}
		return "", errors.New(out)
	}
	return out, nil
}

// timeout returns the bound of a call of tool: its own, or the server's;
// 0 for none.
func (s *Server) timeout(tool string) time.Duration {
	d := s.cfg.Policy.Tools[tool].Timeout
	if d == 0 {
		d = s.cfg.CallTimeout
	}
	switch {
	case d == 0:
		return DefaultCallTimeout
	case d < 0:
		return 0
	}
	return d
}

// callError is the error result of a call that got no result from the
// server — cancelled, past its timeout, refused with an MCP error, or cut
// off because the server stopped — and why its session is to be retired,
// "" if it is not: a server that stopped, or that may still be working on
// a call it was told to cancel, is started again for the next call.
func (s *Server) callError(ctx, cctx context.Context, info ToolInfo, timeout time.Duration, err error) (string, error) {
	owned := s.cfg.Transport != nil
	cutOff := func(why string) string {
		if !owned {
			return "" // a caller's own session cannot be replaced
		}
		return why
	}
	if ctx.Err() != nil {
		// The run was cancelled: the call stays pending.
		return cutOff("a call of " + info.Tool + " was cancelled"), ctx.Err()
	}
	unknown := ""
	if !info.Class.Idempotent {
		unknown = "; whether it had an effect is unknown"
	}
	if s.done.Err() != nil {
		return "", fmt.Errorf("MCP server %s was closed during the call of %s%s", s.cfg.Name, info.Tool, unknown)
	}
	if errors.Is(cctx.Err(), context.DeadlineExceeded) {
		again := ""
		if owned {
			again = "; the server is started again for the next call"
		}
		return cutOff(fmt.Sprintf("a call of %s did not answer within %s", info.Tool, timeout)),
			fmt.Errorf("MCP server %s: %s did not answer within %s and was cancelled%s%s", s.cfg.Name, info.Tool, timeout, unknown, again)
	}
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		code := ""
		if je.Code != 0 {
			code = fmt.Sprintf(" (MCP error %d)", je.Code)
		}
		return "", fmt.Errorf("MCP server %s refused the call of %s: %s%s", s.cfg.Name, info.Tool, je.Message, code)
	}
	what := "the connection failed"
	if owned {
		what += "; the server is started again for the next call"
	}
	return "it stopped answering",
		fmt.Errorf("MCP server %s stopped answering during the call of %s (%v)%s; %s", s.cfg.Name, info.Tool, err, unknown, what)
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
