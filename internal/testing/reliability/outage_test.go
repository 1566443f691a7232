package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/agent/builtin"
	"github.com/cairnhq/cairn/internal/testing/fault"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/provider/script"
)

// outageRig is a server backend reached through a proxy, and an agent on
// it whose "cut" and "restore" tools cut the proxy and restore it.
type outageRig struct {
	b      *fault.Backend
	p      *fault.Proxy
	st     cairn.Store // through the proxy
	direct cairn.Store // straight to the server
	side   string      // the side-effect file
	logs   *fault.SyncBuffer
	cutOne atomic.Bool // the cut tool has cut once: later calls do nothing
}

func newOutageRig(t *testing.T, name string) *outageRig {
	b := fault.NewBackend(t, name)
	r := &outageRig{b: b, p: fault.StartProxy(t, b.URL), side: filepath.Join(t.TempDir(), "side.txt"), logs: &fault.SyncBuffer{}}
	u := r.p.URL(b.URL)
	if name == "mongodb" {
		// By default the driver waits 30 s for a server to select, so each
		// write while the server is away would take the whole 5 s the
		// agent gives it, and the store's clean-up of a failed insert 10 s
		// more: one second is plenty on loopback.
		u = fault.WithQuery(u, "serverSelectionTimeoutMS", "1000")
	}
	var err error
	r.st, err = cairn.Open(t.Context(), u, cairn.StoreOptions{Namespace: b.NS})
	if err != nil {
		t.Fatalf("open %s through the proxy: %v", name, err)
	}
	t.Cleanup(func() { r.p.Heal(); r.st.Close() })
	r.direct = b.Direct(t)
	return r
}

