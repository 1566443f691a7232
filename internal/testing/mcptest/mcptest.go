// Package mcptest is an MCP server built with the Go SDK for tests of
// faults that real servers rarely show on cue — a server that dies during
// a call, a slow call, a huge result, a schema a model cannot take — and
// the helpers that find it and the npm reference servers.
//
// Its tools (all on one server):
//
//	lookup   read-only: {"key"} → text and structured content
//	slow     read-only: {"ms"} waits that long (0: until cancelled)
//	huge     read-only: {"bytes"} → a text of that many bytes
//	image    read-only: {"bytes"} → an image of that many bytes
//	fail     read-only: an isError result
//	refuse   read-only: an MCP (JSON-RPC) error; {"bytes"}: its message is that long
//	die      side effect: logs the call, then the server exits mid-call
//	hang     read-only: logs the call; the first call in the log never
//	         ends and ignores cancellation, and every later call of any
//	         tool in that process waits behind it, as in a server stuck in
//	         a loop; the server then does not exit at the end of its input
//	         either. In a new process, hang answers at once.
//	gate     read-only: logs the call, then answers once the file named by
//	         MCPTEST_GATE exists
//	destroy  destructive, not idempotent: logs the call
//	write    not idempotent, not destructive: logs the call
//	look     read-only: logs the call
//	plain    no annotations at all: logs the call
//	badtype, badprops: input schemas a model cannot take
//	dotted.name: a name a model API refuses as it is
//
// The calls that log append "TOOL NOTE" lines to the file named by
// MCPTEST_LOG. With MCPTEST_BLOCK=TOOL, the first call of TOOL in that log
// blocks until the server is killed, so a test can kill the client during
// the call. The command (package server) appends its process ID to the
// file named by MCPTEST_PIDS when it starts.
package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn/internal/testing/testenv"
)

// ReferenceEnv names the variable that holds the folder where npm
// installed the reference servers (.ci/run sets it).
const ReferenceEnv = "CAIRN_TEST_MCP_SERVERS"

// Reference returns the path of an npm reference server's command
// (mcp-server-everything, mcp-server-filesystem) installed in the folder
// named by CAIRN_TEST_MCP_SERVERS. Without it the test is skipped, or
// failed under CI.
func Reference(tb testing.TB, bin string) string {
	tb.Helper()
	dir := testenv.URL(tb, ReferenceEnv)
	p := filepath.Join(dir, "node_modules", ".bin", bin)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("%s=%s has no %s: run `npm ci` there (see .ci/run): %v", ReferenceEnv, dir, bin, err)
	}
	return p
}

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// Binary builds the test server's command once per test process and
// returns its path.
func Binary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcptest-")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "mcptest-server")
		out, err := exec.Command("go", "build", "-o", built, "github.com/cairnhq/cairn/internal/testing/mcptest/server").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build the MCP test server: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return built
}

