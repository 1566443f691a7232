// Package examples_test runs the HTTP client examples, in Python and in
// JavaScript, against a real `cairn serve`, and tests the serve command
// as a person starts it: what it prints, its token, its flags, its end.
package examples_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/testing/fault"
	"github.com/cairnhq/cairn/internal/testing/testenv"
)

func TestMain(m *testing.M) {
	testenv.QuickRaceExit()
	code := m.Run()
	fault.RemoveBuilds()
	os.Exit(code)
}

// server is a running `cairn serve`.
type server struct {
	URL   string `json:"url"`
	Login string `json:"login"`
	Token string `json:"token"`
	proc  *fault.Process
	dir   string
}

// serve starts `cairn serve --json` on a free port over a SQLite store in
// a new folder, with args added, and stops it (SIGTERM, exit 0) when the
// test ends.
func serve(t *testing.T, args ...string) *server {
	t.Helper()
	return serveIn(t, t.TempDir(), args...)
}

// serveIn is serve in the folder dir.
func serveIn(t *testing.T, dir string, args ...string) *server {
	t.Helper()
	p := start(t, dir, append([]string{"serve", "--addr", "127.0.0.1:0", "--json", "--poll", "50ms"}, args...)...)
	waitServing(t, p)
	s := &server{proc: p, dir: dir}
	if err := json.Unmarshal([]byte(p.Stdout()), s); err != nil {
		t.Fatalf("cairn serve --json printed %q: %v", p.Stdout(), err)
	}
	t.Cleanup(func() {
		p.Terminate()
		if e := p.Wait(); e.Code != 0 {
			t.Errorf("cairn serve did not end cleanly on SIGTERM: %s", e)
		}
	})
	return s
}

// waitServing waits until cairn serve printed its address line.
func waitServing(t *testing.T, p *fault.Process) {
	t.Helper()
	fault.Until(t, 60*time.Second, "cairn serve to print its address", func() (bool, error) {
		select {
		case <-p.Done():
			t.Fatalf("cairn serve ended: %s", p.Wait())
		default:
		}
		return strings.Contains(p.Stdout(), "\n"), nil
	})
}

func start(t *testing.T, dir string, args ...string) *fault.Process {
	t.Helper()
	bin := fault.Build(t, "github.com/cairnhq/cairn/cmd/cairn")
	cmd := exec.Command(bin, args...)
	home := filepath.Join(dir, ".home")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home+"/.config", "XDG_DATA_HOME="+home+"/.local/share",
		"CAIRN_STORE=sqlite://"+filepath.Join(dir, "cairn.db"))
	return fault.Start(t, cmd)
}

// request sends a request with the token (when given) and returns the
// status and body.
func (s *server) request(t *testing.T, method, path, token, body string, header ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, data
}

// interpreter finds a language runtime: the variable env, else name on PATH.
// A missing runtime skips the test locally and fails it under CI.
func interpreter(t *testing.T, env, name string) string {
	if p := os.Getenv(env); p != "" {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not set and %s is not on PATH: CI runs the %s example", env, name, name)
	}
	t.Skipf("%s is not set and %s is not on PATH: set it to run the example", env, name)
	return ""
}

func TestExample_Python(t *testing.T) {
	testClient(t, interpreter(t, "CAIRN_TEST_PYTHON", "python3"), "client.py", "py-example")
}

func TestExample_Node(t *testing.T) {
	testClient(t, interpreter(t, "CAIRN_TEST_NODE", "node"), "client.mjs", "js-example")
}

// testClient runs an example client against a server and checks what it
// printed and what the store holds afterwards.
func testClient(t *testing.T, bin, file, id string) {
	s := serve(t)
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, abs, id)
	cmd.Env = append(os.Environ(), "CAIRN_URL="+s.URL, "CAIRN_TOKEN="+s.Token)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, file, err, out.String())
	}
	t.Logf("%s:\n%s", file, out.String())
	for _, want := range []string{
		"conflict at seq 6: 1 event(s) appended meanwhile, last seq 7",
		"refused: 400 invalid_event at events[0].data.parts.0.text",
		"session " + id + ": status completed, 4 messages, answer=42, last seq 9",
		"streamed: model.response, run.finished",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("%s did not print %q", file, want)
		}
	}
	status, body := s.request(t, "GET", "/api/sessions/"+id+"/events?after=6&limit=1", s.Token, "")
	if status != http.StatusOK || !strings.Contains(string(body), `"example.note"`) {
		t.Errorf("the other writer's event at seq 7: %d %s", status, body)
	}
}

