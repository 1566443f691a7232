package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/testing/mcptest"
	"github.com/cairnhq/cairn/mcp"
)

// startTest starts the MCP test server as a command named "t".
func startTest(t *testing.T, cfg mcp.Config, env ...string) *mcp.Server {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "t"
	}
	cfg.Transport = mcp.Command(mcptest.Binary(t), nil, env, "")
	s, err := mcp.Connect(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// answersStartedAgain checks that a lookup of key on s answers, after s
// has started its server again once.
func answersStartedAgain(t *testing.T, s *mcp.Server, key string) {
	t.Helper()
	out, err := call(t, tool(t, s, "t_lookup"), fmt.Sprintf(`{"key":%q}`, key))
	if err != nil || !strings.HasPrefix(out, "the value of "+key) {
		t.Errorf("the call after: %q, %v", out, err)
	}
	if s.Restarts() != 1 {
		t.Errorf("restarts = %d, want 1", s.Restarts())
	}
}

func tool(t *testing.T, s *mcp.Server, name string) *agent.Tool {
	t.Helper()
	for _, tl := range s.Tools() {
		if tl.Name() == name {
			return tl
		}
	}
	t.Fatalf("no tool %s among %d", name, len(s.Tools()))
	return nil
}

func call(t *testing.T, tl *agent.Tool, args string) (string, error) {
	t.Helper()
	return tl.Call(t.Context(), json.RawMessage(args))
}

func TestConnect_ToolsAndClasses(t *testing.T) {
	s := startTest(t, mcp.Config{})
	want := map[string]string{
		"t_lookup":      "read-only",
		"t_slow":        "read-only",
		"t_destroy":     "side effect, approval",
		"t_write":       "side effect",
		"t_look":        "read-only",
		"t_plain":       "side effect, approval",
		"t_dotted_name": "read-only",
	}
	got := map[string]string{}
	for _, in := range s.Infos() {
		got[in.Name] = in.Class.String()
		if in.Server != "t" || !strings.HasSuffix(in.Name, strings.ReplaceAll(in.Tool, ".", "_")) {
			t.Errorf("info %+v: server and tool do not make the name", in)
		}
	}
	for name, class := range want {
		if got[name] != class {
			t.Errorf("%s: class %q, want %q", name, got[name], class)
		}
	}
	for _, tl := range s.Tools() {
		in := got[tl.Name()]
		if tl.Idempotent() != !strings.HasPrefix(in, "side effect") || tl.RequiresApproval() != strings.HasSuffix(in, "approval") {
			t.Errorf("%s: idempotent %v, approval %v, but class %q", tl.Name(), tl.Idempotent(), tl.RequiresApproval(), in)
		}
	}
	skipped := map[string]string{}
	for _, sk := range s.Skipped() {
		skipped[sk.Tool] = sk.Reason
	}
	if r := skipped["badtype"]; !strings.Contains(r, `type is "string", not "object"`) {
		t.Errorf("badtype skipped for %q", r)
	}
	if r := skipped["badprops"]; !strings.Contains(r, "not a valid JSON Schema") {
		t.Errorf("badprops skipped for %q", r)
	}
	if len(skipped) != 2 {
		t.Errorf("skipped %v, want badtype and badprops", skipped)
	}
	if impl := s.Implementation(); impl == nil || impl.Name != "cairn-mcptest" {
		t.Errorf("implementation %+v", impl)
	}
}

func TestClassify(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		name string
		a    *sdk.ToolAnnotations
		want string
	}{
		{"none", nil, "side effect, approval"},
		{"read-only", &sdk.ToolAnnotations{ReadOnlyHint: true}, "read-only"},
		{"read-only wins over destructive", &sdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &yes}, "read-only"},
		{"idempotent, destructive unset", &sdk.ToolAnnotations{IdempotentHint: true}, "idempotent, approval"},
		{"idempotent, not destructive", &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: &no}, "idempotent"},
		{"additive", &sdk.ToolAnnotations{DestructiveHint: &no}, "side effect"},
		{"destructive", &sdk.ToolAnnotations{DestructiveHint: &yes}, "side effect, approval"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := mcp.Classify(c.a).String(); got != c.want {
				t.Errorf("class %q, want %q", got, c.want)
			}
		})
	}
}