// Calls returns the lines of the call log at path ("TOOL NOTE"), none if
// it does not exist.
func Calls(tb testing.TB, path string) []string {
	tb.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		tb.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// WaitCalls waits until the call log at path has n lines.
func WaitCalls(tb testing.TB, path string, n int) {
	tb.Helper()
	for range 6000 {
		if len(Calls(tb, path)) >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Fatalf("the MCP test server logged %v, want %d calls", Calls(tb, path), n)
}

// PIDs returns the process IDs the test server's commands wrote to the
// file at path (MCPTEST_PIDS), in the order they started.
func PIDs(tb testing.TB, path string) []int {
	tb.Helper()
	var pids []int
	for _, l := range Calls(tb, path) {
		pid, err := strconv.Atoi(l)
		if err != nil {
			tb.Fatalf("%s: %q is not a process ID", path, l)
		}
		pids = append(pids, pid)
	}
	return pids
}

// WaitPIDs waits until the file at path (MCPTEST_PIDS) names n processes,
// and returns them.
func WaitPIDs(tb testing.TB, path string, n int) []int {
	tb.Helper()
	for range 6000 {
		if pids := PIDs(tb, path); len(pids) >= n {
			return pids
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Fatalf("the MCP test server started %v, want %d processes", PIDs(tb, path), n)
	return nil
}

// WaitGone waits until process pid has ended (a zombie, ended but not yet
// reaped, counts as ended), and fails the test if it has not within a
// minute.
func WaitGone(tb testing.TB, pid int, what string) {
	tb.Helper()
	for range 6000 {
		if !alive(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Fatalf("%s (process %d) still runs a minute later", what, pid)
}

type noteArgs struct {
	Note string `json:"note,omitempty" jsonschema:"a word to log"`
}

type keyArgs struct {
	Key string `json:"key" jsonschema:"what to look up"`
}

type sizeArgs struct {
	Bytes int `json:"bytes" jsonschema:"how many bytes"`
}

type msArgs struct {
	MS int `json:"ms,omitempty" jsonschema:"milliseconds to wait; 0 waits until cancelled"`
}

func ptr[T any](v T) *T { return &v }

var (
	readOnly    = &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}
	destructive = &sdk.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}
	sideEffect  = &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}
)

// NewServer returns the test server with all its tools.
func NewServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "cairn-mcptest", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "lookup", Description: "Looks a key up.", Annotations: readOnly},
		func(_ context.Context, _ *sdk.CallToolRequest, in keyArgs) (*sdk.CallToolResult, map[string]string, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "the value of " + in.Key}}},
				map[string]string{"key": in.Key, "value": strings.ToUpper(in.Key)}, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "slow", Description: "Waits.", Annotations: readOnly},
		func(ctx context.Context, _ *sdk.CallToolRequest, in msArgs) (*sdk.CallToolResult, any, error) {
			var wait <-chan time.Time
			if in.MS > 0 {
				wait = time.After(time.Duration(in.MS) * time.Millisecond)
			}
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-wait:
			}
			return text(fmt.Sprintf("waited %d ms", in.MS)), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "huge", Description: "Returns a long text.", Annotations: readOnly},
		func(_ context.Context, _ *sdk.CallToolRequest, in sizeArgs) (*sdk.CallToolResult, any, error) {
			return text(strings.Repeat("x", in.Bytes)), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "image", Description: "Returns an image.", Annotations: readOnly},
		func(_ context.Context, _ *sdk.CallToolRequest, in sizeArgs) (*sdk.CallToolResult, any, error) {
			data := make([]byte, in.Bytes)
			for i := range data {
				data[i] = byte(i)
			}
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "a picture"},
				&sdk.ImageContent{MIMEType: "image/png", Data: data},
			}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Fails.", Annotations: readOnly},
		func(context.Context, *sdk.CallToolRequest, noteArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "no such key"}}}, nil, nil
		})
	s.AddTool(&sdk.Tool{Name: "refuse", Description: "Answers with an MCP error.", Annotations: readOnly,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"bytes":{"type":"integer"}}}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in sizeArgs
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			if in.Bytes > 0 {
				return nil, errors.New(strings.Repeat("r", in.Bytes))
			}
			return nil, fmt.Errorf("refused on purpose")
		})
	sdk.AddTool(s, &sdk.Tool{Name: "gate", Description: "Waits for a file.", Annotations: readOnly},
		func(ctx context.Context, _ *sdk.CallToolRequest, in noteArgs) (*sdk.CallToolResult, any, error) {
			if _, err := logCall("gate", in.Note); err != nil {
				return nil, nil, err
			}
			for {
				if _, err := os.Stat(os.Getenv("MCPTEST_GATE")); err == nil {
					return text("gate done: " + in.Note), nil, nil
				}
				select {
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				case <-time.After(10 * time.Millisecond):
				}
			}
		})
	sdk.AddTool(s, &sdk.Tool{Name: "hang", Description: "Hangs once, ignoring cancellation.", Annotations: readOnly},
		func(_ context.Context, _ *sdk.CallToolRequest, in noteArgs) (*sdk.CallToolResult, any, error) {
			first, err := logCall("hang", in.Note)
			if err != nil {
				return nil, nil, err
			}
			if first {
				jammed.Store(true)
				Forever() // deaf to cancellation, as a server stuck in a loop
			}
			return text("hang done: " + in.Note), nil, nil
		})
	logged := func(name string, ann *sdk.ToolAnnotations, then func()) {
		sdk.AddTool(s, &sdk.Tool{Name: name, Description: "Logs the call (" + name + ").", Annotations: ann},
			func(ctx context.Context, _ *sdk.CallToolRequest, in noteArgs) (*sdk.CallToolResult, any, error) {
				first, err := logCall(name, in.Note)
				if err != nil {
					return nil, nil, err
				}
				if then != nil {
					then()
				}
				if first && os.Getenv("MCPTEST_BLOCK") == name {
					<-ctx.Done() // until the client goes away or the server is killed
					return nil, nil, ctx.Err()
				}
				return text(name + " done: " + in.Note), nil, nil
			})
	}
	logged("die", sideEffect, func() { os.Exit(7) })
	logged("destroy", destructive, nil)
	logged("write", sideEffect, nil)
	logged("look", readOnly, nil)
	logged("plain", nil, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "badtype", Description: "Advertises a schema of type string."}, noop)
	sdk.AddTool(s, &sdk.Tool{Name: "badprops", Description: "Advertises properties that are not an object."}, noop)
	sdk.AddTool(s, &sdk.Tool{Name: "dotted.name", Description: "Has a dot in its name.", Annotations: readOnly}, noop)
	s.AddReceivingMiddleware(badSchemas, jam)
	return s
}