func TestServe_TokenAndSignIn(t *testing.T) {
	s := serve(t)
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") || len(s.Token) < 40 || !strings.HasPrefix(s.Login, s.URL+"/login?code=") {
		t.Fatalf("cairn serve printed url %q, token %q, login %q", s.URL, s.Token, s.Login)
	}
	if status, _ := s.request(t, "GET", "/api/sessions", "", ""); status != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", status)
	}
	if status, body := s.request(t, "GET", "/api/sessions", s.Token, ""); status != http.StatusOK {
		t.Errorf("with the token: %d %s", status, body)
	}
	path := strings.TrimPrefix(s.Login, s.URL)
	if status, _ := s.request(t, "GET", path, "", ""); status != http.StatusSeeOther {
		t.Errorf("the one-time link: %d, want 303", status)
	}
	if status, _ := s.request(t, "GET", path, "", ""); status != http.StatusUnauthorized {
		t.Errorf("the one-time link again: %d, want 401", status)
	}
	// Bound to loopback: another host name is refused (DNS rebinding).
	if status, _ := s.request(t, "GET", "/api/sessions", s.Token, "", "Host", "attacker.example"); status != http.StatusForbidden {
		t.Errorf("Host attacker.example: %d, want 403", status)
	}
	port := s.URL[strings.LastIndex(s.URL, ":"):]
	if status, _ := s.request(t, "GET", "/api/sessions", s.Token, "", "Host", "localhost"+port); status != http.StatusOK {
		t.Errorf("Host localhost%s: %d, want 200", port, status)
	}
}

func TestServe_TokenFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	os.WriteFile(file, []byte("# the team's tokens\nalice-0123456789abcdef\n\nshort\n"), 0o600)
	p := start(t, dir, "serve", "--addr", "127.0.0.1:0", "--token-file", file)
	if e := p.Wait(); e.Code != 1 || !strings.Contains(e.Stderr, file+":4: the token is 5 characters long, the minimum is 16") {
		t.Fatalf("a short token in the file: %s", e)
	}
	os.WriteFile(file, []byte("# the team's tokens\nalice-0123456789abcdef\nbob-0123456789abcdef00\n"), 0o600)
	s := serve(t, "--token-file", file, "--read-only")
	if s.Token != "" {
		t.Errorf("cairn serve printed a token although they come from a file")
	}
	for _, tok := range []string{"alice-0123456789abcdef", "bob-0123456789abcdef00"} {
		if status, _ := s.request(t, "GET", "/api/sessions", tok, ""); status != http.StatusOK {
			t.Errorf("token %s: %d", tok, status)
		}
	}
	if status, _ := s.request(t, "GET", "/api/sessions", "carol-0123456789abcdef", ""); status != http.StatusUnauthorized {
		t.Errorf("a token not in the file: %d, want 401", status)
	}
	status, body := s.request(t, "POST", "/api/sessions", "alice-0123456789abcdef", `{"id":"x"}`)
	if status != http.StatusForbidden || !strings.Contains(string(body), "read_only") {
		t.Errorf("create on a --read-only server: %d %s", status, body)
	}
}

