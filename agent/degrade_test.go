package agent_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/provider/script"
	"github.com/cairnhq/cairn/store/sqlite"
)

// outageStore is a real SQLite store that a test can take down (by closing
// it: every call then fails with the store's own ErrClosed) and bring back
// (by opening the database file again), to fail mid-run.
type outageStore struct {
	t       *testing.T
	path    string
	mu      sync.Mutex
	st      *sqlite.Store
	batches [][]cairn.Kind // successful appends
}

func newOutageStore(t *testing.T) *outageStore {
	o := &outageStore{t: t, path: filepath.Join(t.TempDir(), "cairn.db")}
	o.restore()
	t.Cleanup(func() { o.cur().Close() })
	return o
}

func (o *outageStore) cur() *sqlite.Store {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.st
}

func (o *outageStore) outage() {
	if err := o.cur().Close(); err != nil {
		o.t.Errorf("close: %v", err)
	}
}

func (o *outageStore) restore() {
	st, err := sqlite.Open(context.Background(), o.path, sqlite.Options{})
	if err != nil {
		o.t.Fatal(err)
	}
	o.mu.Lock()
	o.st = st
	o.mu.Unlock()
}

// down turns the closed store's ErrClosed into what a client sees of a
// server that went away: an outage (cairn.ErrUnavailable).
func down(err error) error {
	if errors.Is(err, cairn.ErrClosed) {
		return fmt.Errorf("%w: %w", cairn.ErrUnavailable, err)
	}
	return err
}

func (o *outageStore) Create(ctx context.Context, m cairn.SessionMeta) error {
	return down(o.cur().Create(ctx, m))
}
func (o *outageStore) Append(ctx context.Context, id string, seq int64, e ...cairn.Event) error {
	err := o.cur().Append(ctx, id, seq, e...)
	if err == nil {
		o.mu.Lock()
		o.batches = append(o.batches, testcheck.Kinds(e))
		o.mu.Unlock()
	}
	return down(err)
}
func (o *outageStore) Load(ctx context.Context, id string, from int64) (*cairn.Record, error) {
	rec, err := o.cur().Load(ctx, id, from)
	return rec, down(err)
}
func (o *outageStore) Stat(ctx context.Context, id string) (*cairn.SessionInfo, error) {
	info, err := o.cur().Stat(ctx, id)
	return info, down(err)
}
func (o *outageStore) List(ctx context.Context, opts cairn.ListOptions) (*cairn.ListPage, error) {
	page, err := o.cur().List(ctx, opts)
	return page, down(err)
}
func (o *outageStore) Delete(ctx context.Context, id string) error {
	return down(o.cur().Delete(ctx, id))
}
func (o *outageStore) Close() error { return nil }

// outageAgent runs a script whose tools take the store down and bring it back.
func outageAgent(t *testing.T, st *outageStore, onError string, logs *bytes.Buffer, steps ...script.Step) *agent.Agent {
	a := offlineAgent(st)
	a.OnError = onError
	a.Logger = slog.New(slog.NewTextHandler(logs, nil))
	a.Tools = append(a.Tools,
		agent.NewTool("outage", "", func(context.Context, struct{}) (string, error) { st.outage(); return "down", nil }),
		agent.NewTool("restore", "", func(context.Context, struct{}) (string, error) { st.restore(); return "up", nil }),
	)
	a.Model = scripted(t, steps...)
	return a
}

// sameEvents checks that the store holds exactly the session's memory.
func sameEvents(t *testing.T, st cairn.Store, s *agent.Session) {
	t.Helper()
	testcheck.SameEvents(t, loadEvents(t, st, s.ID()), s.Memory().Events())
}

