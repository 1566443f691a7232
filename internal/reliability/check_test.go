package reliability

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/testcheck"
)

// response is what the crash test compares of a model response.
type response struct {
	Text  string
	Calls []string
}

func (r response) equal(o response) bool { return r.Text == o.Text && slices.Equal(r.Calls, o.Calls) }

// loadValid loads a session and checks that its events form a valid
// memory (dense seqs from 1, every event valid) that folds into a state.
func loadValid(t *testing.T, st cairn.Store, id string) ([]cairn.Event, *cairn.State) {
	t.Helper()
	rec, err := st.Load(t.Context(), id, 0)
	if err != nil {
		t.Fatalf("load %s: %v", id, err)
	}
	mem, err := cairn.NewMemory(rec.Events...)
	if err != nil {
		t.Fatalf("session %s: the stored events are not a valid memory: %v", id, err)
	}
	state, err := mem.State()
	if err != nil {
		t.Fatalf("session %s: fold: %v", id, err)
	}
	return rec.Events, state
}

// statusOf returns the stored status of a session, or "" when the store
// does not hold it.
func statusOf(t *testing.T, st cairn.Store, id string) (cairn.Status, string) {
	t.Helper()
	rec, err := st.Load(t.Context(), id, 0)
	switch {
	case errors.Is(err, cairn.ErrNotFound):
		return "", "no session"
	case err != nil:
		t.Fatalf("load %s: %v", id, err)
	case len(rec.Events) == 0:
		return cairn.StatusNew, "no event"
	}
	mem, err := cairn.NewMemory(rec.Events...)
	if err != nil {
		t.Fatalf("session %s: %v", id, err)
	}
	state, err := mem.State()
	if err != nil {
		t.Fatalf("session %s: fold: %v", id, err)
	}
	return state.Status, string(rec.Events[len(rec.Events)-1].Kind)
}

// checkCompleted checks a session a crash test ran: completed with "all
// done", each model response once and equal to want (when given), every
// tool call answered exactly once and after it, and no line of the side
// file written twice. It returns the model responses and the number of
// "outcome unknown" results.
func checkCompleted(t *testing.T, st cairn.Store, id, side string, want []response) ([]response, int) {
	t.Helper()
	events, state := loadValid(t, st, id)
	if state.Status != cairn.StatusCompleted || state.Output != "all done" {
		t.Fatalf("session %s: status %s, output %q; want completed, \"all done\"", id, state.Status, state.Output)
	}
	var got []response
	calls, results := map[string]bool{}, map[string]bool{}
	unknown := 0
	for _, e := range events {
		v, err := e.Decode()
		if err != nil {
			t.Fatal(err)
		}
		switch d := v.(type) {
		case *cairn.ModelResponse:
			r := response{Text: d.Text}
			for _, c := range d.ToolCalls {
				if calls[c.ID] {
					t.Errorf("session %s: tool call %s asked for twice (a model response recorded twice)", id, c.ID)
				}
				calls[c.ID] = true
				args, _ := cairn.Canonical(c.Args)
				r.Calls = append(r.Calls, c.ID+" "+c.Name+" "+strings.ReplaceAll(string(args), side, "SIDE"))
			}
			got = append(got, r)
		case *cairn.ToolResult:
			if results[d.CallID] {
				t.Errorf("session %s: tool call %s has two results", id, d.CallID)
			}
			results[d.CallID] = true
			if d.Output == agent.OutcomeUnknown {
				unknown++
			}
		}
	}
	if want != nil && !slices.EqualFunc(got, want, response.equal) {
		t.Errorf("session %s: model responses\n got %v\nwant %v", id, got, want)
	}
	testcheck.History(t, state.Messages)
	testcheck.UniqueLines(t, id, side)
	return got, unknown
}

// sameEvents checks that the store holds exactly the events of mem, in
// order and byte for byte.
func sameEvents(t *testing.T, stored, mem []cairn.Event) {
	t.Helper()
	if len(stored) != len(mem) {
		t.Fatalf("the store holds %d events, the session's memory %d", len(stored), len(mem))
	}
	for i := range mem {
		a, _ := json.Marshal(stored[i])
		b, _ := json.Marshal(mem[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("event %d differs:\nstore  %s\nmemory %s", i, a, b)
		}
	}
}