// TestServe_ConfigTable starts cairn serve from the [serve] table of
// cairn.toml alone: its address, its token file (relative to the file's
// folder, run from a folder below it) and read-only; a flag overrides a key.
func TestServe_ConfigTable(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tokens"), []byte("team-0123456789abcdef\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "cairn.toml"), []byte("[serve]\naddr = \"127.0.0.1:0\"\ntoken_file = \"tokens\"\nread_only = true\n"), 0o600)
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	p := start(t, sub, "serve", "--json")
	waitServing(t, p)
	var s server
	var out struct {
		ReadOnly bool `json:"read_only"`
	}
	if err := json.Unmarshal([]byte(p.Stdout()), &s); err != nil {
		t.Fatalf("cairn serve --json printed %q: %v", p.Stdout(), err)
	}
	json.Unmarshal([]byte(p.Stdout()), &out)
	defer func() {
		p.Terminate()
		p.Wait()
	}()
	if s.Token != "" || !out.ReadOnly || strings.HasSuffix(s.URL, ":7420") {
		t.Errorf("cairn serve printed %s; want no token (the file's), read_only and the port of addr", p.Stdout())
	}
	if status, b := s.request(t, "GET", "/api/sessions", "team-0123456789abcdef", ""); status != http.StatusOK {
		t.Errorf("the token of token_file: %d %s", status, b)
	}
	if status, _ := s.request(t, "POST", "/api/sessions", "team-0123456789abcdef", `{"id":"x"}`); status != http.StatusForbidden {
		t.Errorf("create with read_only = true: %d, want 403", status)
	}

	os.WriteFile(filepath.Join(dir, "cairn.toml"), []byte("[serve]\naddr = \"nonsense\"\n"), 0o600)
	e := start(t, sub, "serve").Wait()
	if e.Code != 1 || !strings.Contains(e.Stderr, "cairn.toml:2: serve.addr") || !strings.Contains(e.Stderr, "HOST:PORT") {
		t.Errorf("a bad serve.addr: %s", e)
	}
}

// TestServe_Memory: cairn serve serves the long-term memory of its store
// (an item put by `cairn memory put` is found over the API); a store whose
// memory it cannot open (encrypted, and no key configured) is served
// without it, with one warning, and the memory routes answer no_memory.
func TestServe_Memory(t *testing.T) {
	dir := t.TempDir()
	if e := start(t, dir, "memory", "put", "users/ada", "food", "pizza", "--text", "Ada loves pizza").Wait(); e.Code != 0 {
		t.Fatalf("cairn memory put: %s", e)
	}
	s := serveIn(t, dir)
	if !strings.Contains(s.proc.Stdout(), `"memory": true`) {
		t.Errorf("cairn serve --json printed %s; want memory true", s.proc.Stdout())
	}
	status, body := s.request(t, "GET", "/api/memory/search?q=pizza", s.Token, "")
	if status != http.StatusOK || !strings.Contains(string(body), `"key":"food"`) {
		t.Errorf("a search of the store's memory: %d %s", status, body)
	}

	enc := t.TempDir()
	os.WriteFile(filepath.Join(enc, "cairn.key"), []byte(strings.Repeat("ab", 32)), 0o600)
	os.WriteFile(filepath.Join(enc, "cairn.toml"), []byte("[persistence]\nencryption_key_file = \"cairn.key\"\n"), 0o600)
	if e := start(t, enc, "memory", "put", "users/ada", "food", "pizza").Wait(); e.Code != 0 {
		t.Fatalf("cairn memory put with a key: %s", e)
	}
	os.Remove(filepath.Join(enc, "cairn.toml"))
	s = serveIn(t, enc)
	if !strings.Contains(s.proc.Stdout(), `"memory": false`) {
		t.Errorf("cairn serve --json printed %s; want memory false", s.proc.Stdout())
	}
	if warn := s.proc.Stderr(); strings.Count(strings.TrimSpace(warn), "\n") != 0 || !strings.Contains(warn, "without long-term memory") || !strings.Contains(warn, "encrypted") {
		t.Errorf("cairn serve's warning: %q, want one line saying why memory is off", warn)
	}
	status, body = s.request(t, "GET", "/api/memory/search?q=pizza", s.Token, "")
	if status != http.StatusNotFound || !strings.Contains(string(body), "no_memory") {
		t.Errorf("a search on a server without memory: %d %s", status, body)
	}
}

func TestServe_BadAddr(t *testing.T) {
	p := start(t, t.TempDir(), "serve", "--addr", "nonsense")
	if e := p.Wait(); e.Code != 2 || !strings.Contains(e.Stderr, "--addr") {
		t.Fatalf("cairn serve --addr nonsense: %s", e)
	}
}