func TestSession_DegradeAndRecover(t *testing.T) {
	st := newOutageStore(t)
	var logs bytes.Buffer
	a := outageAgent(t, st, "", &logs,
		script.Step{ToolCalls: []script.Call{call("outage", `{}`)}},
		script.Step{ToolCalls: []script.Call{call("calc", `{"expression":"6*7"}`), call("remember", `{"key":"k","value":1}`)}},
		script.Step{ToolCalls: []script.Call{call("restore", `{}`)}},
		script.Step{Text: "done"},
	)
	s, err := a.Start(t.Context(), agent.WithID("deg"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(t.Context(), "go")
	if err != nil || res.Status != cairn.StatusCompleted || res.Output != "done" {
		t.Fatalf("the run did not go on: %+v %v", res, err)
	}
	if res.Unsaved != 0 || s.Unsaved() != 0 {
		t.Errorf("unsaved after the store came back: %d", res.Unsaved)
	}
	if len(res.Warnings) != 1 {
		t.Fatalf("warnings %v, want one", res.Warnings)
	}
	if w, ok := errors.AsType[*agent.StoreWarning](res.Warnings[0]); !ok || !errors.Is(w, cairn.ErrClosed) {
		t.Errorf("warning: %v", res.Warnings[0])
	}
	if n := strings.Count(logs.String(), "the store failed"); n != 1 {
		t.Errorf("logged the failure %d times, want once:\n%s", n, logs.String())
	}
	sameEvents(t, st, s)
	checkReplay(t, s, st)
	// The queued events went out in order, with the step that found the
	// store back, in one append.
	wantFlush := []cairn.Kind{cairn.KindToolResult, cairn.KindModelResponse, cairn.KindToolResult,
		cairn.KindToolResult, cairn.KindStateSet, cairn.KindModelResponse, cairn.KindToolResult}
	if !slices.ContainsFunc(st.batches, func(k []cairn.Kind) bool { return slices.Equal(k, wantFlush) }) {
		t.Errorf("no append wrote the queued events together: %v", st.batches)
	}
	again, err := a.Resume(t.Context(), "deg")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := again.State().Variables["k"]; string(v) != "1" {
		t.Errorf("a variable set while degraded was not saved: %s", v)
	}
}

func TestSession_DegradeFlush(t *testing.T) {
	st := newOutageStore(t)
	var logs bytes.Buffer
	a := outageAgent(t, st, agent.Degrade, &logs,
		script.Step{ToolCalls: []script.Call{call("outage", `{}`)}},
		script.Step{Text: "done offline"},
	)
	s, _ := a.Start(t.Context(), agent.WithID("flush"))
	res, err := s.Run(t.Context(), "go")
	if err != nil || res.Status != cairn.StatusCompleted {
		t.Fatalf("run: %+v %v", res, err)
	}
	if res.Unsaved != 3 {
		t.Errorf("unsaved %d, want 3 (tool.result, model.response, run.finished)", res.Unsaved)
	}
	if err := s.Flush(t.Context()); !errors.Is(err, cairn.ErrClosed) {
		t.Errorf("flush while down: %v, want ErrClosed", err)
	}
	st.restore()
	if err := s.Flush(t.Context()); err != nil || s.Unsaved() != 0 {
		t.Fatalf("flush: %v, %d unsaved", err, s.Unsaved())
	}
	sameEvents(t, st, s)
	rec, _ := st.Load(t.Context(), "flush", 0)
	if rec.Info.Status != cairn.StatusCompleted {
		t.Errorf("listed status %s, want completed", rec.Info.Status)
	}
}

func TestSession_FailMode(t *testing.T) {
	st := newOutageStore(t)
	var logs bytes.Buffer
	a := outageAgent(t, st, agent.Fail, &logs,
		script.Step{ToolCalls: []script.Call{call("outage", `{}`), call("remember", `{"key":"k","value":1}`)}},
		script.Step{Text: "never"},
	)
	s, _ := a.Start(t.Context(), agent.WithID("fail"))
	res, err := s.Run(t.Context(), "go")
	if !errors.Is(err, cairn.ErrClosed) {
		t.Fatalf("got %v, want an error wrapping ErrClosed", err)
	}
	if res.Status != cairn.StatusFailed || res.Unsaved != 0 {
		t.Errorf("result %+v", res)
	}
	st.restore()
	sameEvents(t, st, s) // nothing half-written, nothing kept that the store lacks
	events := loadEvents(t, st, "fail")
	if last := events[len(events)-1]; last.Kind != cairn.KindModelResponse {
		t.Errorf("last stored event %s, want the model.response before the outage", last.Kind)
	}
	if _, ok := s.State().Variables["k"]; ok {
		t.Errorf("a variable of an unsaved step is in the state")
	}
}

func TestAgent_OnErrorInvalid(t *testing.T) {
	a := offlineAgent(testcheck.MemoryStore(t))
	a.OnError = "ignore"
	s, _ := a.Start(t.Context())
	if _, err := s.Run(t.Context(), "x"); err == nil || !strings.Contains(err.Error(), "OnError") {
		t.Errorf("got %v, want an error about OnError", err)
	}
}

// lostReplyStore commits appends to a real store but, when armed, reports
// the next one as failed: a write whose outcome the caller cannot know
// (a reply lost on the network, a timeout after the commit).
type lostReplyStore struct {
	cairn.Store
	armed atomic.Bool
}

func (l *lostReplyStore) Append(ctx context.Context, id string, seq int64, e ...cairn.Event) error {
	if err := l.Store.Append(ctx, id, seq, e...); err != nil {
		return err
	}
	if l.armed.CompareAndSwap(true, false) {
		return fmt.Errorf("connection reset after the write was sent: %w", syscall.ECONNRESET)
	}
	return nil
}

func TestSession_DegradeUnknownOutcome(t *testing.T) {
	st := &lostReplyStore{Store: newOutageStore(t)}
	a := offlineAgent(st)
	arm := agent.NewTool("arm", "", func(context.Context, struct{}) (string, error) { st.armed.Store(true); return "armed", nil })
	a.Tools = append(a.Tools, arm)
	a.Model = scripted(t,
		script.Step{ToolCalls: []script.Call{call("arm", `{}`)}},
		script.Step{ToolCalls: []script.Call{call("calc", `{"expression":"1+1"}`)}},
		script.Step{Text: "done"},
	)
	s, _ := a.Start(t.Context())
	res, err := s.Run(t.Context(), "go")
	if err != nil || res.Status != cairn.StatusCompleted || res.Unsaved != 0 {
		t.Fatalf("run: %+v %v", res, err)
	}
	if len(res.Warnings) != 1 {
		t.Errorf("warnings %v, want the one store warning", res.Warnings)
	}
	sameEvents(t, st, s) // the committed step was not written twice
	checkReplay(t, s, st)
}
