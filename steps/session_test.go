package steps_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/steps"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/cairnhq/cairn/store/memory"
)

// testSessionVars: variables set outside a step are recorded with the
// next step, those set inside it with its result; a failed step changes
// no variable; and while the loop replays it sees each variable as the
// first run saw it at that point, not as the history ends.
func testSessionVars(t *testing.T, mem cairn.Store) {
	var seen []int
	loop := func(s *steps.Session) {
		t.Helper()
		seen = nil
		for i := range 3 {
			var n int
			if _, err := s.Var("n", &n); err != nil {
				t.Fatal(err)
			}
			seen = append(seen, n)
			if err := s.Set(t.Context(), "n", n+1); err != nil {
				t.Fatal(err)
			}
			_, err := steps.Run(t.Context(), s, "step", func(ctx context.Context) (int, error) {
				if err := s.Set(ctx, "inside", i); err != nil {
					return 0, err
				}
				if i == 1 {
					_ = s.Set(ctx, "failed", true)
					return 0, errors.New("no")
				}
				return i, nil
			})
			if (err != nil) != (i == 1) {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		if err := s.Set(t.Context(), "end", "yes"); err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(t.Context(), "ok"); err != nil {
			t.Fatal(err)
		}
	}
	loop(open(t, mem, "a"))
	if !slices.Equal(seen, []int{0, 1, 2}) {
		t.Fatalf("first run saw n = %v", seen)
	}
	want := []string{"run.started", steps.TypeStep, "state.set", steps.TypeStep, "state.set", steps.TypeStep, "state.set", "run.finished", "state.set"}
	if k := kinds(t, loadEvents(t, mem, "a")); !slices.Equal(k, want) {
		t.Fatalf("events %v, want %v", k, want)
	}
	st, err := cairn.Fold(loadEvents(t, mem, "a"))
	if err != nil {
		t.Fatal(err)
	}
	wantVars := map[string]string{"n": "3", "inside": "2", "end": `"yes"`}
	if len(st.Variables) != len(wantVars) {
		t.Errorf("variables %s, want %v", st.Variables, wantVars)
	}
	for k, v := range wantVars {
		if string(st.Variables[k]) != v {
			t.Errorf("variable %s = %s, want %s", k, st.Variables[k], v)
		}
	}
	s := open(t, mem, "a")
	loop(s)
	if !slices.Equal(seen, []int{0, 1, 2}) {
		t.Fatalf("the re-run saw n = %v, want what the first run saw", seen)
	}
	if n := len(loadEvents(t, mem, "a")); n != len(want) {
		t.Errorf("the re-run appended: %d events", n)
	}
	if got := s.State().Variables; !reflect.DeepEqual(got, st.Variables) {
		t.Errorf("state at the end of the replay %s, want %s", got, st.Variables)
	}
	var del bool
	if err := s.Delete(t.Context(), "end"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.Var("end", &del); ok {
		t.Error("a deleted variable is still set")
	}
	if err := s.Set(t.Context(), "", 1); err == nil {
		t.Error("a variable without a name: no error")
	}
	if err := s.Set(t.Context(), "ch", make(chan int)); err == nil {
		t.Error("a value that does not encode: no error")
	}
}

// TestSession_SetAfterStep: Set with a step's context after the step
// returned is refused.
func TestSession_SetAfterStep(t *testing.T) {
	s := open(t, testcheck.MemoryStore(t), "a")
	var kept context.Context
	if _, err := steps.Run(t.Context(), s, "x", func(ctx context.Context) (int, error) { kept = ctx; return 1, nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(kept, "late", 1); err == nil || !strings.Contains(err.Error(), "has returned") {
		t.Errorf("got %v, want refused", err)
	}
}

// point is a result type with nested values, to round trip.
type point struct {
	X, Y  float64
	Label string
	Tags  []string
	At    time.Time
	Meta  map[string]int
	Next  *point
	Raw   json.RawMessage
	Bytes []byte
}

// testRunTypesRoundTrip: the result a re-run returns equals, for each
// type, the one the first run returned (which is itself the result as
// recorded, decoded).
func testRunTypesRoundTrip(t *testing.T, mem cairn.Store) {
	at := time.Date(2026, 12, 1, 10, 11, 12, 123456789, time.FixedZone("X", 3600))
	p := point{X: 1.5, Y: -2, Label: "é ✓ \x00", Tags: []string{"a"}, At: at, Meta: map[string]int{"k": 1},
		Next: &point{Label: "inner"}, Raw: json.RawMessage(`{"z":[1,2]}`), Bytes: []byte{0, 1, 255}}
	type results struct {
		P   point
		I   int64
		F   float64
		S   []int
		M   map[string]any
		Nil *point
		B   bool
		T   time.Time
	}
	loop := func(s *steps.Session) results {
		var r results
		var err error
		must := func(e error) {
			if e != nil && err == nil {
				err = e
			}
		}
		var e error
		r.P, e = steps.Run(t.Context(), s, "p", func(context.Context) (point, error) { return p, nil })
		must(e)
		r.I, e = steps.Run(t.Context(), s, "i", func(context.Context) (int64, error) { return math.MaxInt64, nil })
		must(e)
		r.F, e = steps.Run(t.Context(), s, "f", func(context.Context) (float64, error) { return 0.1 + 0.2, nil })
		must(e)
		r.S, e = steps.Run(t.Context(), s, "s", func(context.Context) ([]int, error) { return nil, nil })
		must(e)
		r.M, e = steps.Run(t.Context(), s, "m", func(context.Context) (map[string]any, error) { return map[string]any{"n": 1.0, "s": "x"}, nil })
		must(e)
		r.Nil, e = steps.Run(t.Context(), s, "nil", func(context.Context) (*point, error) { return nil, nil })
		must(e)
		r.B, e = steps.Run(t.Context(), s, "b", func(context.Context) (bool, error) { return true, nil })
		must(e)
		r.T, e = steps.Run(t.Context(), s, "t", func(context.Context) (time.Time, error) { return time.Now(), nil })
		must(e)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := loop(open(t, mem, "a"))
	again := loop(open(t, mem, "a"))
	if !reflect.DeepEqual(first, again) {
		t.Fatalf("first run %+v\nre-run    %+v", first, again)
	}
	if !first.P.At.Equal(at) || first.I != math.MaxInt64 || first.F != 0.1+0.2 || !bytes.Equal(first.P.Bytes, p.Bytes) {
		t.Errorf("values changed on the way: %+v", first)
	}
	if first.T.Equal(time.Time{}) || !reflect.DeepEqual(first.T, again.T) {
		t.Errorf("time: %v then %v; want the same value (without a monotonic reading) both times", first.T, again.T)
	}
}

// testRunResultDoesNotEncode: a result that does not encode, or does not
// decode back into its type, is an error and is not recorded.
func testRunResultDoesNotEncode(t *testing.T, mem cairn.Store) {
	s := open(t, mem, "a")
	if _, err := steps.Run(t.Context(), s, "ch", func(context.Context) (chan int, error) { return make(chan int), nil }); err == nil || !strings.Contains(err.Error(), "not recorded") {
		t.Errorf("a channel: %v", err)
	}
	if _, err := steps.Run(t.Context(), s, "oneway", func(context.Context) (oneWay, error) { return oneWay{}, nil }); err == nil || !strings.Contains(err.Error(), "decode back") {
		t.Errorf("a type that does not decode back: %v", err)
	}
	if n := len(loadEvents(t, mem, "a")); n != 0 {
		t.Errorf("%d events recorded, want none", n)
	}
}

// oneWay encodes as a JSON string and decodes only from a number.
type oneWay struct{}

func (oneWay) MarshalJSON() ([]byte, error) { return []byte(`"text"`), nil }
func (*oneWay) UnmarshalJSON(b []byte) error {
	if b[0] == '"' {
		return errors.New("want a number")
	}
	return nil
}

// testModelTool: a model call and the tool calls it asks for, recorded as
// model.response, tool.started and tool.result: the history a model sees
// is valid, and a re-run returns the recorded response and outputs
// without calling anything.
func testModelTool(t *testing.T, mem cairn.Store) {
	calls := map[string]int{}
	loop := func(s *steps.Session) []string {
		t.Helper()
		var out []string
		if err := s.System(t.Context(), "You are terse."); err != nil {
			t.Fatal(err)
		}
		if err := s.User(t.Context(), "What is 6*7? Then note it."); err != nil {
			t.Fatal(err)
		}
		resp, err := steps.Model(t.Context(), s, func(context.Context) (cairn.ModelResponse, error) {
			calls["model"]++
			return cairn.ModelResponse{Model: "test-model", ToolCalls: []cairn.ToolCall{
				{Name: "calc", Args: json.RawMessage(`{"expression":"6*7"}`)},
				{Name: "note", Args: json.RawMessage(`{"text":"42"}`)},
			}, Usage: cairn.Usage{InputTokens: 10, OutputTokens: 5}}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range resp.ToolCalls {
			opts := []steps.Option{}
			if c.Name == "note" {
				opts = append(opts, steps.NotIdempotent())
			}
			o, err := steps.Tool(t.Context(), s, c, func(ctx context.Context) (string, error) {
				calls[c.Name]++
				if c.Name == "note" {
					return "", errors.New("notebook full")
				}
				return "42", s.Set(ctx, "answer", 42)
			}, opts...)
			if err != nil {
				o = "error: " + err.Error()
			}
			out = append(out, c.ID+" "+o)
		}
		resp, err = steps.Model(t.Context(), s, func(context.Context) (cairn.ModelResponse, error) {
			calls["model"]++
			return cairn.ModelResponse{Text: "42. The notebook is full."}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(t.Context(), resp.Text); err != nil {
			t.Fatal(err)
		}
		return append(out, resp.Text)
	}
	first := loop(open(t, mem, "a"))
	again := loop(open(t, mem, "a"))
	if !slices.Equal(first, again) {
		t.Fatalf("first %v\nre-run %v", first, again)
	}
	if calls["model"] != 2 || calls["calc"] != 1 || calls["note"] != 1 {
		t.Errorf("calls %v, want 2 model calls and one of each tool", calls)
	}
	want := []string{"run.started", "message.system", "message.user", "model.response", "tool.result", "state.set",
		"tool.started", "tool.result", "model.response", "run.finished"}
	events := loadEvents(t, mem, "a")
	if k := kinds(t, events); !slices.Equal(k, want) {
		t.Fatalf("events %v, want %v", k, want)
	}
	st, err := cairn.Fold(events)
	if err != nil {
		t.Fatal(err)
	}
	testcheck.History(t, st.Messages)
	if st.Status != cairn.StatusCompleted || st.Output != "42. The notebook is full." || len(st.Pending) != 0 || st.Usage.InputTokens != 10 || string(st.Variables["answer"]) != "42" {
		t.Errorf("state: status %s, output %q, pending %v, usage %v, vars %s", st.Status, st.Output, st.Pending, st.Usage, st.Variables)
	}
	if !strings.Contains(first[1], "error: notebook full") {
		t.Errorf("the tool's error: %v", first)
	}
	info, err := mem.Stat(t.Context(), "a")
	if err != nil || info.FirstMessage != "What is 6*7? Then note it." || info.Steps != 4 {
		t.Errorf("info %+v %v: want the first message and 4 steps", info, err)
	}
}

// TestTool_Refused: a tool call no recorded model response asked for, and
// the options a tool step does not take.
func TestTool_Refused(t *testing.T) {
	s := open(t, testcheck.MemoryStore(t), "a")
	out := func(context.Context) (string, error) { return "x", nil }
	if _, err := steps.Tool(t.Context(), s, cairn.ToolCall{ID: "c1", Name: "calc"}, out); err == nil || !strings.Contains(err.Error(), "no model response") {
		t.Errorf("unasked call: %v", err)
	}
	if _, err := steps.Tool(t.Context(), s, cairn.ToolCall{Name: "calc"}, out); err == nil {
		t.Error("a call without ID: no error")
	}
	if _, err := steps.Tool(t.Context(), s, cairn.ToolCall{ID: "c1", Name: "calc"}, out, steps.NotIdempotent(), steps.Retryable()); err == nil {
		t.Error("NotIdempotent and Retryable: no error")
	}
}

// testModelErrorNotRecorded: a failed model call is not recorded; the
// loop that ends the run after it replays to the recorded end, where the
// model call meets ErrFinished and Fail returns nil.
func testModelErrorNotRecorded(t *testing.T, mem cairn.Store) {
	boom := errors.New("model timeout")
	loop := func(s *steps.Session) error {
		_, err := steps.Model(t.Context(), s, func(context.Context) (cairn.ModelResponse, error) { return cairn.ModelResponse{}, boom })
		if err == nil {
			t.Fatal("no error")
		}
		return s.Fail(t.Context(), err)
	}
	if err := loop(open(t, mem, "a")); err != nil {
		t.Fatal(err)
	}
	if k := kinds(t, loadEvents(t, mem, "a")); !slices.Equal(k, []string{"run.started", "run.finished"}) {
		t.Fatalf("events %v", k)
	}
	s := open(t, mem, "a")
	_, err := steps.Model(t.Context(), s, func(context.Context) (cairn.ModelResponse, error) { return cairn.ModelResponse{}, boom })
	if !errors.Is(err, steps.ErrFinished) || !strings.Contains(err.Error(), "model timeout") {
		t.Fatalf("re-run: %v, want ErrFinished naming the recorded failure", err)
	}
	if err := s.Fail(t.Context(), err); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(t.Context(), "x"); !errors.Is(err, steps.ErrFinished) {
		t.Errorf("Finish after the end: %v", err)
	}
}

// testSessionBegin: steps after the end of a run are refused until Begin
// starts the next one; Begin is refused while a run is unfinished; the
// replay covers the last run only.
func testSessionBegin(t *testing.T, mem cairn.Store) {
	var c counter
	s := open(t, mem, "chat")
	if _, err := steps.Run(t.Context(), s, "turn1", c.fn("turn1", 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Begin(t.Context()); err == nil || !strings.Contains(err.Error(), "has not finished") {
		t.Fatalf("Begin during a run: %v", err)
	}
	if err := s.Finish(t.Context(), "one"); err != nil {
		t.Fatal(err)
	}
	if _, err := steps.Run(t.Context(), s, "turn2", c.fn("turn2", 2)); !errors.Is(err, steps.ErrFinished) {
		t.Fatalf("a step after Finish: %v", err)
	}
	if err := s.Begin(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := steps.Run(t.Context(), s, "turn2", c.fn("turn2", 2)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// A new process replays the second run, unfinished, from its start.
	s = open(t, mem, "chat")
	if s.Finished() {
		t.Fatal("finished")
	}
	if v, err := steps.Run(t.Context(), s, "turn2", c.fn("turn2", 2)); err != nil || v != 2 || c.get("turn2") != 1 {
		t.Fatalf("replay: %v %v, ran %d", v, err, c.get("turn2"))
	}
	if err := s.Finish(t.Context(), "two"); err != nil {
		t.Fatal(err)
	}
	// A finished session: Begin without replaying.
	s = open(t, mem, "chat")
	if !s.Finished() || !s.Replaying() {
		t.Fatalf("finished %v replaying %v", s.Finished(), s.Replaying())
	}
	if err := s.Begin(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s.Replaying() {
		t.Error("replaying after Begin")
	}
	runs := 0
	for _, e := range loadEvents(t, mem, "chat") {
		if e.Kind == cairn.KindRunStarted {
			runs++
		}
	}
	if runs != 3 {
		t.Errorf("%d runs, want 3", runs)
	}
}

// TestOpen_Sealed: an encrypted session read without its key is refused,
// naming the session, and nothing is appended after the ciphertext.
func TestOpen_Sealed(t *testing.T) {
	inner := testcheck.MemoryStore(t)
	enc := testcheck.Sealed(t, inner, 9)
	s := open(t, enc, "enc")
	if _, err := steps.Run(t.Context(), s, "secret", func(context.Context) (string, error) { return "the vault code is 4711", nil }); err != nil {
		t.Fatal(err)
	}
	for _, e := range loadEvents(t, inner, "enc") {
		if strings.Contains(string(e.Data), "4711") {
			t.Fatalf("plaintext in the backend: %s", e.Data)
		}
	}
	v, err := steps.Run(t.Context(), open(t, enc, "enc"), "secret", func(context.Context) (string, error) { return "", nil })
	if err != nil || v != "the vault code is 4711" {
		t.Fatalf("with the key: %q %v", v, err)
	}
	_, err = steps.Open(t.Context(), inner, "enc", steps.Options{})
	var se *crypt.SealedError
	if !errors.As(err, &se) || se.Session != "enc" {
		t.Fatalf("without the key: %v, want a *crypt.SealedError", err)
	}
	if n := len(loadEvents(t, inner, "enc")); n != 2 {
		t.Errorf("%d events, want 2", n)
	}
}

// TestSession_ForkExportDelete: a session of steps forks, exports and
// erases as any session does: a fork in the middle of the run replays the
// steps before the fork point and runs the rest; an export and import in
// the cairn format replays the same; a deleted session's next write is
// refused, and opening the ID again starts from nothing.
func TestSession_ForkExportDelete(t *testing.T) {
	ctx := t.Context()
	mem := testcheck.MemoryStore(t)
	var c counter
	loop := func(s *steps.Session) error {
		for _, name := range []string{"a", "b", "c"} {
			if _, err := steps.Run(ctx, s, name, c.fn(name, len(name))); err != nil {
				return err
			}
		}
		return s.Finish(ctx, "done")
	}
	if err := loop(open(t, mem, "orig")); err != nil {
		t.Fatal(err)
	}
	events := loadEvents(t, mem, "orig")

	// Fork after step a (seq 2): a replays, b and c run.
	forked, err := sessions.ForkEvents(events, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := sessions.Write(ctx, mem, cairn.SessionMeta{ID: "fork"}, forked); err != nil {
		t.Fatal(err)
	}
	if err := loop(open(t, mem, "fork")); err != nil {
		t.Fatal(err)
	}
	if c.get("a") != 1 || c.get("b") != 2 || c.get("c") != 2 {
		t.Errorf("runs %v, want a once, b and c again in the fork", c.n)
	}

	// Export and import: everything replays.
	m, err := cairn.NewMemory(events...)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := sessions.Export(&buf, sessions.Cairn, m); err != nil {
		t.Fatal(err)
	}
	imported, _, err := sessions.Import(buf.Bytes(), sessions.Cairn, sessions.ImportOptions{ID: "copy"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sessions.Write(ctx, mem, cairn.SessionMeta{ID: "copy"}, imported.Events()); err != nil {
		t.Fatal(err)
	}
	if err := loop(open(t, mem, "copy")); err != nil {
		t.Fatal(err)
	}
	if c.get("a") != 1 || c.get("b") != 2 {
		t.Errorf("runs %v after the import's replay, want no new run", c.n)
	}

	// Delete: the open session's next write is refused; a new Open starts over.
	s := open(t, mem, "del")
	if _, err := steps.Run(ctx, s, "a", c.fn("a", 1)); err != nil {
		t.Fatal(err)
	}
	if err := mem.Delete(ctx, "del"); err != nil {
		t.Fatal(err)
	}
	if _, err := steps.Run(ctx, s, "b", c.fn("b", 1)); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("write after delete: %v, want ErrNotFound", err)
	}
	if _, err := mem.Stat(ctx, "del"); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("the write brought the session back: %v", err)
	}
	if err := loop(open(t, mem, "del")); err != nil || c.get("a") != 3 {
		t.Fatalf("open after delete: %v, a ran %d times; want a fresh run", err, c.get("a"))
	}
}

// TestSession_TTL: a session of steps expires with the store's TTL as any
// session does: once expired, its next write is refused and opening the ID
// again starts from nothing.
func TestSession_TTL(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	st, err := memory.New(cairn.StoreOptions{TTL: time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var c counter
	s := open(t, st, "t")
	if _, err := steps.Run(ctx, s, "a", c.fn("a", 1)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	if _, err := steps.Run(ctx, s, "b", c.fn("b", 1)); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("write after expiry: %v, want ErrNotFound", err)
	}
	if _, err := steps.Run(ctx, open(t, st, "t"), "a", c.fn("a", 1)); err != nil || c.get("a") != 2 {
		t.Fatalf("after expiry: %v, a ran %d times; want a fresh run", err, c.get("a"))
	}
}
