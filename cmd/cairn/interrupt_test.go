package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

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
	model := "script:" + c.writeFile("slow.json", `{"steps":[`+strings.Join(steps, ",")+`]}`)

	cmd, out := c.start("--model", model, "run", "--session", "long", "count slowly")
	// Interrupt once two steps are saved.
	saved := within(60*time.Second, 50*time.Millisecond, func() bool {
		s, ok := c.show("long")
		return ok && s.Info.Steps >= 2
	})
	if !saved {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the run never saved two steps:\n%s", out.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if code, _ := exitStatus(err); code != 130 {
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
	c.globalSession()
	c.must("run", "--session", "near", "Hello here")
	out, stderr, code := c.run("sessions", "show", "far")
	if code != 0 || !strings.Contains(out, "far-away") || !strings.Contains(stderr, "user-global store") {
		t.Fatalf("show of a session in the global store: exit %d\n%s%s", code, out, stderr)
	}
	c.resumeFromGlobal()
}

// globalSession makes a store in c's folder the user-global store and
// runs session far-away there, saying "Hello from elsewhere"; it returns
// the store's URL.
func (c *cliEnv) globalSession() string {
	c.t.Helper()
	global := "sqlite://" + filepath.Join(c.dir, "global", "cairn.db")
	c.env = append(c.env, "CAIRN_GLOBAL_STORE="+global)
	c.must("--store", global, "run", "--session", "far-away", "Hello from elsewhere")
	return global
}

// resumeFromGlobal checks that `sessions resume far-away` finds the session
// in the user-global store, says so, and that the agent remembers it.
func (c *cliEnv) resumeFromGlobal() {
	c.t.Helper()
	out, stderr, code := c.run("sessions", "resume", "far-away", "What did I say?")
	if code != 0 || !strings.Contains(out, `Before that you told me "Hello from elsewhere"`) || !strings.Contains(stderr, "user-global store") {
		c.t.Errorf("resume from the global store: exit %d\n%s%s", code, out, stderr)
	}
}

// TestLocate_NamedStoreOnly: a store named for the command (--store,
// CAIRN_STORE, a config file given with --config) is the only one `show`,
// `export` and `resume` search. A session that only the user-global store
// holds is not found, with a hint that names the store searched and says
// where the session is, and the user-global store is left as it was.
func TestLocate_NamedStoreOnly(t *testing.T) {
	c := newCLIEnv(t)
	global := c.globalSession()
	named := "sqlite://" + filepath.Join(c.dir, "c.db")
	c.must("--store", named, "run", "--session", "near", "Hello here")
	before, _, _ := c.run("--store", global, "sessions", "export", "far-away")
	c.writeFile("named.toml", "[persistence]\nurl = \""+named+"\"\n")
	for _, tc := range []struct {
		how  string
		env  string
		args []string
	}{
		{"--store", "", []string{"--store", named, "sessions", "resume", "far-away", "What did I say?"}},
		{"--store", "", []string{"--store", named, "sessions", "show", "far"}},
		{"CAIRN_STORE", "CAIRN_STORE=" + named, []string{"sessions", "export", "far-away"}},
		{"--config", "", []string{"--config", "named.toml", "sessions", "resume", "far-away"}},
	} {
		cmd := c.command(tc.args...)
		if tc.env != "" {
			cmd.Env = append(append([]string(nil), cmd.Env...), tc.env)
		}
		out, stderr, code := c.result(cmd)
		if code != 1 {
			t.Errorf("cairn %v (%s): exit %d, want exit 1\n%s%s", tc.args, tc.env, code, out, stderr)
			continue
		}
		for _, w := range []string{
			`not found in ` + named,
			"hint: only the store named by " + tc.how,
			named + ", namespace default",
			"the user-global store " + global + " holds session far-away: give --store " + global + " to use it",
		} {
			if !strings.Contains(stderr, w) {
				t.Errorf("cairn %v (%s): stderr does not say %q:\n%s", tc.args, tc.env, w, stderr)
			}
		}
		if strings.Contains(stderr, "found far-away in the user-global store") || strings.Contains(out, "Hello from elsewhere") {
			t.Errorf("cairn %v (%s) used the user-global store:\n%s%s", tc.args, tc.env, out, stderr)
		}
	}
	if after, _, _ := c.run("--store", global, "sessions", "export", "far-away"); after != before || before == "" {
		t.Errorf("the user-global store's session changed:\nbefore %s\nafter %s", before, after)
	}
	// A session the named store does not hold and no store holds: the
	// hint names the store searched, and nothing more.
	_, stderr, code := c.run("--store", named, "sessions", "resume", "nowhere")
	if code != 1 || !strings.Contains(stderr, "only the store named by --store was searched: "+named) || strings.Contains(stderr, "user-global") {
		t.Errorf("resume of a session no store holds: exit %d\n%s", code, stderr)
	}
	// Without a named store the lookup goes on to the user-global store.
	c.resumeFromGlobal()
}