// agent returns an agent on the proxied store with the built-in tools,
// cut and restore, answering with steps.
func (r *outageRig) agent(t *testing.T, onError string, steps ...script.Step) *agent.Agent {
	t.Helper()
	model, err := script.New(script.Script{Steps: steps})
	if err != nil {
		t.Fatal(err)
	}
	tools := append(builtin.Tools(),
		agent.NewTool("cut", "cuts the store's connections", func(context.Context, struct{}) (string, error) {
			if r.cutOne.CompareAndSwap(false, true) {
				r.p.Cut()
			}
			return "cut", nil
		}),
		agent.NewTool("restore", "restores the store's connections", func(context.Context, struct{}) (string, error) {
			r.p.Heal()
			return "restored", nil
		}),
	)
	return &agent.Agent{
		Name: "outage", Instructions: "Follow the script.", Model: model, Tools: tools,
		MaxSteps: len(steps) + 1, Store: r.st, OnError: onError,
		Logger: slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
}

func (r *outageRig) appendLine(line string) script.Call {
	args, _ := json.Marshal(map[string]string{"path": r.side, "line": line})
	return script.Call{Name: "append_file", Arguments: args}
}

func call(name, args string) script.Call {
	return script.Call{Name: name, Arguments: json.RawMessage(args)}
}

// flush writes the session's unsaved events, trying again while the store
// does not answer yet.
func flush(t *testing.T, s *agent.Session) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for s.Unsaved() > 0 {
		err := s.Flush(t.Context())
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("flush: the store does not answer after it was restored: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkStored checks that the store holds exactly the session's memory and
// that replaying it gives the session's state.
func checkStored(t *testing.T, st cairn.Store, s *agent.Session) *cairn.State {
	t.Helper()
	stored, state := testcheck.LoadValid(t, st, s.ID())
	testcheck.SameEvents(t, stored, s.Memory().Events())
	a, _ := s.State().Snapshot()
	b, _ := state.Snapshot()
	if !bytes.Equal(a, b) {
		t.Errorf("the state replayed from the store differs from the session's:\n got %s\nwant %s", b, a)
	}
	return state
}

// checkLines checks that the side file holds exactly want, in order.
func checkLines(t *testing.T, path string, want ...string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !(errors.Is(err, os.ErrNotExist) && len(want) == 0) {
		t.Fatal(err)
	}
	got := strings.Fields(strings.ReplaceAll(string(data), " ", "_"))
	for i := range want {
		want[i] = strings.ReplaceAll(want[i], " ", "_")
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("side file holds %q, want %q", got, want)
	}
}

// TestAgent_OutageDegrade cuts the connections to the server mid-run with
// on_error "degrade": model calls and idempotent tools go on in memory with
// one warning; a tool that is not idempotent does not run while its start
// cannot be stored, and the run stops as interrupted (store_degraded).
// Once the connections are back the store holds every event, in order, and
// the resumed run makes the side effect exactly once.
func TestAgent_OutageDegrade(t *testing.T) {
	for _, name := range fault.ServerBackends {
		t.Run(name, func(t *testing.T) {
			r := newOutageRig(t, name)
			steps := []script.Step{
				{Text: "first", ToolCalls: []script.Call{call("calc", `{"expression":"6*7"}`), call("remember", `{"key":"k0","value":0}`)}},
				{Text: "cutting", ToolCalls: []script.Call{call("cut", `{}`)}},
				{Text: "down", ToolCalls: []script.Call{call("calc", `{"expression":"1+2"}`)}},
				{Text: "still down", ToolCalls: []script.Call{call("remember", `{"key":"k3","value":3}`)}},
				{Text: "a side effect", ToolCalls: []script.Call{r.appendLine("during the outage"), call("calc", `{"expression":"3+3"}`)}},
				{Text: "back", ToolCalls: []script.Call{r.appendLine("after the outage"), call("calc", `{"expression":"2*2"}`)}},
				{Text: "done"},
			}
			s, err := r.agent(t, agent.Degrade, steps...).Start(t.Context(), agent.WithID("degrade"))
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Run(t.Context(), "go")
			if nr, ok := errors.AsType[*agent.NotRecordedError](err); !ok || !cairn.IsUnavailable(nr) {
				t.Fatalf("run: %+v, %v; want a *agent.NotRecordedError of an outage", res, err)
			}
			if res.Status != cairn.StatusInterrupted || res.Unsaved == 0 || !cairn.IsUnavailable(res.StoreError) {
				t.Fatalf("result %+v; want interrupted, with unsaved events and the outage as their cause", res)
			}
			if st := s.State(); st.Interrupt != cairn.InterruptDegraded || st.RunSteps != 5 {
				t.Errorf("state: interrupt %q after %d steps; want %q after 5", st.Interrupt, st.RunSteps, cairn.InterruptDegraded)
			}
			checkLines(t, r.side) // the side effect did not run: its start was not stored
			var storeWarnings int
			for _, w := range res.Warnings {
				if _, ok := errors.AsType[*agent.StoreWarning](w); ok {
					storeWarnings++
				}
			}
			if storeWarnings != 1 {
				t.Errorf("warnings %v; want one *agent.StoreWarning", res.Warnings)
			}
			if n := strings.Count(r.logs.String(), "the store failed"); n != 1 {
				t.Errorf("the failure was logged %d times, want once:\n%s", n, r.logs.String())
			}
			t.Logf("%s: %d event(s) unsaved when the run stopped; %d connection(s) reset by the cut", name, res.Unsaved, r.p.Stats().Reset)

			r.p.Heal()
			flush(t, s)
			state := checkStored(t, r.direct, s)
			for _, k := range []string{"k0", "k3"} {
				if _, ok := state.Variables[k]; !ok {
					t.Errorf("variable %s is not in the stored state", k)
				}
			}
			again, err := r.agent(t, agent.Degrade, steps...).Resume(t.Context(), "degrade")
			if err != nil {
				t.Fatal(err)
			}
			res, err = again.ResumeRun(t.Context())
			if err != nil || res.Status != cairn.StatusCompleted || res.Output != "done" {
				t.Fatalf("resume: %+v, %v; want completed with \"done\"", res, err)
			}
			state = checkStored(t, r.direct, again)
			testcheck.History(t, state.Messages)
			checkLines(t, r.side, "during the outage", "after the outage")
		})
	}
}

// TestAgent_OutageFail cuts the connections mid-run with on_error "fail":
// the run stops with an error, the store holds a valid prefix of the
// session and nothing the session lacks, and once the connections are back
// the run can be resumed to its end.
func TestAgent_OutageFail(t *testing.T) {
	for _, name := range fault.ServerBackends {
		t.Run(name, func(t *testing.T) {
			r := newOutageRig(t, name)
			steps := []script.Step{
				{Text: "first", ToolCalls: []script.Call{call("remember", `{"key":"k0","value":0}`)}},
				{Text: "cutting", ToolCalls: []script.Call{call("cut", `{}`)}},
				{Text: "down", ToolCalls: []script.Call{r.appendLine("after the cut"), call("calc", `{"expression":"1+2"}`)}},
				{Text: "done"},
			}
			a := r.agent(t, agent.Fail, steps...)
			s, err := a.Start(t.Context(), agent.WithID("fail"))
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Run(t.Context(), "go")
			if err == nil {
				t.Fatalf("run: %+v, no error; want the store's error", res)
			}
			if res == nil || res.Status != cairn.StatusFailed || res.Unsaved != 0 {
				t.Errorf("result %+v; want failed with nothing unsaved", res)
			}
			if !strings.Contains(err.Error(), "session fail") {
				t.Errorf("error %q does not name the session", err)
			}
			t.Logf("%s: the run stopped with: %v", name, err)
			r.p.Heal()
			stored, _ := testcheck.LoadValid(t, r.direct, "fail")
			testcheck.SameEvents(t, stored, s.Memory().Events())
			if last := stored[len(stored)-1]; last.Kind != cairn.KindModelResponse {
				t.Errorf("last stored event %s; want the model.response that asked for the cut", last.Kind)
			}
			checkLines(t, r.side) // the step after the cut never ran

			// The connections are back: another process finishes the run.
			again, err := r.agent(t, agent.Fail, steps...).Resume(t.Context(), "fail")
			if err != nil {
				t.Fatal(err)
			}
			res, err = again.ResumeRun(t.Context())
			if err != nil || res.Status != cairn.StatusCompleted {
				t.Fatalf("resume: %+v, %v", res, err)
			}
			state := checkStored(t, r.direct, again)
			testcheck.History(t, state.Messages)
			checkLines(t, r.side, "after the cut")
		})
	}
}

// TestCLI_StoreDownAtStart runs cairn on a server that does not answer:
// a clear error naming the store, a hint, exit status 1.
func TestCLI_StoreDownAtStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cairn")
	}
	for _, name := range fault.ServerBackends {
		t.Run(name, func(t *testing.T) {
			b := fault.NewBackend(t, name)
			p := fault.StartProxy(t, b.URL)
			p.Cut()
			u := p.URL(b.URL)
			if name == "mongodb" {
				u = fault.WithQuery(u, "serverSelectionTimeoutMS", "3000")
			}
			c := newCLI(t, u, b.NS)
			scr := filepath.Join(t.TempDir(), "script.json")
			if err := os.WriteFile(scr, []byte(`{"steps":[{"text":"never"}]}`), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"run", "--session", "s1", "hello"}, {"sessions", "resume", "s1"}} {
				e := start(t, c.command(scr, args...), -1)
				if e.code != 1 {
					t.Errorf("cairn %v: exit %d, want 1\n%s", args, e.code, e.stderr)
				}
				if !strings.Contains(e.stderr, "cairn: ") || !strings.Contains(e.stderr, "\nhint: ") {
					t.Errorf("cairn %v: stderr has no error and hint:\n%s", args, e.stderr)
				}
				if !strings.Contains(e.stderr, p.Addr()) {
					t.Errorf("cairn %v: the error does not name the store's address %s:\n%s", args, p.Addr(), e.stderr)
				}
				t.Logf("%s: cairn %v:\n%s", name, args, e.stderr)
			}
			if _, last := statusOf(t, b.Direct(t), "s1"); last != "no session" {
				t.Errorf("the store holds session s1 (%s) after cairn failed to reach it", last)
			}
		})
	}
}
