package sessions_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store/memory"
)

// history is a run that asks for a tool, gets its result and answers.
func history(t testing.TB) []cairn.Event {
	call := cairn.ToolCall{ID: "c1", Name: "calc", Args: []byte(`{"expression":"6*7"}`)}
	events := []cairn.Event{
		cairn.MustEvent(cairn.KindRunStarted, "r1", cairn.RunStarted{RunID: "r1", Agent: "a", Reset: true}),
		cairn.MustEvent(cairn.KindMemoryReset, "r1", cairn.MemoryReset{}),
		cairn.MustEvent(cairn.KindMessageUser, "r1", cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: "calc 6*7"}}}),
		cairn.MustEvent(cairn.KindModelResponse, "r1", cairn.ModelResponse{ToolCalls: []cairn.ToolCall{call}, Model: "m", FinishReason: "tool_calls"}),
		cairn.MustEvent(cairn.KindToolResult, "r1", cairn.ToolResult{CallID: "c1", Name: "calc", Output: "42"}),
		cairn.MustEvent(cairn.KindModelResponse, "r1", cairn.ModelResponse{Text: "42", Model: "m", FinishReason: "stop"}),
		cairn.MustEvent(cairn.KindRunFinished, "r1", cairn.RunFinished{Status: cairn.StatusCompleted, Output: "42"}),
	}
	for i := range events {
		events[i].Seq = int64(i + 1)
	}
	return events
}

func TestForkEvents(t *testing.T) {
	events := history(t)
	for _, tc := range []struct {
		at      int64
		added   bool // a run.interrupted{forked} follows
		pending int
		status  cairn.Status
	}{
		{at: 1, added: true, status: cairn.StatusInterrupted},
		{at: 4, added: true, pending: 1, status: cairn.StatusInterrupted},
		{at: 5, added: true, status: cairn.StatusInterrupted},
		{at: 6, added: true, status: cairn.StatusInterrupted}, // the answer without the run's end
		{at: 7, status: cairn.StatusCompleted},
		{at: 0, status: cairn.StatusCompleted}, // the whole history
	} {
		t.Run(fmt.Sprint(tc.at), func(t *testing.T) {
			got, err := sessions.ForkEvents(events, tc.at)
			if err != nil {
				t.Fatal(err)
			}
			kept := tc.at
			if kept == 0 {
				kept = int64(len(events))
			}
			want := kept
			if tc.added {
				want++
			}
			if int64(len(got)) != want {
				t.Fatalf("%d events, want %d", len(got), want)
			}
			st, err := cairn.Fold(got)
			if err != nil {
				t.Fatalf("the fork does not fold: %v", err)
			}
			if st.Status != tc.status || len(st.Pending) != tc.pending {
				t.Errorf("status %s with %d pending, want %s with %d", st.Status, len(st.Pending), tc.status, tc.pending)
			}
			if tc.added {
				last := got[len(got)-1]
				v, err := last.Decode()
				if err != nil {
					t.Fatal(err)
				}
				ri, ok := v.(*cairn.RunInterrupted)
				if !ok || ri.Reason != cairn.InterruptForked || last.Run != "r1" || len(ri.Pending) != tc.pending {
					t.Errorf("the added event: %s %+v in run %q", last.Kind, v, last.Run)
				}
			}
		})
	}
	for _, at := range []int64{-1, 8} {
		_, err := sessions.ForkEvents(events, at)
		if re, ok := errors.AsType[*sessions.RangeError](err); !ok || re.At != at || re.Last != 7 {
			t.Errorf("at %d: %v, want a RangeError for 1..7", at, err)
		}
	}
}

func TestFork(t *testing.T) {
	st, err := memory.New(cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	if err := sessions.Write(ctx, st, cairn.SessionMeta{ID: "a", Labels: map[string]string{"team": "x"}}, history(t)); err != nil {
		t.Fatal(err)
	}
	f, err := sessions.Fork(ctx, st, "a", sessions.ForkOptions{At: 6, As: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if f.ID != "b" || f.From != "a" || f.At != 6 || len(f.Events) != 7 {
		t.Errorf("Fork = %+v", f)
	}
	rec, err := st.Load(ctx, "b", 0)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Info.Status != cairn.StatusInterrupted || rec.Info.Labels["forked_from"] != "a" || rec.Info.Labels["team"] != "x" || rec.Info.LastSeq != 7 {
		t.Errorf("the fork's info: %+v", rec.Info)
	}
	if _, err := sessions.Fork(ctx, st, "a", sessions.ForkOptions{As: "b"}); !errors.Is(err, cairn.ErrExists) {
		t.Errorf("a fork onto an existing ID: %v, want ErrExists", err)
	}
	if _, err := sessions.Fork(ctx, st, "nope", sessions.ForkOptions{}); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("a fork of a missing session: %v, want ErrNotFound", err)
	}
	if _, err := sessions.Fork(ctx, st, "a", sessions.ForkOptions{As: "../x"}); !errors.Is(err, cairn.ErrInvalidID) {
		t.Errorf("a fork as a bad ID: %v, want ErrInvalidID", err)
	}
	if _, err := sessions.Fork(ctx, st, "a", sessions.ForkOptions{At: 9, As: "c"}); err == nil {
		t.Error("a fork past the last seq succeeded")
	}
	if _, err := st.Load(ctx, "c", 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("a refused fork left session c: %v", err)
	}
}

// A fork at the model's answer, before the run's end was recorded, is a
// whole session: interrupted, and its resume finishes with that answer.
func ExampleFork() {
	ctx := context.Background()
	st, _ := memory.New(cairn.StoreOptions{})
	defer st.Close()
	_ = sessions.Write(ctx, st, cairn.SessionMeta{ID: "a"}, history(nil))
	f, err := sessions.Fork(ctx, st, "a", sessions.ForkOptions{At: 6, As: "what-if"})
	if err != nil {
		fmt.Println(err)
		return
	}
	rec, _ := st.Load(ctx, f.ID, 0)
	fmt.Println(f.ID, "forked from", f.From, "at", f.At, "is", rec.Info.Status)
	// Output: what-if forked from a at 6 is interrupted
}