// jammed is set once a call of hang hangs: every later call of a tool in
// this process waits for good.
var jammed atomic.Bool

// Jammed reports whether a call of hang hangs in this process: the
// command does not exit at the end of its input then.
func Jammed() bool { return jammed.Load() }

// Forever blocks for good, in a way the runtime's deadlock detection does
// not end (a process whose goroutines all wait on channels is killed).
func Forever() {
	for {
		time.Sleep(time.Hour)
	}
}

func jam(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method == "tools/call" && jammed.Load() {
			Forever()
		}
		return next(ctx, method, req)
	}
}

func noop(context.Context, *sdk.CallToolRequest, noteArgs) (*sdk.CallToolResult, any, error) {
	return text("ok"), nil, nil
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// badSchemas rewrites the tools/list answer so that badtype and badprops
// advertise schemas the SDK would not let a server register.
func badSchemas(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		lr, ok := res.(*sdk.ListToolsResult)
		if err != nil || method != "tools/list" || !ok {
			return res, err
		}
		out := *lr
		out.Tools = make([]*sdk.Tool, len(lr.Tools))
		for i, t := range lr.Tools {
			c := *t
			switch t.Name {
			case "badtype":
				c.InputSchema = json.RawMessage(`{"type":"string"}`)
			case "badprops":
				c.InputSchema = json.RawMessage(`{"type":"object","properties":5}`)
			}
			out.Tools[i] = &c
		}
		return &out, nil
	}
}

// HTTPHandler serves the test server over streamable HTTP. With a token,
// requests must carry "Authorization: Bearer TOKEN".
func HTTPHandler(token string) http.Handler {
	srv := NewServer()
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "missing or wrong token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ServeHTTP serves the test server over streamable HTTP for the test's
// duration and returns its URL.
func ServeHTTP(tb testing.TB, token string) string {
	srv := httptest.NewServer(HTTPHandler(token))
	tb.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

var logMu sync.Mutex

// logCall appends "TOOL NOTE" to the MCPTEST_LOG file and reports whether
// it is the first call of the tool there.
func logCall(tool, note string) (bool, error) {
	path := os.Getenv("MCPTEST_LOG")
	if path == "" {
		return true, nil
	}
	logMu.Lock()
	defer logMu.Unlock()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return false, err
	}
	first := true
	for _, line := range strings.Split(string(data), "\n") {
		if t, _, _ := strings.Cut(line, " "); t == tool {
			first = false
		}
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return false, err
	}
	if note == "" {
		note = "-"
	}
	if _, err := fmt.Fprintf(f, "%s %s\n", tool, note); err != nil {
		f.Close()
		return false, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return false, err
	}
	return first, f.Close()
}