func TestPolicy_Pins(t *testing.T) {
	yes, no := true, false
	s := startTest(t, mcp.Config{PolicySource: "config", Policy: mcp.Policy{
		Approval: &no,
		Tools: map[string]mcp.ToolPolicy{
			"look":    {Idempotent: &no},
			"write":   {Idempotent: &yes, Approval: &yes},
			"destroy": {Disabled: true},
			"wirte":   {Approval: &yes},
		},
	}})
	if got := s.Unmatched(); len(got) != 1 || got[0] != "wirte" {
		t.Errorf("unmatched %q, want the misspelt wirte", got)
	}
	got := map[string]mcp.Class{}
	for _, in := range s.Infos() {
		got[in.Tool] = in.Class
	}
	if c := got["look"]; c.Idempotent || c.Approval || !strings.Contains(c.Why, "config pins idempotent (tool), approval (server)") {
		t.Errorf("look: %+v", c)
	}
	if c := got["write"]; !c.Idempotent || !c.Approval {
		t.Errorf("write: %+v", c)
	}
	if c := got["plain"]; c.Approval || c.Idempotent {
		t.Errorf("plain (no annotations, server pins no approval): %+v", c)
	}
	if _, ok := got["destroy"]; ok {
		t.Error("destroy is disabled but listed")
	}
	for _, sk := range s.Skipped() {
		if sk.Tool == "destroy" {
			t.Errorf("a tool the policy hides is reported as skipped: %+v", sk)
		}
	}
	if tl := tool(t, s, "t_write"); !tl.Idempotent() || !tl.RequiresApproval() {
		t.Errorf("t_write tool: idempotent %v approval %v", tl.Idempotent(), tl.RequiresApproval())
	}
}

func TestCall_Results(t *testing.T) {
	blobs := t.TempDir()
	s := startTest(t, mcp.Config{Blobs: mcp.BlobDir(blobs), MaxOutput: 1000})
	out, err := call(t, tool(t, s, "t_lookup"), `{"key":"eur"}`)
	if err != nil || out != "the value of eur\nstructured content: {\"key\":\"eur\",\"value\":\"EUR\"}" {
		t.Errorf("lookup: %q, %v", out, err)
	}
	_, err = call(t, tool(t, s, "t_fail"), `{}`)
	if err == nil || err.Error() != "no such key" {
		t.Errorf("fail (isError): %v, want the tool's text as an error result", err)
	}
	_, err = call(t, tool(t, s, "t_refuse"), `{}`)
	if err == nil || !strings.Contains(err.Error(), "refused the call of refuse: refused on purpose") {
		t.Errorf("refuse (MCP error): %v", err)
	}
	_, err = call(t, tool(t, s, "t_refuse"), `{"bytes":5000}`)
	if err == nil || !strings.HasPrefix(err.Error(), "MCP server t refused the call of refuse: rrr") || len(err.Error()) > 1100 ||
		!strings.HasSuffix(err.Error(), "the first 1000 are shown]") {
		t.Errorf("refuse with 5000 bytes (an MCP error past MaxOutput): %d bytes ending %q", len(err.Error()), err.Error()[max(0, len(err.Error())-80):])
	}
	_, err = call(t, tool(t, s, "t_lookup"), `"not an object"`)
	if ae, ok := errors.AsType[*agent.ArgumentError](err); !ok {
		t.Errorf("arguments that are not an object: %v, want an ArgumentError", err)
	} else if ae.Msg == "" {
		t.Error("empty argument error")
	}
	out, err = call(t, tool(t, s, "t_image"), `{"bytes":300000}`)
	if err != nil || !strings.HasPrefix(out, "a picture\n[image image/png, 300000 bytes, sha256:") || len(out) > 400 {
		t.Fatalf("image: %q, %v", out, err)
	}
	_, ref, _ := strings.Cut(out, "kept at ")
	data, err := os.ReadFile(strings.TrimSuffix(ref, "]"))
	if err != nil || len(data) != 300000 || data[299999] != byte(299999%256) {
		t.Errorf("blob file %s: %d bytes, %v", ref, len(data), err)
	}
	out, err = call(t, tool(t, s, "t_huge"), `{"bytes":5000000}`)
	if err != nil || len(out) > 1100 || !strings.HasSuffix(out, "[cut: the result has 5000000 bytes; the first 1000 are shown]") {
		t.Errorf("huge: %d bytes ending %q, %v", len(out), out[max(0, len(out)-80):], err)
	}
}

