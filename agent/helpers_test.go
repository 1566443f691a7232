package agent_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/script"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// scripted returns a script model of steps.
func scripted(t *testing.T, steps ...script.Step) *script.Model {
	t.Helper()
	m, err := script.New(script.Script{Steps: steps})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// call is a script tool call with arguments given as JSON text.
func call(name, args string) script.Call {
	return script.Call{Name: name, Arguments: json.RawMessage(args)}
}

// batchKinds returns the kinds of each append r recorded.
func batchKinds(r *testcheck.Recording) [][]cairn.Kind {
	var out [][]cairn.Kind
	for _, b := range r.Batches() {
		out = append(out, testcheck.Kinds(b))
	}
	return out
}

// loadEvents returns the session's events as the store holds them.
func loadEvents(t *testing.T, st cairn.Store, id string) []cairn.Event {
	t.Helper()
	rec, err := st.Load(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Events
}

// decoded returns the typed data of the events of kind k.
func decoded[T any](t *testing.T, events []cairn.Event, k cairn.Kind) []*T {
	t.Helper()
	var out []*T
	for _, e := range events {
		if e.Kind != k {
			continue
		}
		v, err := e.Decode()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v.(*T))
	}
	return out
}

// unknownResults counts the tool results of events whose outcome is
// unknown (agent.OutcomeUnknown).
func unknownResults(t *testing.T, events []cairn.Event) int {
	t.Helper()
	n := 0
	for _, r := range decoded[cairn.ToolResult](t, events, cairn.KindToolResult) {
		if r.Output == agent.OutcomeUnknown {
			n++
		}
	}
	return n
}

// checkReplay checks that the session's incrementally folded state equals
// the state folded from the store's events.
func checkReplay(t *testing.T, s *agent.Session, st cairn.Store) {
	t.Helper()
	want, err := cairn.Fold(loadEvents(t, st, s.ID()))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.State().Snapshot()
	b, _ := want.Snapshot()
	if string(a) != string(b) {
		t.Errorf("state folded while running differs from the replayed one:\n got %s\nwant %s", a, b)
	}
}

// funcModel is a model whose answers a test writes as a function.
type funcModel func(req *provider.Request) (*provider.Response, error)

func (f funcModel) ID() string { return "func" }
func (f funcModel) Generate(_ context.Context, req *provider.Request) (*provider.Response, error) {
	return f(req)
}