// TestServe_ResumesWithTheConfiguredAgent resumes an interrupted run over
// the API: the server runs it with the model the command line configured,
// as `cairn sessions resume` would.
func TestServe_ResumesWithTheConfiguredAgent(t *testing.T) {
	scriptFile := filepath.Join(t.TempDir(), "script.json")
	os.WriteFile(scriptFile, []byte(`{"steps":[{"text":"Resumed from the inspector."}]}`), 0o600)
	s := serve(t, "--model", "script:"+scriptFile)
	body := `{"expect_seq":0,"events":[
		{"kind":"run.started","run":"r1","data":{"run_id":"r1","agent":"assistant","model":"script","reset":true,"fingerprint":{"model":"script","instructions":"","tools":""}}},
		{"kind":"memory.reset","run":"r1","data":{}},
		{"kind":"message.user","run":"r1","data":{"parts":[{"type":"text","text":"hello"}]}},
		{"kind":"run.interrupted","run":"r1","data":{"reason":"cancelled","pending":[]}}]}`
	if status, b := s.request(t, "POST", "/api/sessions", s.Token, `{"id":"halted"}`); status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, b)
	}
	if status, b := s.request(t, "POST", "/api/sessions/halted/events", s.Token, body); status != http.StatusOK {
		t.Fatalf("append: %d %s", status, b)
	}
	if status, b := s.request(t, "POST", "/api/sessions/halted/resume", s.Token, ""); status != http.StatusAccepted {
		t.Fatalf("resume: %d %s", status, b)
	}
	var st struct {
		State struct {
			Status string `json:"status"`
			Output string `json:"output"`
		} `json:"state"`
	}
	fault.Until(t, 60*time.Second, "the resumed run to finish", func() (bool, error) {
		_, b := s.request(t, "GET", "/api/sessions/halted/state", s.Token, "")
		return json.Unmarshal(b, &st) == nil && st.State.Status == "completed", nil
	})
	if st.State.Output != "Resumed from the inspector." {
		t.Errorf("the resumed run's output: %q", st.State.Output)
	}
}

// TestServe_ApprovalWithTheConfiguredAgent: a run of `cairn run` stops for
// an approval that cairn.toml asks for; the API approves the call and the
// server resumes the run with the agent the same configuration describes.
func TestServe_ApprovalWithTheConfiguredAgent(t *testing.T) {
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"steps":[
		{"tool_calls":[{"name":"append_file","arguments":{"path":"`+notes+`","line":"approved"}}]},
		{"text":"Noted."}]}`), 0o600)
	os.WriteFile(filepath.Join(dir, "cairn.toml"), []byte("[model]\nprovider = \"script\"\nname = \"script.json\"\n\n[agent]\nrequire_approval = [\"append_file\"]\n"), 0o600)
	if e := start(t, dir, "run", "--session", "s1", "note it").Wait(); e.Code != 4 || !strings.Contains(e.Stderr, "waiting for approval") {
		t.Fatalf("cairn run: %s", e)
	}
	s := serveIn(t, dir)
	_, b := s.request(t, "GET", "/api/sessions/s1", s.Token, "")
	var got struct {
		State struct {
			Status  string `json:"status"`
			Pending []struct {
				ID       string `json:"id"`
				Approval bool   `json:"approval"`
			} `json:"pending"`
		} `json:"state"`
	}
	if err := json.Unmarshal(b, &got); err != nil || len(got.State.Pending) != 1 || !got.State.Pending[0].Approval {
		t.Fatalf("the session before the decision: %s", b)
	}
	call := got.State.Pending[0].ID
	status, b := s.request(t, "POST", "/api/sessions/s1/approvals", s.Token, `{"call_id":"`+call+`","approved":true,"resume":true}`)
	if status != http.StatusOK || !strings.Contains(string(b), `"resumed":true`) {
		t.Fatalf("approve: %d %s", status, b)
	}
	fault.Until(t, 60*time.Second, "the resumed run to complete", func() (bool, error) {
		_, b := s.request(t, "GET", "/api/sessions/s1", s.Token, "")
		return json.Unmarshal(b, &got) == nil && got.State.Status == "completed", nil
	})
	if data, err := os.ReadFile(notes); err != nil || string(data) != "approved\n" {
		t.Errorf("the approved call's side effect: %q, %v", data, err)
	}
}
