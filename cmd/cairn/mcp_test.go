package main

import (
	"encoding/json"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/testing/mcptest"
)

// The tests of MCP servers' tools through the cairn binary: the npm
// reference servers (CAIRN_TEST_MCP_SERVERS, installed by .ci/run) and the
// Go test server of internal/testing/mcptest for the faults.

// toolEvent is the data of a tool.started or tool.result.
type toolEvent struct {
	Kind    string
	Seq     int64
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Output  string `json:"output"`
	IsError bool   `json:"is_error"`
}

// toolEvents returns a session's tool.started and tool.result events by
// call ID, in order.
func (c *cliEnv) toolEvents(id string) map[string][]toolEvent {
	c.t.Helper()
	out := map[string][]toolEvent{}
	for _, e := range c.mustShow(id).Events {
		if e.Kind != "tool.started" && e.Kind != "tool.result" {
			continue
		}
		var te toolEvent
		if err := json.Unmarshal(e.Data, &te); err != nil {
			c.t.Fatal(err)
		}
		te.Kind, te.Seq = e.Kind, e.Seq
		out[te.CallID] = append(out[te.CallID], te)
	}
	return out
}

// kinds returns the kinds of a call's events: "started result", say.
func kinds(evs []toolEvent) string {
	var k []string
	for _, e := range evs {
		k = append(k, strings.TrimPrefix(e.Kind, "tool."))
	}
	return strings.Join(k, " ")
}

