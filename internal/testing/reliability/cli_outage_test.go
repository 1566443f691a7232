package reliability

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/fault"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/provider/script"
	"github.com/cairnhq/cairn/store/mongodb"
)

// slowScript writes a script of steps model calls of 200 ms each, each
// asking for a calc call, then "all done".
func slowScript(t *testing.T, steps int) string {
	t.Helper()
	var s script.Script
	for i := range steps {
		s.Steps = append(s.Steps, script.Step{Text: fmt.Sprintf("step %d", i), DelayMS: 200,
			ToolCalls: []script.Call{{Name: "calc", Arguments: json.RawMessage(fmt.Sprintf(`{"expression":"%d+1"}`, i))}}})
	}
	s.Steps = append(s.Steps, script.Step{Text: "all done"})
	return testcheck.WriteScript(t, t.TempDir(), s)
}

// cutMidRun waits until the store holds two model responses of session id,
// then cuts the proxy for 1.2 s, longer than a client retries a command
// (go-redis: three retries, half a second in all) and longer than the
// MongoDB driver waits for a server here (serverSelectionTimeoutMS=1000),
// or until the process exits.
func cutMidRun(t *testing.T, st cairn.Store, p *fault.Proxy, id string, exited <-chan exit) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for responses(t, st, id) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the run did not get going")
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.Cut()
	defer p.Heal()
	select {
	case <-time.After(1200 * time.Millisecond):
	case <-exited:
	}
}

// responses returns how many model responses the store holds for id.
func responses(t *testing.T, st cairn.Store, id string) int {
	rec, err := st.Load(t.Context(), id, 0)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range rec.Events {
		if e.Kind == cairn.KindModelResponse {
			n++
		}
	}
	return n
}

// TestCLI_Outage cuts the connections between `cairn run` and its store
// mid-run. With on_error "degrade" (the default) the run completes, a
// warning is shown on stderr and the store holds the whole session; with
// CAIRN_ON_ERROR=fail cairn stops with an error and a hint, exit 1, the
// store holds a valid prefix, and `cairn sessions resume` finishes it.
func TestCLI_Outage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cairn")
	}
	const steps = 15
	for _, name := range fault.ServerBackends {
		for _, mode := range []string{"degrade", "fail"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				b := fault.NewBackend(t, name)
				p := fault.StartProxy(t, b.URL)
				u := p.URL(b.URL)
				if name == "mongodb" {
					u = fault.WithQuery(u, "serverSelectionTimeoutMS", "1000")
				}
				c := newCLI(t, u, b.NS)
				c.env = append(c.env, "CAIRN_ON_ERROR="+mode)
				st := b.Direct(t)
				scr := slowScript(t, steps)
				cmd := c.command(scr, "run", "--session", "cut", "go")
				done, exited := make(chan exit, 1), make(chan exit)
				go func() { e := start(t, cmd, -1); close(exited); done <- e }()
				cutMidRun(t, st, p, "cut", exited)
				e := <-done
				t.Logf("%s, %s: exit %d\n%s", name, mode, e.code, e.stderr)
				if mode == "degrade" {
					if e.code != 0 {
						t.Fatalf("exit %d, want 0\n%s", e.code, e.stderr)
					}
					if !strings.Contains(e.stderr, "warning: ") || !strings.Contains(e.stderr, "the store failed") {
						t.Errorf("stderr shows no warning of the store's failure:\n%s", e.stderr)
					}
				} else {
					if e.code != 1 || !strings.Contains(e.stderr, "cairn: session cut: ") || !strings.Contains(e.stderr, "\nhint: ") {
						t.Fatalf("exit %d, want 1 with an error naming the session and a hint\n%s", e.code, e.stderr)
					}
					_, state := testcheck.LoadValid(t, st, "cut")
					if state.Status == cairn.StatusCompleted {
						t.Fatalf("the run stopped with an error but the store holds it completed")
					}
					testcheck.History(t, state.Messages[:openCalls(state)])
					// The lease could not be released while the store was
					// away: take it over, as the hint says.
					e := start(t, c.command(scr, "sessions", "resume", "cut", "--force"), -1)
					if e.code != 0 && name == "mongodb" && staleBlock(e.stderr) {
						// The failed append's documents could not be
						// removed while the server was away, and the
						// process that knew them is gone: they hold the
						// position until they are StaleAfter old.
						t.Logf("resume: %s; waiting %s", fault.LastLine(e.stderr, "cairn:"), mongodb.StaleAfter)
						time.Sleep(mongodb.StaleAfter + time.Second)
						e = start(t, c.command(scr, "sessions", "resume", "cut", "--force"), -1)
					}
					if e.code != 0 {
						t.Fatalf("resume: exit %d\n%s", e.code, e.stderr)
					}
				}
				_, state := testcheck.LoadValid(t, st, "cut")
				if state.Status != cairn.StatusCompleted || state.Output != "all done" || state.RunSteps != steps+1 {
					t.Errorf("stored: status %s, output %q, %d steps; want completed, \"all done\", %d", state.Status, state.Output, state.RunSteps, steps+1)
				}
				testcheck.History(t, state.Messages)
			})
		}
	}
}

// openCalls returns how many of the state's messages come before the last
// assistant message whose tool calls are still pending: a run stopped
// between a model response and its tool results leaves them open.
func openCalls(st *cairn.State) int {
	if len(st.Pending) == 0 {
		return len(st.Messages)
	}
	for i := len(st.Messages) - 1; i >= 0; i-- {
		if st.Messages[i].Role == cairn.RoleAssistant && len(st.Messages[i].ToolCalls) > 0 {
			return i
		}
	}
	return len(st.Messages)
}
