package steps_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/steps"
)

// world is what a loop's steps change outside the session: the lines
// written (side effects that must not happen twice) and the runs of each
// step's function.
type world struct {
	mu    sync.Mutex
	lines []string
	runs  map[string]int
}

func (w *world) ran(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.runs == nil {
		w.runs = map[string]int{}
	}
	w.runs[name]++
}

func (w *world) write(line string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, line)
}

// crashLoop is one process running the crash test's loop to its end, or
// until the store fails: a user message, three rounds of an idempotent
// step and a not-idempotent one with a variable between them, a model call
// asking for a not-idempotent tool call, the tool call, and the end. An
// unknown outcome is recorded as such (ResolveError) and the loop goes on.
func crashLoop(ctx context.Context, st cairn.Store, id string, w *world) error {
	s, err := steps.Open(ctx, st, id, steps.Options{Name: "crash"})
	if err != nil {
		return err
	}
	defer s.Close()
	unknown := func(err error) error {
		if u, ok := errors.AsType[*steps.OutcomeUnknownError](err); ok {
			return s.ResolveError(ctx, u.Name, u)
		}
		if errors.Is(err, steps.ErrOutcomeUnknown) {
			return nil // decided by an earlier process
		}
		return err
	}
	if err := s.User(ctx, "write the lines"); err != nil {
		return err
	}
	for i := range 3 {
		read := fmt.Sprintf("read-%d", i)
		n, err := steps.Run(ctx, s, read, func(context.Context) (int, error) { w.ran(read); return 10 * i, nil })
		if err != nil {
			return err
		}
		if err := s.Set(ctx, "last", n); err != nil {
			return err
		}
		write := fmt.Sprintf("write-%d", i)
		_, err = steps.Run(ctx, s, write, func(context.Context) (string, error) {
			w.ran(write)
			w.write(write)
			return "written", nil
		}, steps.NotIdempotent())
		if err := unknown(err); err != nil {
			return err
		}
	}
	resp, err := steps.Model(ctx, s, func(context.Context) (cairn.ModelResponse, error) {
		w.ran("model")
		return cairn.ModelResponse{Model: "m", ToolCalls: []cairn.ToolCall{{Name: "note", Args: json.RawMessage(`{}`)}}}, nil
	})
	if err != nil {
		return err
	}
	for _, c := range resp.ToolCalls {
		_, err := steps.Tool(ctx, s, c, func(context.Context) (string, error) {
			w.ran("note")
			w.write("note")
			return "noted", nil
		}, steps.NotIdempotent())
		if err := unknown(err); err != nil {
			return err
		}
	}
	return s.Finish(ctx, "done")
}