// TestCall_HugerThanTransport: a result past the SDK's 16 MiB line limit
// breaks the connection; the call is an error result and the next call
// restarts the server.
func TestCall_HugerThanTransport(t *testing.T) {
	s := startTest(t, mcp.Config{})
	_, err := call(t, tool(t, s, "t_huge"), `{"bytes":20000000}`)
	if err == nil || !strings.Contains(err.Error(), "stopped answering during the call of huge") {
		t.Fatalf("huge past the line limit: %v", err)
	}
	answersStartedAgain(t, s, "a")
}

// TestCall_DiesMidCall: the server exits during a call: the call is an
// error result saying its outcome is unknown, and the next call starts the
// server again.
func TestCall_DiesMidCall(t *testing.T) {
	log := filepath.Join(t.TempDir(), "calls")
	s := startTest(t, mcp.Config{}, "MCPTEST_LOG="+log)
	_, err := call(t, tool(t, s, "t_die"), `{"note":"once"}`)
	if err == nil || !strings.Contains(err.Error(), "stopped answering during the call of die") ||
		!strings.Contains(err.Error(), "whether it had an effect is unknown") || !strings.Contains(err.Error(), "started again for the next call") {
		t.Fatalf("die: %v", err)
	}
	out, err := call(t, tool(t, s, "t_write"), `{"note":"after"}`)
	if err != nil || out != "write done: after" {
		t.Fatalf("the call after: %q, %v", out, err)
	}
	if got := mcptest.Calls(t, log); strings.Join(got, ",") != "die once,write after" {
		t.Errorf("calls %q", got)
	}
	if s.Restarts() != 1 {
		t.Errorf("restarts = %d, want 1", s.Restarts())
	}
}

