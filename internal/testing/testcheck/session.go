package testcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/wire"
)

// Response is what the crash tests compare of a model response: its text,
// and each tool call as its ID, name and canonical arguments, with the side
// file's path written SIDE.
type Response struct {
	Text  string
	Calls []string
}

// Equal reports whether r and o have the same text and calls.
func (r Response) Equal(o Response) bool { return r.Text == o.Text && slices.Equal(r.Calls, o.Calls) }

// LoadValid loads a session and checks that its events form a valid
// memory (dense seqs from 1, every event valid) that folds into a state.
func LoadValid(t testing.TB, st cairn.Store, id string) ([]cairn.Event, *cairn.State) {
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

// Completed checks a session a crash test ran (LoadValid): completed with
// "all done", each model response once and equal to want (when given),
// every tool call answered exactly once and after it (History), and no
// line of the side file written twice (UniqueLines). It returns the model
// responses and the number of "outcome unknown" results.
func Completed(t testing.TB, st cairn.Store, id, side string, want []Response) ([]Response, int) {
	t.Helper()
	events, state := LoadValid(t, st, id)
	if state.Status != cairn.StatusCompleted || state.Output != "all done" {
		t.Fatalf("session %s: status %s, output %q; want completed, \"all done\"", id, state.Status, state.Output)
	}
	var got []Response
	calls, results := map[string]bool{}, map[string]bool{}
	unknown := 0
	for _, v := range Decode(t, events) {
		switch d := v.(type) {
		case *cairn.ModelResponse:
			r := Response{Text: d.Text}
			for _, c := range d.ToolCalls {
				if calls[c.ID] {
					t.Errorf("session %s: tool call %s asked for twice (a model response recorded twice)", id, c.ID)
				}
				calls[c.ID] = true
				args, _ := wire.Canonical(c.Args)
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
	if want != nil && !slices.EqualFunc(got, want, Response.Equal) {
		t.Errorf("session %s: model responses\n got %v\nwant %v", id, got, want)
	}
	History(t, state.Messages)
	UniqueLines(t, id, side)
	return got, unknown
}

// Decode returns the typed data of each event (cairn.Event.Decode), and
// fails t when one does not decode.
func Decode(t testing.TB, events []cairn.Event) []any {
	t.Helper()
	out := make([]any, len(events))
	for i, e := range events {
		v, err := e.Decode()
		if err != nil {
			t.Fatalf("event %d (seq %d): %v", i, e.Seq, err)
		}
		out[i] = v
	}
	return out
}

// SameEvents checks that the store holds exactly the events of the
// session's memory, in order and byte for byte.
func SameEvents(t testing.TB, stored, mem []cairn.Event) {
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

// SideLines returns the lines of the side file at path, none when it is
// missing.
func SideLines(t testing.TB, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(strings.Split(string(data), "\n"), func(s string) bool { return s == "" })
}
