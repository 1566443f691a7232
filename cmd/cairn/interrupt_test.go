package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// cairnBinary builds the command once per test run.
func cairnBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cairn-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "cairn")
		out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

type cliEnv struct {
	t   *testing.T
	bin string
	dir string
	env []string
}

func newCLIEnv(t *testing.T) *cliEnv {
	dir := t.TempDir()
	home := filepath.Join(dir, ".home")
	return &cliEnv{t: t, bin: cairnBinary(t), dir: dir,
		env: append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home+"/.config", "XDG_DATA_HOME="+home+"/.local/share")}
}

func (c *cliEnv) command(args ...string) *exec.Cmd {
	cmd := exec.Command(c.bin, args...)
	cmd.Dir, cmd.Env = c.dir, c.env
	return cmd
}

// run runs cairn and returns stdout, stderr and the exit status.
func (c *cliEnv) run(args ...string) (string, string, int) {
	c.t.Helper()
	cmd := c.command(args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("run cairn %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

type shown struct {
	Info struct {
		Status string `json:"status"`
		Steps  int    `json:"steps"`
	} `json:"info"`
	Events []struct {
		Seq  int64           `json:"seq"`
		Kind string          `json:"kind"`
		Data json.RawMessage `json:"data"`
	} `json:"events"`
}

func (c *cliEnv) show(id string) (*shown, bool) {
	out, _, code := c.run("--json", "sessions", "show", id)
	if code != 0 {
		return nil, false
	}
	var s shown
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		c.t.Fatalf("show --json: %v\n%s", err, out)
	}
	return &s, true
}

// TestRun_InterruptAndResume: Ctrl+C during a run saves run.interrupted and
// exits 130; `cairn sessions resume ID`, as the hint says it, finishes the
// run with the session's own model without repeating a completed step.
func TestRun_InterruptAndResume(t *testing.T) {
	c := newCLIEnv(t)
	var steps []string
	for i := range 8 {
		steps = append(steps, fmt.Sprintf(`{"text":"step %d","tool_calls":[{"name":"calc","arguments":{"expression":"%d+1"}}],"delay_ms":150}`, i, i))
	}
	steps = append(steps, `{"text":"all done","delay_ms":150}`)
	script := filepath.Join(c.dir, "slow.json")
	if err := os.WriteFile(script, []byte(`{"steps":[`+strings.Join(steps, ",")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	model := "script:" + script

	cmd := c.command("--model", model, "run", "--session", "long", "count slowly")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt once two steps are saved.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if s, ok := c.show("long"); ok && s.Info.Steps >= 2 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the run never saved two steps:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("interrupted run: %v, want exit status 130\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "cairn sessions resume long") {
		t.Errorf("the interrupted run does not say how to resume:\n%s", out.String())
	}
	s, _ := c.show("long")
	if s.Info.Status != "interrupted" {
		t.Fatalf("status after Ctrl+C = %q, want interrupted", s.Info.Status)
	}
	last := s.Events[len(s.Events)-1]
	if last.Kind != "run.interrupted" {
		t.Fatalf("last event = %s, want run.interrupted", last.Kind)
	}

	if !strings.Contains(out.String(), "with the session's own model") {
		t.Errorf("the hint does not say that resume uses the session's model:\n%s", out.String())
	}
	// The hint as printed: no --model, the session's recorded model goes on.
	stdout, stderr, code := c.run("sessions", "resume", "long")
	if code != 0 {
		t.Fatalf("resume exited %d:\n%s%s", code, stdout, stderr)
	}
	if strings.Contains(stderr, "different agent") {
		t.Errorf("resume with the session's own model warns of a different agent:\n%s", stderr)
	}
	if !strings.Contains(stdout, "all done") {
		t.Errorf("resume printed %q, want the final answer", stdout)
	}
	s, _ = c.show("long")
	if s.Info.Status != "completed" {
		t.Fatalf("status after resume = %q, want completed", s.Info.Status)
	}
	var texts []string
	results := map[string]int{}
	for _, e := range s.Events {
		switch e.Kind {
		case "model.response":
			var d struct{ Text string }
			json.Unmarshal(e.Data, &d)
			texts = append(texts, d.Text)
		case "tool.result":
			var d struct {
				CallID string `json:"call_id"`
			}
			json.Unmarshal(e.Data, &d)
			results[d.CallID]++
		}
	}
	want := []string{"step 0", "step 1", "step 2", "step 3", "step 4", "step 5", "step 6", "step 7", "all done"}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("model responses = %q\nwant %q (each once, in order)", texts, want)
	}
	for id, n := range results {
		if n != 1 {
			t.Errorf("tool call %s has %d results, want 1", id, n)
		}
	}
	// Nothing left to resume: a clear error and a hint.
	_, stderr, code = c.run("--model", model, "sessions", "resume", "long")
	if code != 1 || !strings.Contains(stderr, "no unfinished run") || !strings.Contains(stderr, "hint:") {
		t.Errorf("resume of a finished run: exit %d\n%s", code, stderr)
	}
}

// TestResume_GlobalStore: `sessions show|resume ID` look in the project's
// store, then in the user-global one, and say where they found it.
func TestResume_GlobalStore(t *testing.T) {
	c := newCLIEnv(t)
	global := "sqlite://" + filepath.Join(c.dir, "global", "cairn.db")
	c.env = append(c.env, "CAIRN_GLOBAL_STORE="+global)
	if _, stderr, code := c.run("--store", global, "run", "--session", "far-away", "Hello from elsewhere"); code != 0 {
		t.Fatalf("run in the global store: %s", stderr)
	}
	if _, stderr, code := c.run("run", "--session", "near", "Hello here"); code != 0 {
		t.Fatalf("run in the project store: %s", stderr)
	}
	out, stderr, code := c.run("sessions", "show", "far")
	if code != 0 || !strings.Contains(out, "far-away") || !strings.Contains(stderr, "user-global store") {
		t.Fatalf("show of a session in the global store: exit %d\n%s%s", code, out, stderr)
	}
	out, stderr, code = c.run("sessions", "resume", "far-away", "What did I say?")
	if code != 0 || !strings.Contains(out, `Before that you told me "Hello from elsewhere"`) || !strings.Contains(stderr, "user-global store") {
		t.Fatalf("resume from the global store: exit %d\n%s%s", code, out, stderr)
	}
}