// TestCrashAtEveryAppend is the deterministic form of the SIGKILL crash
// test (examples/steps): for every append of a reference run, a process
// dies there, once before the append reaches the store and once after it
// is stored but before the process hears so; a second process then runs
// the same loop to its end. Each crash point checks the rules exactly: no
// side effect happens twice; a step whose result was recorded is not run
// again; a not-idempotent step is reported as of unknown outcome precisely
// when the process died between its start and its result; and the history
// is the reference's, with that one step's result replaced by the
// recorded decision.
func TestCrashAtEveryAppend(t *testing.T) {
	ref := &testcheck.Recording{Store: testcheck.MemoryStore(t)}
	var rw world
	if err := crashLoop(t.Context(), ref, "ref", &rw); err != nil {
		t.Fatal(err)
	}
	refSteps := stepResults(t, loadEvents(t, ref, "ref"))
	batches := ref.Batches()
	points := 0
	for n := 1; n <= len(batches); n++ {
		batch := batches[n-1]
		for _, applied := range []bool{false, true} {
			t.Run(fmt.Sprintf("append%d-%s-applied=%v", n, strings.Join(kinds(t, batch), "+"), applied), func(t *testing.T) {
				points++
				mem := testcheck.MemoryStore(t)
				var w world
				if err := crashLoop(t.Context(), &testcheck.Dying{Store: mem, N: n, Applied: applied, Err: errLost}, "s", &w); err == nil {
					t.Fatalf("the process did not die at append %d", n)
				}
				if err := crashLoop(t.Context(), mem, "s", &w); err != nil {
					t.Fatalf("second process: %v", err)
				}
				events := loadEvents(t, mem, "s")
				st, err := cairn.Fold(events)
				if err != nil {
					t.Fatal(err)
				}
				if st.Status != cairn.StatusCompleted || st.Output != "done" {
					t.Fatalf("status %s, output %q", st.Status, st.Output)
				}
				testcheck.History(t, st.Messages)

				// Which step, if any, the crash left started without a
				// result: the process died after its start was stored
				// and before its result was.
				lost := ""
				switch {
				case applied && startOf(t, batch) != "":
					lost = startOf(t, batch) // stored; the process never heard so and never ran it
				case !applied && resultOf(t, batch) != "" && isStartedStep(refSteps, resultOf(t, batch)):
					lost = resultOf(t, batch) // ran; its result never reached the store
				}
				got := stepResults(t, events)
				want := slices.Clone(refSteps)
				for i := range want {
					if lost != "" && strings.HasPrefix(want[i], lost+" ") && want[i] != lost+" started" {
						want[i] = lost + " " + steps.CodeOutcomeUnknown
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("steps\n got %v\nwant %v", got, want)
				}

				// Side effects: each line at most once; a lost step's line
				// is there exactly when it ran.
				seen := map[string]bool{}
				for _, l := range w.lines {
					if seen[l] {
						t.Errorf("line %q written twice: %v", l, w.lines)
					}
					seen[l] = true
				}
				wantLines := len(rw.lines)
				if lost != "" && applied {
					wantLines-- // died before running it
				}
				if len(w.lines) != wantLines {
					t.Errorf("%d lines %v, want %d", len(w.lines), w.lines, wantLines)
				}

				// Runs: each function once, except an idempotent step (or
				// the model call) whose result the crash kept from the
				// store, which runs again.
				for name, r := range w.runs {
					want := 1
					if !applied && resultOf(t, batch) == name && !isStartedStep(refSteps, name) {
						want = 2
					}
					if r != want {
						t.Errorf("%s ran %d times, want %d", name, r, want)
					}
				}
			})
		}
	}
	if points != 2*len(batches) {
		t.Fatalf("%d crash points, want %d", points, 2*len(batches))
	}
}

// stepResults lists the steps of events as "name outcome": a custom
// step's result or error code, a tool result's output or
// CodeOutcomeUnknown, "model" for a model response, the starts as
// "name started".
func stepResults(t *testing.T, events []cairn.Event) []string {
	t.Helper()
	var out []string
	for _, e := range events {
		v, err := e.Decode()
		if err != nil {
			t.Fatal(err)
		}
		switch d := v.(type) {
		case *cairn.Custom:
			r, err := steps.DecodeRecord(d.Payload)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case d.Type == steps.TypeStarted:
				out = append(out, r.Name+" started")
			case r.Error != nil:
				out = append(out, r.Name+" "+r.Error.Code)
			default:
				out = append(out, r.Name+" "+string(r.Result))
			}
		case *cairn.ToolStarted:
			out = append(out, d.Name+" started")
		case *cairn.ToolResult:
			o := d.Output
			if d.IsError && strings.Contains(o, "outcome unknown") {
				o = steps.CodeOutcomeUnknown
			}
			out = append(out, d.Name+" "+o)
		case *cairn.ModelResponse:
			out = append(out, "model")
		}
	}
	return out
}

// isStartedStep reports whether the step name records its start.
func isStartedStep(refSteps []string, name string) bool {
	return slices.Contains(refSteps, name+" started")
}

// startOf names the step whose start batch records, or "".
func startOf(t *testing.T, batch []cairn.Event) string {
	for _, s := range stepResults(t, batch) {
		if name, ok := strings.CutSuffix(s, " started"); ok {
			return name
		}
	}
	return ""
}

// resultOf names the step (or "model") whose result batch records, or "".
func resultOf(t *testing.T, batch []cairn.Event) string {
	for _, s := range stepResults(t, batch) {
		if !strings.HasSuffix(s, " started") {
			name, _, _ := strings.Cut(s, " ")
			return name
		}
	}
	return ""
}