// TestMCP_ReferenceServers: `cairn run --model script:…` with a config
// naming server-everything and server-filesystem calls their tools and
// records them: a tool.started exactly for the calls of tools that are not
// idempotent, the destructive write waits for approval, an image is a
// reference to a kept file, structured content is recorded.
func TestMCP_ReferenceServers(t *testing.T) {
	everything := mcptest.Reference(t, "mcp-server-everything")
	filesystem := mcptest.Reference(t, "mcp-server-filesystem")
	c := newCLIEnv(t)
	data := filepath.Join(c.dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	c.writeFile("script.json", `{"steps":[
		{"text":"setting up","tool_calls":[
			{"name":"fs_create_directory","arguments":{"path":"`+data+`/notes"}},
			{"name":"ev_get-sum","arguments":{"a":2,"b":3}},
			{"name":"ev_toggle-simulated-logging","arguments":{}}]},
		{"tool_calls":[{"name":"fs_write_file","arguments":{"path":"`+data+`/notes/a.txt","content":"hello from cairn"}}]},
		{"tool_calls":[
			{"name":"fs_read_text_file","arguments":{"path":"`+data+`/notes/a.txt"}},
			{"name":"ev_get-tiny-image","arguments":{}},
			{"name":"ev_get-structured-content","arguments":{"location":"Chicago"}}]},
		{"text":"all done"}]}`)
	c.writeFile("cairn.toml", `
[model]
provider = "script"
name = "script.json"

[mcp]
blob_dir = "blobs"

[mcp.servers.ev]
command = "`+everything+`"

[mcp.servers.fs]
command = "`+filesystem+`"
args = ["`+data+`"]
`)
	out, stderr, code := c.run("--json", "tools")
	if code != 0 {
		t.Fatalf("cairn tools: exit %d\n%s", code, stderr)
	}
	var listed struct{ Tools []toolRow }
	if err := json.Unmarshal([]byte(out), &listed); err != nil {
		t.Fatal(err)
	}
	classes := map[string]string{}
	for _, r := range listed.Tools {
		classes[r.Name] = r.Class
	}
	for name, want := range map[string]string{
		"fs_read_text_file": "read-only", "fs_write_file": "idempotent, approval", "fs_edit_file": "side effect, approval",
		"fs_create_directory": "idempotent", "ev_echo": "read-only", "ev_toggle-simulated-logging": "side effect",
		"append_file": "side effect", "calc": "idempotent",
	} {
		if classes[name] != want {
			t.Errorf("cairn tools: %s is %q, want %q", name, classes[name], want)
		}
	}

	_, stderr, code = c.run("run", "--session", "ref", "set up my notes")
	if code != 4 || !strings.Contains(stderr, "waiting for approval of: fs_write_file") {
		t.Fatalf("the run before the destructive write: exit %d, want 4 awaiting approval\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(data, "notes", "a.txt")); !os.IsNotExist(err) {
		t.Fatalf("the write ran before its approval: %v", err)
	}
	out, stderr, code = c.run("sessions", "resume", "ref", "--approve", "call_1_0")
	if code != 0 || !strings.Contains(out, "all done") {
		t.Fatalf("resume with the approval: exit %d\n%s%s", code, out, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(data, "notes", "a.txt")); err != nil || string(b) != "hello from cairn" {
		t.Errorf("the file written: %q, %v", b, err)
	}

	evs := c.toolEvents("ref")
	want := map[string]string{
		"call_0_0": "result",         // fs_create_directory: idempotent
		"call_0_1": "result",         // ev_get-sum: read-only
		"call_0_2": "started result", // ev_toggle-simulated-logging: side effect
		"call_1_0": "result",         // fs_write_file: idempotent, approved
		"call_2_0": "result", "call_2_1": "result", "call_2_2": "result",
	}
	for id, k := range want {
		if got := kinds(evs[id]); got != k {
			t.Errorf("%s: events %q, want %q", id, got, k)
		}
	}
	result := func(id string) toolEvent { return evs[id][len(evs[id])-1] }
	if r := result("call_0_1"); r.Name != "ev_get-sum" || r.IsError || r.Output != "The sum of 2 and 3 is 5." {
		t.Errorf("get-sum: %+v", r)
	}
	if r := result("call_2_0"); r.IsError || r.Output != "hello from cairn" {
		t.Errorf("read_text_file: %+v", r)
	}
	img := result("call_2_1")
	_, ref, ok := strings.Cut(img.Output, ", kept at ")
	if !ok || !strings.Contains(img.Output, "[image image/png, ") || !strings.Contains(img.Output, "sha256:") {
		t.Fatalf("tiny image: %q, want a reference to a kept file", img.Output)
	}
	ref, _, _ = strings.Cut(ref, "]")
	if b, err := os.ReadFile(filepath.Join(c.dir, ref)); err != nil || !strings.HasPrefix(string(b), "\x89PNG") {
		t.Errorf("the kept image %s: %d bytes, %v", ref, len(b), err)
	}
	if r := result("call_2_2"); r.IsError || !strings.Contains(r.Output, `"temperature"`) {
		t.Errorf("structured content: %+v", r)
	}

	out, stderr, code = c.run("doctor")
	if code != 0 || !strings.Contains(out, "ev (mcp-servers/everything") || !strings.Contains(out, "fs_write_file (idempotent, approval)") {
		t.Errorf("doctor: exit %d\n%s%s", code, out, stderr)
	}
}

// mcpConfig writes a config naming the test server as "t" with the call
// log and the tool that blocks, and extra lines in its table.
func mcpConfig(c *cliEnv, name, block, extra string) string {
	return c.writeFile(name, `
[model]
provider = "script"
name = "script.json"

[mcp.servers.t]
command = "`+mcptest.Binary(c.t)+`"
env = { MCPTEST_LOG = "`+filepath.Join(c.dir, "calls")+`", MCPTEST_BLOCK = "`+block+`" }
`+extra)
}

// killDuring runs cairn with args until the test server logged n calls,
// then kills it with SIGKILL.
func killDuring(c *cliEnv, n int, args ...string) {
	c.t.Helper()
	cmd, _ := c.start(args...)
	mcptest.WaitCalls(c.t, filepath.Join(c.dir, "calls"), n)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatal(err)
	}
	cmd.Wait()
}

// resumeAfterKill resumes session id, whose process killDuring killed,
// under config: the run must finish ("all done"). It returns the events of
// the call the process was killed in (call_0_0).
func (c *cliEnv) resumeAfterKill(config, id string) []toolEvent {
	c.t.Helper()
	out, stderr, code := c.run("--config", config, "sessions", "resume", id)
	if code != 0 || !strings.Contains(out, "all done") {
		c.t.Fatalf("resume after the kill: exit %d\n%s%s", code, out, stderr)
	}
	return c.toolEvents(id)["call_0_0"]
}

// TestMCP_KillDuringDestructiveCall: a destructive MCP tool asks for
// approval; a resume under a config that pins the tool as needing none
// still waits (the need is recorded). Approved, the call starts and the
// process is killed during it: the resume — under a config that now pins
// the tool as idempotent — answers "outcome unknown" (the recorded start
// decides), and the tool ran once.
func TestMCP_KillDuringDestructiveCall(t *testing.T) {
	c := newCLIEnv(t)
	c.writeFile("script.json", `{"steps":[
		{"tool_calls":[{"name":"t_destroy","arguments":{"note":"the-database"}}]},
		{"text":"all done"}]}`)
	strict := mcpConfig(c, "strict.toml", "destroy", "")
	lax := mcpConfig(c, "lax.toml", "destroy", "[mcp.servers.t.tools.destroy]\napproval = false\nidempotent = true\n")
	calls := filepath.Join(c.dir, "calls")

	_, stderr, code := c.run("--config", strict, "run", "--session", "d", "clean up")
	if code != 4 || !strings.Contains(stderr, "waiting for approval of: t_destroy") {
		t.Fatalf("run: exit %d, want 4 awaiting approval\n%s", code, stderr)
	}
	_, stderr, code = c.run("--config", lax, "sessions", "resume", "d")
	if code != 4 || !strings.Contains(stderr, "waiting for approval of: t_destroy") {
		t.Fatalf("resume under a config that needs no approval: exit %d, want 4 still awaiting\n%s", code, stderr)
	}
	if got := mcptest.Calls(t, calls); len(got) != 0 {
		t.Fatalf("the tool ran without a decision: %q", got)
	}

	killDuring(c, 1, "--config", strict, "sessions", "resume", "d", "--approve", "call_0_0")
	if got := kinds(c.toolEvents("d")["call_0_0"]); got != "started" {
		t.Fatalf("after the kill: events %q, want the start alone", got)
	}

	evs := c.resumeAfterKill(lax, "d")
	if kinds(evs) != "started result" || !evs[1].IsError || evs[1].Output != agent.OutcomeUnknown {
		t.Errorf("the killed call: %+v, want its start and the result %q", evs, agent.OutcomeUnknown)
	}
	if got := mcptest.Calls(t, calls); strings.Join(got, "|") != "destroy the-database" {
		t.Errorf("the tool ran %d times (%q), want once", len(got), got)
	}
}

// TestMCP_KillDuringReadOnlyCall: a read-only MCP tool records no start;
// killed during it, the resume — under a config that now pins the tool as
// not idempotent — runs it again (the recorded rule allowed it), and the
// run completes.
func TestMCP_KillDuringReadOnlyCall(t *testing.T) {
	c := newCLIEnv(t)
	c.writeFile("script.json", `{"steps":[
		{"tool_calls":[{"name":"t_look","arguments":{"note":"around"}}]},
		{"text":"all done"}]}`)
	first := mcpConfig(c, "first.toml", "look", "")
	pinned := mcpConfig(c, "pinned.toml", "look", "[mcp.servers.t.tools.look]\nidempotent = false\n")

	killDuring(c, 1, "--config", first, "run", "--session", "r", "look around")
	if got := kinds(c.toolEvents("r")["call_0_0"]); got != "" {
		t.Fatalf("after the kill: events %q, want none (a read-only call records no start)", got)
	}
	evs := c.resumeAfterKill(pinned, "r")
	if kinds(evs) != "started result" || evs[1].IsError || evs[1].Output != "look done: around" {
		t.Errorf("the call run again: %+v", evs)
	}
	if got := mcptest.Calls(t, filepath.Join(c.dir, "calls")); strings.Join(got, "|") != "look around|look around" {
		t.Errorf("the tool's calls: %q, want two", got)
	}
}

// TestMCP_Faults: through the binary, a server that dies during a call, a
// call past its timeout, a huge result and tools with bad schemas.
func TestMCP_Faults(t *testing.T) {
	c := newCLIEnv(t)
	c.writeFile("script.json", `{"steps":[
		{"tool_calls":[{"name":"t_die","arguments":{"note":"now"}}]},
		{"tool_calls":[{"name":"t_huge","arguments":{"bytes":3000000}},{"name":"t_slow","arguments":{}}]},
		{"tool_calls":[{"name":"t_lookup","arguments":{"key":"after"}},{"name":"t_fail","arguments":{}},{"name":"t_refuse","arguments":{}}]},
		{"text":"all done"}]}`)
	// Only slow, which is meant to time out, has a bound of a second: the
	// calls meant to answer (the restarts, the huge result under -race)
	// have the default bound, which no load of the machine makes them reach.
	mcpConfig(c, "cairn.toml", "", "max_output_bytes = 2000\n[mcp.servers.t.tools.slow]\ntimeout_seconds = 1\n[mcp.servers.t.tools.wirte]\napproval = true\n")
	out, stderr, code := c.run("run", "--session", "f", "break things")
	if code != 0 || !strings.Contains(out, "all done") {
		t.Fatalf("run: exit %d\n%s%s", code, out, stderr)
	}
	for _, tool := range []string{"badtype", "badprops"} {
		if !strings.Contains(stderr, `MCP server t: tool "`+tool+`" is left out: input schema:`) {
			t.Errorf("no warning about %s:\n%s", tool, stderr)
		}
	}
	if !strings.Contains(stderr, "[mcp.servers.t.tools.wirte] names a tool that MCP server t does not offer") {
		t.Errorf("no warning about the misspelt tool:\n%s", stderr)
	}
	if out, _, code := c.run("doctor"); code != 1 || !strings.Contains(out, "FAIL mcp      [mcp.servers.t.tools.wirte] names a tool") {
		t.Errorf("doctor with a misspelt tool: exit %d\n%s", code, out)
	}
	evs := c.toolEvents("f")
	check := func(id, kinds0 string, isError bool, has string) {
		t.Helper()
		e := evs[id]
		if kinds(e) != kinds0 || e[len(e)-1].IsError != isError || !strings.Contains(e[len(e)-1].Output, has) {
			t.Errorf("%s: %+v\nwant events %q, error %v, output containing %q", id, e, kinds0, isError, has)
		}
	}
	check("call_0_0", "started result", true, "MCP server t stopped answering during the call of die")
	check("call_1_0", "result", false, "[cut: the result has 3000000 bytes; the first 2000 are shown]")
	check("call_1_1", "result", true, "slow did not answer within 1s and was cancelled")
	check("call_2_0", "result", false, "the value of after")
	check("call_2_1", "result", true, "no such key")
	check("call_2_2", "result", true, "refused the call of refuse: refused on purpose")
	if got := mcptest.Calls(t, filepath.Join(c.dir, "calls")); strings.Join(got, "|") != "die now" {
		t.Errorf("calls %q", got)
	}
}

// TestMCP_HTTPAndErrors: a streamable-HTTP server whose token comes from
// the environment; a variable that is not set and a server that does not
// start are errors naming them, and doctor fails with a fix.
func TestMCP_HTTPAndErrors(t *testing.T) {
	c := newCLIEnv(t)
	url := mcptest.ServeHTTP(t, "s3cret")
	c.writeFile("cairn.toml", `
[mcp.servers.web]
url = "`+url+`"
headers = { Authorization = "Bearer ${WEB_TOKEN}" }
`)
	_, stderr, code := c.run("tools")
	if code != 1 || !strings.Contains(stderr, "mcp.servers.web.headers.Authorization: the environment variable WEB_TOKEN is not set") {
		t.Errorf("tools without the variable: exit %d\n%s", code, stderr)
	}
	c.env = append(c.env, "WEB_TOKEN=s3cret")
	out, stderr, code := c.run("tools")
	if code != 0 || !strings.Contains(out, "web_lookup") {
		t.Errorf("tools over HTTP: exit %d\n%s%s", code, out, stderr)
	}

	c.writeFile("cairn.toml", `
[mcp.servers.gone]
command = "`+filepath.Join(c.dir, "no-such-server")+`"
`)
	_, stderr, code = c.run("run", "hello")
	if code != 1 || !strings.Contains(stderr, "MCP server gone: start:") || !strings.Contains(stderr, "cairn doctor") {
		t.Errorf("run with a server that does not start: exit %d\n%s", code, stderr)
	}
	out, _, code = c.run("doctor")
	if code != 1 || !strings.Contains(out, "FAIL mcp ") || !strings.Contains(out, "set enabled = false there") {
		t.Errorf("doctor with a server that does not start: exit %d\n%s", code, out)
	}
}

// TestMCP_FingerprintWarns: the MCP servers' tools are part of the agent's
// fingerprint: a session continued with another set of servers warns.
func TestMCP_FingerprintWarns(t *testing.T) {
	c := newCLIEnv(t)
	if _, stderr, code := c.run("run", "--session", "fp", "hello"); code != 0 {
		t.Fatalf("run: %s", stderr)
	}
	c.writeFile("cairn.toml", "[mcp.servers.t]\ncommand = \""+mcptest.Binary(t)+"\"\n")
	_, stderr, code := c.run("sessions", "resume", "fp", "again")
	if code != 0 || !strings.Contains(stderr, "session fp was last run by a different agent (other tools)") {
		t.Errorf("resume with an MCP server added: exit %d, want a warning about other tools\n%s", code, stderr)
	}
	_, stderr, code = c.run("sessions", "resume", "fp", "once more")
	if code != 0 || strings.Contains(stderr, "different agent") {
		t.Errorf("resume with the same servers: exit %d, want no warning\n%s", code, stderr)
	}
}

// TestMCP_ServersEndWithCairn: cairn is killed (SIGKILL) while two MCP
// servers are stuck in calls, deaf to cancellation and to the end of their
// input: one started directly, one through a shell (as npx starts node).
// Both servers end: they do not outlive the process that started them,
// also when cairn was started with SIGHUP ignored (nohup cairn worker &),
// which its children inherit.
func TestMCP_ServersEndWithCairn(t *testing.T) {
	t.Run("plain", func(t *testing.T) { serversEndWithCairn(t, false) })
	t.Run("nohup", func(t *testing.T) { serversEndWithCairn(t, true) })
}

func serversEndWithCairn(t *testing.T, nohup bool) {
	c := newCLIEnv(t)
	c.writeFile("script.json", `{"steps":[
		{"tool_calls":[{"name":"t_hang","arguments":{"note":"direct"}},{"name":"sh_hang","arguments":{"note":"shell"}}]},
		{"text":"all done"}]}`)
	bin := mcptest.Binary(t)
	server := func(name, command, args, tag string) string {
		return `
[mcp.servers.` + name + `]
command = "` + command + `"
args = [` + args + `]
env = { MCPTEST_LOG = "` + filepath.Join(c.dir, "calls-"+tag) + `", MCPTEST_PIDS = "` + filepath.Join(c.dir, "pids-"+tag) + `" }
`
	}
	c.writeFile("cairn.toml", `
[model]
provider = "script"
name = "script.json"
`+server("t", bin, "", "t")+server("sh", "sh", `"-c", "\"$0\"; exit $?", "`+bin+`"`, "sh"))
	if nohup {
		// Ignored here, ignored in the cairn started next, as nohup does.
		signal.Ignore(syscall.SIGHUP)
	}
	cmd, _ := c.start("run", "--session", "k", "hang on")
	if nohup {
		signal.Reset(syscall.SIGHUP)
	}
	for _, tag := range []string{"t", "sh"} {
		mcptest.WaitCalls(t, filepath.Join(c.dir, "calls-"+tag), 1)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for _, tag := range []string{"t", "sh"} {
		pids := mcptest.PIDs(t, filepath.Join(c.dir, "pids-"+tag))
		if len(pids) != 1 {
			t.Fatalf("server %s started %v, want one process", tag, pids)
		}
		mcptest.WaitGone(t, pids[0], "MCP server "+tag+" after cairn was killed")
	}
}
