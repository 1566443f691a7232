package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/agent/builtin"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/internal/wire"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/script"
)

var errDead = fmt.Errorf("the process died: %w", syscall.ECONNRESET)

// crashPointScript is the crash test's script (crashScript) in memory:
// append_file (not idempotent) at every step, calc and remember alongside.
func crashPointScript(side string) []script.Step {
	var steps []script.Step
	for i := range 6 {
		st := script.Step{Text: fmt.Sprintf("step %d", i)}
		line, _ := json.Marshal(map[string]string{"path": side, "line": fmt.Sprintf("line-%d", i)})
		st.ToolCalls = append(st.ToolCalls, script.Call{Name: "append_file", Arguments: line})
		if i%2 == 0 {
			st.ToolCalls = append(st.ToolCalls, call("calc", fmt.Sprintf(`{"expression":"%d*7"}`, i)))
		}
		if i%3 == 0 {
			st.ToolCalls = append(st.ToolCalls, call("remember", fmt.Sprintf(`{"key":"k%d","value":%d}`, i, i)))
		}
		steps = append(steps, st)
	}
	return append(steps, script.Step{Text: "all done"})
}

// countingModel counts the calls made to a model.
type countingModel struct {
	provider.Model
	calls atomic.Int64
}

func (m *countingModel) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	m.calls.Add(1)
	return m.Model.Generate(ctx, req)
}

// crashPointRun runs the script on st as one process would (fail mode);
// resume tells it to resume the session rather than start it. It returns
// how many model calls the process made.
func crashPointRun(t *testing.T, st cairn.Store, side, id string, resume bool) (*agent.Result, int, error) {
	t.Helper()
	steps := crashPointScript(side)
	model := &countingModel{Model: scripted(t, steps...)}
	res, err := crashPointRunWith(t, model, st, id, resume, len(steps))
	return res, int(model.calls.Load()), err
}

func crashPointRunWith(t *testing.T, model provider.Model, st cairn.Store, id string, resume bool, steps int) (*agent.Result, error) {
	a := &agent.Agent{Name: "crash", Instructions: "Follow the script.", Model: model,
		Tools: builtin.Tools(), MaxSteps: steps + 1, Store: st, OnError: agent.Fail, Logger: quietLogger()}
	if !resume {
		s, err := a.Start(t.Context(), agent.WithID(id))
		if err != nil {
			return nil, err
		}
		return s.Run(t.Context(), "Run the script.")
	}
	s, err := a.Resume(t.Context(), id)
	if err != nil {
		return nil, err
	}
	if s.State().Status == cairn.StatusNew {
		return s.Run(t.Context(), "Run the script.")
	}
	return s.ResumeRun(t.Context())
}

// TestAgent_CrashAtEveryAppend is the deterministic form of the SIGKILL
// crash test: for every append of a reference run, a process dies there,
// once before the append reaches the store and once after it is stored
// but before the process hears so; a second process then resumes the
// session to completion. Each crash point checks the three crash rules
// exactly: no recorded model call is made again (the model responses equal
// the reference's), a tool that is not idempotent runs only after its
// tool.started is stored (no side effect happens twice), and a started
// call without a result is answered OutcomeUnknown — precisely when the
// process died between the start and the result. The model calls of the
// two processes are counted: one more than the reference run's exactly
// when the process died with a response it never stored.
func TestAgent_CrashAtEveryAppend(t *testing.T) {
	refSide := filepath.Join(t.TempDir(), "side.txt")
	ref := &testcheck.Recording{Store: testcheck.MemoryStore(t)}
	res, refCalls, err := crashPointRun(t, ref, refSide, "ref", false)
	if err != nil || res.Status != cairn.StatusCompleted {
		t.Fatalf("reference run: %+v %v", res, err)
	}
	appends := batchKinds(ref)
	refResponses := responsesOf(t, loadEvents(t, ref, "ref"), refSide)
	points := 0
	for n := 1; n <= len(appends); n++ {
		for _, applied := range []bool{false, true} {
			name := fmt.Sprintf("append%d-%v-applied=%v", n, appends[n-1], applied)
			t.Run(name, func(t *testing.T) {
				points++
				mem := testcheck.MemoryStore(t)
				side := filepath.Join(t.TempDir(), "side.txt")
				dying := &testcheck.Dying{Store: mem, N: n, Applied: applied, Err: errDead}
				_, before, err := crashPointRun(t, dying, side, "s", false)
				if err == nil {
					t.Fatalf("the process did not die at append %d", n)
				}
				res, after, err := crashPointRun(t, mem, side, "s", true)
				if err != nil || res.Status != cairn.StatusCompleted || res.Output != "all done" {
					t.Fatalf("resume: %+v %v", res, err)
				}
				died := dying.Kinds()
				wantCalls := refCalls
				if died[0] == cairn.KindModelResponse && !applied {
					wantCalls++ // the response was never stored: asked again
				}
				if before+after != wantCalls {
					t.Errorf("%d model calls (%d before the crash, %d on resume), want %d", before+after, before, after, wantCalls)
				}
				events := loadEvents(t, mem, "s")
				if got := responsesOf(t, events, side); !slices.Equal(got, refResponses) {
					t.Errorf("model responses\n got %v\nwant %v", got, refResponses)
				}
				unknown := unknownResults(t, events)
				// Died after the start was stored and before the result was:
				// the start stored and not heard of (the tool never ran), or
				// the result never stored (the tool ran).
				started := died[len(died)-1] == cairn.KindToolStarted && applied
				resultLost := died[0] == cairn.KindToolResult && !applied && isAppendFileResult(t, ref, n)
				want := 0
				if started || resultLost {
					want = 1
				}
				if unknown != want {
					t.Errorf("%d outcome-unknown results, want %d", unknown, want)
				}
				state, err := cairn.Fold(events)
				if err != nil {
					t.Fatal(err)
				}
				testcheck.History(t, state.Messages)
				testcheck.UniqueLines(t, "s", side)
				if lines := strings.Count(readFile(t, side), "\n"); lines != 6-unknownRan(started) {
					t.Errorf("%d side effects, want %d", lines, 6-unknownRan(started))
				}
			})
		}
	}
	if points != 2*len(appends) {
		t.Fatalf("%d crash points, want %d", points, 2*len(appends))
	}
}

// unknownRan is how many side effects a crash kept from happening: one
// when the process died after storing a start and before running the tool.
func unknownRan(started bool) int {
	if started {
		return 1
	}
	return 0
}

// isAppendFileResult reports whether the reference run's n-th append holds
// the result of an append_file call.
func isAppendFileResult(t *testing.T, ref *testcheck.Recording, n int) bool {
	for _, e := range ref.Batches()[n-1] {
		if e.Kind == cairn.KindToolResult {
			v, err := e.Decode()
			if err != nil {
				t.Fatal(err)
			}
			return v.(*cairn.ToolResult).Name == "append_file"
		}
	}
	return false
}

// responsesOf lists the model responses of events, text and calls, with
// the side file's path replaced.
func responsesOf(t *testing.T, events []cairn.Event, side string) []string {
	var out []string
	for _, r := range decoded[cairn.ModelResponse](t, events, cairn.KindModelResponse) {
		s := r.Text
		for _, c := range r.ToolCalls {
			args, _ := wire.Canonical(c.Args)
			s += " " + c.ID + " " + c.Name + strings.ReplaceAll(string(args), side, "SIDE")
		}
		out = append(out, s)
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}