// TestCall_Slow: a call past the timeout is cancelled and is an error
// result; a cancelled run's call returns the context's error (the agent
// leaves the call pending); the server is started again after them.
func TestCall_Slow(t *testing.T) {
	// Only slow is bounded so tightly: the calls that must answer have
	// the default bound, which no load makes them reach.
	s := startTest(t, mcp.Config{Policy: mcp.Policy{Tools: map[string]mcp.ToolPolicy{"slow": {Timeout: 100 * time.Millisecond}}}})
	_, err := call(t, tool(t, s, "t_slow"), `{"ms":0}`)
	if err == nil || !strings.Contains(err.Error(), "slow did not answer within 100ms and was cancelled") {
		t.Errorf("slow: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := tool(t, s, "t_slow").Call(ctx, json.RawMessage(`{"ms":0}`))
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
	// Each call cut off retires its session (TestCall_RestartAfterTimeout):
	// the next call starts the server again.
	out, err := call(t, tool(t, s, "t_lookup"), `{"key":"b"}`)
	if err != nil || !strings.HasPrefix(out, "the value of b") || s.Restarts() == 0 {
		t.Errorf("after the slow calls: %q, %v, restarts %d", out, err, s.Restarts())
	}
}

// TestTools_OwnSession: a session the caller made and owns.
func TestTools_OwnSession(t *testing.T) {
	ct, st := sdk.NewInMemoryTransports()
	ss, err := mcptest.NewServer().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := mcp.Tools(t.Context(), cs, mcp.Config{Name: "own"})
	if err != nil {
		t.Fatal(err)
	}
	var lookup *agent.Tool
	for _, tl := range tools {
		if tl.Name() == "own_lookup" {
			lookup = tl
		}
	}
	if lookup == nil {
		t.Fatalf("no own_lookup among %d tools", len(tools))
	}
	if out, err := call(t, lookup, `{"key":"c"}`); err != nil || !strings.HasPrefix(out, "the value of c") {
		t.Errorf("lookup: %q, %v", out, err)
	}
	cs.Close()
	if _, err := call(t, lookup, `{"key":"c"}`); err == nil {
		t.Error("a call after the caller closed its session succeeded")
	}
	if _, err := mcp.Tools(t.Context(), cs, mcp.Config{Name: "bad_name"}); err == nil {
		t.Error("a server name with '_' was accepted")
	}
}

// TestHTTP: a streamable-HTTP server that wants a token in a header.
func TestHTTP(t *testing.T) {
	url := mcptest.ServeHTTP(t, "secret")
	s, err := mcp.Connect(t.Context(), mcp.Config{Name: "web", Transport: mcp.HTTP(url, map[string]string{"Authorization": "Bearer secret"})})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if out, err := call(t, tool(t, s, "web_lookup"), `{"key":"d"}`); err != nil || !strings.HasPrefix(out, "the value of d") {
		t.Errorf("lookup over HTTP: %q, %v", out, err)
	}
	_, err = mcp.Connect(t.Context(), mcp.Config{Name: "web", Transport: mcp.HTTP(url, nil)})
	if err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("without the token: %v", err)
	}
}

func TestConnect_Fails(t *testing.T) {
	_, err := mcp.Connect(t.Context(), mcp.Config{Name: "gone", Transport: mcp.Command("/nonexistent/mcp-server", nil, nil, "")})
	if err == nil || !strings.Contains(err.Error(), "MCP server gone: start:") {
		t.Errorf("a missing command: %v", err)
	}
	_, err = mcp.Connect(t.Context(), mcp.Config{Name: "sh", Transport: mcp.Command("sh", []string{"-c", "echo cannot open the database >&2; exit 3"}, nil, "")})
	if err == nil || !strings.Contains(err.Error(), "its error output ends with: cannot open the database") {
		t.Errorf("a command that exits: %v", err)
	}
}

// hangServer starts the test server with its call log, its process IDs
// and its gate in the test's folder, the calls of hang bounded by
// hangTimeout. A call of lookup, which answers at once, is bounded by 30s,
// which no load of the machine makes it reach, so that a server left stuck
// fails the test in 30s rather than the default 2 minutes.
func hangServer(t *testing.T, hangTimeout time.Duration) (s *mcp.Server, log, pids, gate string) {
	dir := t.TempDir()
	log, pids, gate = filepath.Join(dir, "calls"), filepath.Join(dir, "pids"), filepath.Join(dir, "gate")
	s = startTest(t, mcp.Config{Policy: mcp.Policy{Tools: map[string]mcp.ToolPolicy{"hang": {Timeout: hangTimeout}, "lookup": {Timeout: 30 * time.Second}}}},
		"MCPTEST_LOG="+log, "MCPTEST_PIDS="+pids, "MCPTEST_GATE="+gate)
	return s, log, pids, gate
}

// TestCall_RestartAfterTimeout: a server stuck in a call, deaf to its
// cancellation, answers no later call; the call past its timeout is an
// error result, the stuck process is ended, and the next call runs on
// the server started again.
func TestCall_RestartAfterTimeout(t *testing.T) {
	s, log, pids, _ := hangServer(t, 200*time.Millisecond)
	_, err := call(t, tool(t, s, "t_hang"), `{"note":"stuck"}`)
	if err == nil || !strings.Contains(err.Error(), "hang did not answer within 200ms and was cancelled; the server is started again for the next call") {
		t.Fatalf("the stuck call: %v", err)
	}
	answersStartedAgain(t, s, "after")
	if got := mcptest.Calls(t, log); strings.Join(got, "|") != "hang stuck" {
		t.Errorf("calls %q", got)
	}
	started := mcptest.PIDs(t, pids)
	if len(started) != 2 {
		t.Fatalf("processes started: %v, want 2", started)
	}
	mcptest.WaitGone(t, started[0], "the stuck server")
}

// TestCall_RestartNotInTimeout: the start of the server again does not
// count in the timeout of the call that waits for it: a call bounded by 2s
// answers after a start of 4s.
func TestCall_RestartNotInTimeout(t *testing.T) {
	dir := t.TempDir()
	s := startTest(t, mcp.Config{Policy: mcp.Policy{Tools: map[string]mcp.ToolPolicy{
		"hang": {Timeout: 200 * time.Millisecond}, "lookup": {Timeout: 2 * time.Second}}}},
		"MCPTEST_LOG="+filepath.Join(dir, "calls"), "MCPTEST_PIDS="+filepath.Join(dir, "pids"), "MCPTEST_RESTART_DELAY=4s")
	if _, err := call(t, tool(t, s, "t_hang"), `{}`); err == nil || !strings.Contains(err.Error(), "did not answer within") {
		t.Fatalf("the stuck call: %v", err)
	}
	answersStartedAgain(t, s, "late")
}

// TestCall_RestartAfterCancel: a call cancelled by its caller on a server
// deaf to the cancellation: the next call runs on the server started
// again, and the stuck process is ended.
func TestCall_RestartAfterCancel(t *testing.T) {
	s, log, pids, _ := hangServer(t, 0)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := tool(t, s, "t_hang").Call(ctx, json.RawMessage(`{"note":"stuck"}`))
		done <- err
	}()
	mcptest.WaitCalls(t, log, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled call: %v, want context.Canceled", err)
	}
	answersStartedAgain(t, s, "after")
	mcptest.WaitGone(t, mcptest.WaitPIDs(t, pids, 2)[0], "the stuck server")
}

