package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tests of `cairn mcp` with real MCP clients: the Go SDK's over the
// cairn binary's stdio and streamable HTTP, and the TypeScript SDK's from
// npm (CAIRN_TEST_MCP_SERVERS).

// wantTools are the tools of cairn mcp and their annotations.
var wantTools = map[string]struct{ readOnly, destructive, idempotent bool }{
	"memory_save":   {false, true, true},
	"memory_search": {true, false, true},
	"memory_get":    {true, false, true},
	"memory_list":   {true, false, true},
	"memory_delete": {false, true, true},
	"sessions_list": {true, false, true},
	"sessions_show": {true, false, true},
}

// callJSON calls a tool and returns its structured result decoded into
// out; it fails the test on an error result.
func callJSON(t *testing.T, ctx context.Context, cs *sdk.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: error result: %s", name, resultText(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v: %s", name, err, b)
	}
}

func resultText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

type foundItem struct {
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
	Value     any    `json:"value"`
	Text      string `json:"text"`
}

// exerciseMCP runs the conversation every transport is checked with:
// tools/list with annotations and schemas, save, search, get, list,
// a refused argument, the session tools, delete.
func exerciseMCP(t *testing.T, ctx context.Context, cs *sdk.ClientSession) {
	t.Helper()
	if r := cs.InitializeResult(); r == nil || r.ServerInfo.Name != "cairn" {
		t.Fatalf("initialize: %+v", r)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, tool := range tools.Tools {
		w, ok := wantTools[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %s", tool.Name)
			continue
		}
		seen[tool.Name] = true
		a := tool.Annotations
		if a == nil {
			t.Errorf("%s: no annotations", tool.Name)
			continue
		}
		destructive := a.DestructiveHint == nil || *a.DestructiveHint
		if w.readOnly {
			destructive = false
		}
		if a.ReadOnlyHint != w.readOnly || destructive != w.destructive || a.IdempotentHint != w.idempotent {
			t.Errorf("%s: annotations %+v, want readOnly %v destructive %v idempotent %v", tool.Name, a, w.readOnly, w.destructive, w.idempotent)
		}
		if a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s: openWorldHint should be false", tool.Name)
		}
		schema, _ := json.Marshal(tool.InputSchema)
		if !strings.Contains(string(schema), `"type":"object"`) {
			t.Errorf("%s: input schema %s", tool.Name, schema)
		}
	}
	if len(seen) != len(wantTools) {
		t.Errorf("tools: %v, want %d", seen, len(wantTools))
	}

	var saved struct{ Item foundItem }
	callJSON(t, ctx, cs, "memory_save", map[string]any{
		"namespace": "users/ada", "key": "favorite-food", "value": map[string]any{"food": "pizza"},
		"text": "Ada loves pizza with teal-otter-17 sauce", "labels": map[string]string{"kind": "preference"},
	}, &saved)
	if saved.Item.Key != "favorite-food" {
		t.Fatalf("save: %+v", saved)
	}
	callJSON(t, ctx, cs, "memory_save", map[string]any{"namespace": "users/adam", "key": "food", "text": "Adam loves pizza too"}, &saved)

	var found struct{ Results []struct{ Item foundItem } }
	callJSON(t, ctx, cs, "memory_search", map[string]any{"query": "teal-otter-17", "namespace": "users/ada"}, &found)
	if len(found.Results) != 1 || found.Results[0].Item.Key != "favorite-food" {
		t.Fatalf("search: %+v", found)
	}
	callJSON(t, ctx, cs, "memory_search", map[string]any{"query": "pizza", "namespace": "users/ada"}, &found)
	if len(found.Results) != 1 {
		t.Fatalf("search under users/ada found users/adam too: %+v", found)
	}

	var got struct{ Item foundItem }
	callJSON(t, ctx, cs, "memory_get", map[string]any{"namespace": "users/ada", "key": "favorite-food"}, &got)
	if v, _ := got.Item.Value.(map[string]any); v["food"] != "pizza" {
		t.Fatalf("get: %+v", got)
	}

	var listed struct{ Namespaces []string }
	callJSON(t, ctx, cs, "memory_list", map[string]any{"namespaces_only": true}, &listed)
	if strings.Join(listed.Namespaces, " ") != "users/ada users/adam" {
		t.Fatalf("list namespaces: %+v", listed)
	}

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "memory_save", Arguments: map[string]any{"namespace": "users//ada", "key": "k", "text": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(resultText(res), "invalid namespace") {
		t.Fatalf("a bad namespace: %+v %q", res, resultText(res))
	}

	var sessions struct {
		Sessions []struct{ ID string }
	}
	callJSON(t, ctx, cs, "sessions_list", map[string]any{}, &sessions)
	if len(sessions.Sessions) != 1 || sessions.Sessions[0].ID != "chat-1" {
		t.Fatalf("sessions_list: %+v", sessions)
	}
	var shown struct {
		Transcript []struct{ Who, Text string }
	}
	callJSON(t, ctx, cs, "sessions_show", map[string]any{"id": "chat-1"}, &shown)
	var user bool
	for _, l := range shown.Transcript {
		user = user || (l.Who == "user" && strings.Contains(l.Text, "hello there"))
	}
	if !user {
		t.Fatalf("sessions_show: %+v", shown)
	}

	var deleted struct{ Deleted int }
	callJSON(t, ctx, cs, "memory_delete", map[string]any{"namespace": "users/adam"}, &deleted)
	if deleted.Deleted != 1 {
		t.Fatalf("delete: %+v", deleted)
	}
}

// TestMCPServe_Stdio: the Go SDK's client over a real `cairn mcp`
// process: initialize, tools/list, and tools/call of every tool; what it
// saved is in the store for `cairn memory`.
func TestMCPServe_Stdio(t *testing.T) {
	c := newCLIEnv(t)
	c.must("run", "--session", "chat-1", "hello there")
	ctx := t.Context()
	client := sdk.NewClient(&sdk.Implementation{Name: "cairn-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: c.command("mcp")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	exerciseMCP(t, ctx, cs)
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	if out := c.must("memory", "get", "users/ada", "favorite-food"); !strings.Contains(out, `{"food":"pizza"}`) {
		t.Fatalf("cairn memory get: %s", out)
	}
	if out, _, code := c.run("memory", "get", "users/adam", "food"); code != 1 {
		t.Fatalf("deleted over MCP, still there: %s", out)
	}

	// --read-only leaves out the tools that write.
	cs, err = client.Connect(ctx, &sdk.CommandTransport{Command: c.command("mcp", "--read-only")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if !tool.Annotations.ReadOnlyHint {
			t.Errorf("--read-only serves %s", tool.Name)
		}
	}
	if len(tools.Tools) != 5 {
		t.Errorf("--read-only: %d tools, want 5", len(tools.Tools))
	}
}

// bearerTransport adds a token to every request.
type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPServe_HTTP: `cairn mcp --http` serves streamable HTTP to the Go
// SDK's client with the token it printed, and refuses a client without
// one or with a wrong one; a weak token in a token file is refused as
// cairn serve refuses it.
func TestMCPServe_HTTP(t *testing.T) {
	c := newCLIEnv(t)
	c.must("run", "--session", "chat-1", "hello there")
	cmd := c.command("--json", "mcp", "--http", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut strings.Builder
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	var started struct{ URL, Token string }
	line, err := bufio.NewReader(stdout).ReadString('}')
	if err != nil {
		t.Fatalf("read the address: %v (stderr: %s)", err, errOut.String())
	}
	if err := json.Unmarshal([]byte(line), &started); err != nil || started.Token == "" || !strings.HasSuffix(started.URL, "/mcp") {
		t.Fatalf("start: %v %q", err, line)
	}
	ctx := t.Context()
	client := sdk.NewClient(&sdk.Implementation{Name: "cairn-test", Version: "1"}, nil)
	for _, tok := range []string{"", "wrong-token-of-enough-length"} {
		tr := &sdk.StreamableClientTransport{Endpoint: started.URL, MaxRetries: -1, HTTPClient: &http.Client{Transport: bearerTransport(tok)}}
		if cs, err := client.Connect(ctx, tr, nil); err == nil {
			cs.Close()
			t.Fatalf("token %q: connected", tok)
		}
	}
	tr := &sdk.StreamableClientTransport{Endpoint: started.URL, HTTPClient: &http.Client{Transport: bearerTransport(started.Token)}}
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	exerciseMCP(t, ctx, cs)

	weak := c.writeFile("tokens", "aaaaaaaaaaaaaaaaaaaaaaaa\n")
	_, errText, code := c.run("mcp", "--http", "127.0.0.1:0", "--token-file", weak)
	if code != 1 || !strings.Contains(errText, "tokens:1: the token") {
		t.Fatalf("weak token: exit %d, %s", code, errText)
	}
	_, errText, code = c.run("mcp", "--token-file", weak)
	if code != 2 || !strings.Contains(errText, "--token-file applies to --http only") {
		t.Fatalf("--token-file without --http: exit %d, %s", code, errText)
	}
}

// TestMCPServe_TypeScriptClient: the TypeScript SDK's client (npm
// @modelcontextprotocol/sdk) starts `cairn mcp`, lists its tools, saves a
// memory and finds it (testdata/mcpclient.mjs).
func TestMCPServe_TypeScriptClient(t *testing.T) {
	servers := os.Getenv("CAIRN_TEST_MCP_SERVERS")
	if servers == "" {
		t.Skip("CAIRN_TEST_MCP_SERVERS is not set: it names the folder where .ci/run installs the npm MCP packages")
	}
	sdkDir := filepath.Join(servers, "node_modules", "@modelcontextprotocol", "sdk")
	if _, err := os.Stat(sdkDir); err != nil {
		t.Fatalf("CAIRN_TEST_MCP_SERVERS=%s has no @modelcontextprotocol/sdk: %v", servers, err)
	}
	c := newCLIEnv(t)
	script, err := filepath.Abs(filepath.Join("testdata", "mcpclient.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	node := exec.Command("node", script, sdkDir, c.bin, "mcp")
	node.Dir, node.Env = c.dir, c.env
	out, err := node.CombinedOutput()
	if err != nil {
		t.Fatalf("node client: %v\n%s", err, out)
	}
	want := []string{
		"server cairn",
		"tools memory_delete memory_get memory_list memory_save memory_search sessions_list sessions_show",
		"memory_search readOnly=true",
		"memory_save readOnly=false destructive=true idempotent=true",
		"saved users/ada/favorite-food",
		"found users/ada/favorite-food",
		"bad namespace: error invalid namespace",
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("node client output lacks %q:\n%s", w, out)
		}
	}
}

// TestMemoryDelete_PTY: erasing a whole namespace at a terminal asks
// first; "n" keeps it, "y" erases it and those under it, not a sibling.
func TestMemoryDelete_PTY(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	c := newCLIEnv(t)
	c.must("memory", "put", "users/ada", "food", "pizza")
	c.must("memory", "put", "users/ada/notes", "n1", "teal otter")
	c.must("memory", "put", "users/adam", "food", "soup")

	no := c.startPTY("memory", "delete", "users/ada")
	no.expect("Erase every memory under users/ada for good? [y/N] ")
	no.send("n\r")
	no.expect("kept users/ada")
	if code := no.wait(); code != 0 {
		t.Fatalf("declined: exit %d\n%s", code, no.output())
	}
	c.must("memory", "get", "users/ada", "food")

	yes := c.startPTY("memory", "delete", "users/ada")
	yes.expect("[y/N] ")
	yes.send("y\r")
	yes.expect("deleted 2 items under users/ada")
	if code := yes.wait(); code != 0 {
		t.Fatalf("confirmed: exit %d\n%s", code, yes.output())
	}
	if _, _, code := c.run("memory", "get", "users/ada/notes", "n1"); code != 1 {
		t.Fatalf("users/ada/notes survived")
	}
	c.must("memory", "get", "users/adam", "food")
}
