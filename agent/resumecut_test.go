package agent_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/sessions"
)

// TestAgent_ResumeAtEveryEvent cuts a reference run's history after each
// of its events, between two events of one append too, as a fork (or a
// history written by another program) can leave it, and resumes the cut:
// once as it stands and once made whole as sessions.ForkEvents makes a
// fork. Whatever the cut, the resume asks the model exactly for the
// responses the cut lacks (never again for one it holds, the final
// answer included), runs no side effect twice, answers a started call
// without a result OutcomeUnknown, and ends with the reference's
// responses.
func TestAgent_ResumeAtEveryEvent(t *testing.T) {
	side := filepath.Join(t.TempDir(), "side.txt")
	ref := testcheck.MemoryStore(t)
	res, refCalls, err := crashPointRun(t, ref, side, "ref", false)
	if err != nil || res.Status != cairn.StatusCompleted {
		t.Fatalf("reference run: %+v %v", res, err)
	}
	events := loadEvents(t, ref, "ref")
	refResponses := responsesOf(t, events, side)
	if refCalls != len(refResponses) {
		t.Fatalf("reference run: %d model calls for %d responses", refCalls, len(refResponses))
	}
	for k := 1; k <= len(events); k++ {
		for _, fork := range []bool{false, true} {
			t.Run(fmt.Sprintf("seq%d-%s-fork=%v", k, events[k-1].Kind, fork), func(t *testing.T) {
				cut := events[:k]
				if fork {
					if cut, err = sessions.ForkEvents(events, int64(k)); err != nil {
						t.Fatal(err)
					}
				}
				st := testcheck.MemoryStore(t)
				if err := sessions.Write(t.Context(), st, cairn.SessionMeta{ID: "s"}, cut); err != nil {
					t.Fatal(err)
				}
				lines, unknown := sideEffectsOf(t, cut)
				if err := os.WriteFile(side, []byte(lines), 0o600); err != nil {
					t.Fatal(err)
				}
				res, calls, err := crashPointRun(t, st, side, "s", true)
				if err != nil || res.Status != cairn.StatusCompleted || res.Output != "all done" {
					t.Fatalf("resume: %+v %v", res, err)
				}
				if want := refCalls - len(responsesOf(t, cut, side)); calls != want {
					t.Errorf("%d model calls on resume, want %d", calls, want)
				}
				got := loadEvents(t, st, "s")
				if r := responsesOf(t, got, side); !slices.Equal(r, refResponses) {
					t.Errorf("model responses\n got %v\nwant %v", r, refResponses)
				}
				if n := unknownResults(t, got); n != unknown {
					t.Errorf("%d outcome-unknown results, want %d", n, unknown)
				}
				testcheck.UniqueLines(t, "s", side)
				if lines := strings.Count(readFile(t, side), "\n"); lines != 6 {
					t.Errorf("%d side effects, want 6", lines)
				}
				state, err := cairn.Fold(got)
				if err != nil {
					t.Fatal(err)
				}
				testcheck.History(t, state.Messages)
			})
		}
	}
}

// sideEffectsOf returns the lines the append_file calls of a cut history
// wrote (a call with a result, and a started call without one, taken as
// having run: the worse case), and how many calls are started without a
// result.
func sideEffectsOf(t *testing.T, events []cairn.Event) (string, int) {
	t.Helper()
	lines := map[string]string{}
	var order []string
	for _, r := range decoded[cairn.ModelResponse](t, events, cairn.KindModelResponse) {
		for _, c := range r.ToolCalls {
			if c.Name == "append_file" {
				var args struct{ Line string }
				if err := json.Unmarshal(c.Args, &args); err != nil {
					t.Fatal(err)
				}
				lines[c.ID] = args.Line
				order = append(order, c.ID)
			}
		}
	}
	done := map[string]bool{}
	for _, r := range decoded[cairn.ToolResult](t, events, cairn.KindToolResult) {
		done[r.CallID] = true
	}
	started := map[string]bool{}
	for _, s := range decoded[cairn.ToolStarted](t, events, cairn.KindToolStarted) {
		started[s.CallID] = true
	}
	var b strings.Builder
	unknown := 0
	for _, id := range order {
		if done[id] || started[id] {
			b.WriteString(lines[id] + "\n")
		}
		if started[id] && !done[id] {
			unknown++
		}
	}
	return b.String(), unknown
}