// TestCall_RestartSparesCallsInFlight: the session of a call past its
// timeout is retired, not closed under the other calls in flight on it:
// they finish with their results, and then its process ends.
func TestCall_RestartSparesCallsInFlight(t *testing.T) {
	s, log, pids, gate := hangServer(t, 200*time.Millisecond)
	done := make(chan error, 1)
	var out string
	go func() {
		var err error
		out, err = call(t, tool(t, s, "t_gate"), `{"note":"open"}`)
		done <- err
	}()
	mcptest.WaitCalls(t, log, 1) // the gate's call is in the server
	if _, err := call(t, tool(t, s, "t_hang"), `{"note":"stuck"}`); err == nil || !strings.Contains(err.Error(), "did not answer within") {
		t.Fatalf("the stuck call: %v", err)
	}
	if out, err := call(t, tool(t, s, "t_lookup"), `{"key":"meanwhile"}`); err != nil || !strings.HasPrefix(out, "the value of meanwhile") {
		t.Fatalf("a call while the gate waits: %q, %v", out, err)
	}
	first := mcptest.WaitPIDs(t, pids, 2)[0]
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || out != "gate done: open" {
		t.Fatalf("the call in flight on the retired session: %q, %v", out, err)
	}
	mcptest.WaitGone(t, first, "the retired server")
}

// TestClose_EndsTheProcessGroup: a server started through a shell (as npx
// starts node), stuck in a call and deaf to the end of its input: Close
// ends it, not only the shell.
func TestClose_EndsTheProcessGroup(t *testing.T) {
	dir := t.TempDir()
	log, pids := filepath.Join(dir, "calls"), filepath.Join(dir, "pids")
	s, err := mcp.Connect(t.Context(), mcp.Config{Name: "t", Transport: mcp.Command("sh", []string{"-c", `"$0"; exit $?`, mcptest.Binary(t)},
		[]string{"MCPTEST_LOG=" + log, "MCPTEST_PIDS=" + pids}, "")})
	if err != nil {
		t.Fatal(err)
	}
	server := mcptest.WaitPIDs(t, pids, 1)[0]
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tool(t, s, "t_hang").Call(ctx, json.RawMessage(`{"note":"stuck"}`))
	}()
	mcptest.WaitCalls(t, log, 1)
	s.Close()
	cancel()
	<-done
	mcptest.WaitGone(t, server, "the server started by the shell")
}
