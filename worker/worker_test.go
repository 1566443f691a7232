package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/testing/fault"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/offline"
	"github.com/cairnhq/cairn/store/file"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/worker"
)

// backend opens an empty store with leases.
type backend struct {
	name string
	open func(t *testing.T) cairn.Store
}

// leasesOnly hides driver.Claimer: the worker lists and acquires.
type leasesOnly struct {
	cairn.Store
	cairn.Leaser
}

var backends = []backend{
	{"memory", func(t *testing.T) cairn.Store {
		s, err := memory.New(cairn.StoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
	{"memory-list", func(t *testing.T) cairn.Store {
		s, err := memory.New(cairn.StoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return leasesOnly{s, s}
	}},
	{"sqlite", func(t *testing.T) cairn.Store {
		s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "cairn.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}},
	{"file", func(t *testing.T) cairn.Store {
		s, err := file.Open(t.Context(), filepath.Join(t.TempDir(), "sessions"), cairn.StoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}},
}

// start runs a worker until the test ends or stop is called; stop waits
// for Run to return and fails the test if it returned an error.
func start(t *testing.T, opts worker.Options) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.Run(ctx, opts) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run = %v, want nil after the context ended", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitStatus waits until every session of ids has status want.
func waitStatus(t *testing.T, st cairn.Store, want cairn.Status, ids ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		for {
			rec, err := st.Load(t.Context(), id, 0)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Info.Status == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("session %s is %s, want %s", id, rec.Info.Status, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func count(t *testing.T, st cairn.Store, id string, kind cairn.Kind) int {
	t.Helper()
	rec, err := st.Load(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range rec.Events {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

func enqueue(t *testing.T, st cairn.Store, n int, opts worker.EnqueueOptions) []string {
	t.Helper()
	var ids []string
	for i := range n {
		id, err := worker.Enqueue(t.Context(), st, fmt.Sprintf("task %d", i), opts)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// TestRun_FinishesQueued: two workers of two slots each share a store and
// finish every queued run exactly once; sessions of another queue are
// left alone; once stopped, no lease is held.
func TestRun_FinishesQueued(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			ids := enqueue(t, st, 8, worker.EnqueueOptions{})
			other := enqueue(t, st, 1, worker.EnqueueOptions{Queue: "other"})
			var logs fault.SyncBuffer
			a := &agent.Agent{Name: "w", Model: offline.New(), Store: st}
			var stops []func()
			for _, name := range []string{"w1", "w2"} {
				stops = append(stops, start(t, worker.Options{Agent: a, Name: name, Concurrency: 2,
					Poll: 10 * time.Millisecond, LeaseTTL: 5 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
			}
			waitStatus(t, st, cairn.StatusCompleted, ids...)
			// A run's last write comes before its log line: wait for those
			// too, or stopping now would log the last run as interrupted.
			for deadline := time.Now().Add(30 * time.Second); strings.Count(logs.String(), "msg=finished") < len(ids) && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			for _, stop := range stops {
				stop()
			}
			for _, id := range ids {
				if n := count(t, st, id, cairn.KindRunStarted); n != 1 {
					t.Errorf("session %s has %d runs, want 1", id, n)
				}
				if n := count(t, st, id, cairn.KindModelResponse); n != 1 {
					t.Errorf("session %s has %d model responses, want 1", id, n)
				}
				if l, err := st.(cairn.Leaser).CurrentLease(t.Context(), id); err != nil || l.Holder != "" {
					t.Errorf("lease of %s after the workers stopped = %+v, %v; want released", id, l, err)
				}
			}
			if n := strings.Count(logs.String(), "msg=finished"); n != len(ids) {
				t.Errorf("the workers logged %d finished sessions, want %d:\n%s", n, len(ids), logs.String())
			}
			if rec, err := st.Load(t.Context(), other[0], 0); err != nil || rec.Info.Status != cairn.StatusNew {
				t.Errorf("the session of another queue: %v, %v; want it left new", rec.Info.Status, err)
			}
		})
	}
}

// blockModel answers nothing until its call's context ends, and says
// on started that a call began.
type blockModel struct{ started chan struct{} }

func (blockModel) ID() string { return "block" }

func (m blockModel) Generate(ctx context.Context, _ *provider.Request) (*provider.Response, error) {
	select {
	case m.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestRun_ShutdownInterrupts: stopping a worker interrupts its run (saved
// as run.interrupted), releases the lease and the lock file, and another
// worker finishes the session with the one run it began.
func TestRun_ShutdownInterrupts(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			ids := enqueue(t, st, 1, worker.EnqueueOptions{ID: "job"})
			m := blockModel{started: make(chan struct{}, 1)}
			stop := start(t, worker.Options{Agent: &agent.Agent{Name: "w", Model: m, Store: st},
				Name: "first", Poll: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
			select {
			case <-m.started:
			case <-time.After(30 * time.Second):
				t.Fatal("the worker never called the model")
			}
			if l, err := st.(cairn.Leaser).CurrentLease(t.Context(), "job"); err != nil || l.Holder != "first" {
				t.Errorf("lease while running = %+v, %v; want the worker's", l, err)
			}
			if ll, ok := st.(driver.LocalLocker); ok {
				if _, err := os.Stat(ll.LockFile("job")); err != nil {
					t.Errorf("the worker runs the session without its lock file: %v", err)
				}
			}
			stop()
			waitStatus(t, st, cairn.StatusInterrupted, ids...)
			if l, err := st.(cairn.Leaser).CurrentLease(t.Context(), "job"); err != nil || l.Holder != "" {
				t.Errorf("lease after the shutdown = %+v, %v; want released", l, err)
			}

			start(t, worker.Options{Agent: &agent.Agent{Name: "w", Model: offline.New(), Store: st},
				Name: "second", Poll: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
			waitStatus(t, st, cairn.StatusCompleted, ids...)
			if n := count(t, st, "job", cairn.KindRunStarted); n != 1 {
				t.Errorf("the session has %d runs, want the one the first worker began", n)
			}
			if n := count(t, st, "job", cairn.KindMessageUser); n != 1 {
				t.Errorf("the session has %d user messages, want 1", n)
			}
		})
	}
}

// TestRun_BadOptions: Run refuses at once, running nothing.
func TestRun_BadOptions(t *testing.T) {
	mem, err := memory.New(cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	noLeases := struct{ cairn.Store }{mem}
	for name, opts := range map[string]worker.Options{
		"no agent":     {},
		"no store":     {Agent: &agent.Agent{Model: offline.New()}},
		"no leases":    {Agent: &agent.Agent{Model: offline.New(), Store: noLeases}},
		"negative":     {Agent: &agent.Agent{Model: offline.New(), Store: mem}, Concurrency: -1},
		"negative TTL": {Agent: &agent.Agent{Model: offline.New(), Store: mem}, LeaseTTL: -time.Second},
	} {
		if err := worker.Run(t.Context(), opts); err == nil {
			t.Errorf("%s: Run = nil, want an error", name)
		}
	}
}

// TestEnqueue: a queued run is a new session with the queue's label and
// one custom event holding the input; the ID rules and ErrExists apply.
func TestEnqueue(t *testing.T) {
	st, err := memory.New(cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := worker.Enqueue(t.Context(), st, "hello", worker.EnqueueOptions{ID: "j1", Labels: map[string]string{"team": "search"}})
	if err != nil || id != "j1" {
		t.Fatalf("Enqueue = %q, %v", id, err)
	}
	rec, err := st.Load(t.Context(), "j1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Info.Status != cairn.StatusNew || rec.Info.Labels[worker.QueueLabel] != worker.DefaultQueue || rec.Info.Labels["team"] != "search" {
		t.Errorf("queued session = %+v", rec.Info)
	}
	if len(rec.Events) != 1 || rec.Events[0].Kind != cairn.KindCustom || !strings.Contains(string(rec.Events[0].Data), `"type":"cairn.queued"`) ||
		!strings.Contains(string(rec.Events[0].Data), `{"input":"hello"}`) {
		t.Errorf("queued events = %+v", rec.Events)
	}
	if _, err := worker.Enqueue(t.Context(), st, "again", worker.EnqueueOptions{ID: "j1"}); !errors.Is(err, cairn.ErrExists) {
		t.Errorf("Enqueue of an existing ID = %v, want ErrExists", err)
	}
	if _, err := worker.Enqueue(t.Context(), st, "x", worker.EnqueueOptions{ID: "../x"}); !errors.Is(err, cairn.ErrInvalidID) {
		t.Errorf("Enqueue of ../x = %v, want ErrInvalidID", err)
	}
	if id, err := worker.Enqueue(t.Context(), st, "x", worker.EnqueueOptions{Queue: "q"}); err != nil || cairn.ValidateID(id) != nil {
		t.Errorf("Enqueue with no ID = %q, %v; want a new ID", id, err)
	}
	page, err := st.List(t.Context(), worker.Filter("q"))
	if err != nil || len(page.Sessions) != 1 {
		t.Errorf("List(Filter(q)) = %d sessions, %v; want 1", len(page.Sessions), err)
	}
}

// TestEnqueue_RefusedLeavesNothing: a queued run the store refuses (too
// large) leaves no empty session behind for workers to claim and skip.
func TestEnqueue_RefusedLeavesNothing(t *testing.T) {
	st, err := memory.New(cairn.StoreOptions{Limits: cairn.Limits{MaxEventBytes: 512}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = worker.Enqueue(t.Context(), st, strings.Repeat("x", 1000), worker.EnqueueOptions{ID: "big"})
	if !errors.Is(err, cairn.ErrTooLarge) {
		t.Fatalf("Enqueue of a 1000-byte input into 512-byte events = %v, want ErrTooLarge", err)
	}
	if _, err := st.Load(t.Context(), "big", 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("after the refusal Load(big) = %v, want ErrNotFound", err)
	}
}

// toolModel calls the tool whoami when the request offers it and holds no
// tool result yet, and otherwise answers with the last tool result's text,
// or "no tools".
type toolModel struct{}

func (toolModel) ID() string { return "tool-model" }

func (toolModel) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	last := ""
	for _, m := range req.Messages {
		if m.Role == cairn.RoleTool {
			last = m.Content
		}
	}
	if last != "" {
		return &provider.Response{Text: last, FinishReason: "stop"}, nil
	}
	for _, t := range req.Tools {
		if t.Name == "whoami" {
			return &provider.Response{ToolCalls: []cairn.ToolCall{{ID: "c1", Name: "whoami", Args: []byte(`{}`)}}, FinishReason: "tool_calls"}, nil
		}
	}
	return &provider.Response{Text: "no tools", FinishReason: "stop"}, nil
}

// TestRun_Prepare: Options.Prepare gives each session the agent and run
// options its label calls for: ada's session runs with a tool of its own
// and a system message before its input, the unlabelled one with the
// worker's agent; a Prepare that fails, or gives an agent of another
// store, leaves its session new, tried again once its lease has expired,
// and the sessions behind it run meanwhile.
func TestRun_Prepare(t *testing.T) {
	st := backends[0].open(t)
	a := &agent.Agent{Name: "w", Model: toolModel{}, Store: st}
	// The two that cannot start are the oldest: the others do not wait
	// behind them.
	failing := enqueue(t, st, 1, worker.EnqueueOptions{Labels: map[string]string{"who": "fail"}})[0]
	elsewhere := enqueue(t, st, 1, worker.EnqueueOptions{Labels: map[string]string{"who": "elsewhere"}})[0]
	ada := enqueue(t, st, 1, worker.EnqueueOptions{Labels: map[string]string{"who": "ada"}})[0]
	plain := enqueue(t, st, 1, worker.EnqueueOptions{})[0]
	other, err := memory.New(cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prepare := func(ctx context.Context, info cairn.SessionInfo) (*agent.Agent, []agent.RunOption, error) {
		switch who := info.Labels["who"]; who {
		case "":
			return nil, nil, nil
		case "fail":
			return nil, nil, errors.New("no memory for this one")
		case "elsewhere":
			return &agent.Agent{Model: toolModel{}, Store: other}, nil, nil
		default:
			whoami := agent.NewTool("whoami", "who the user is", func(context.Context, struct{}) (string, error) { return "you are " + who, nil })
			return a.WithTools(whoami), []agent.RunOption{agent.Background("remember " + who)}, nil
		}
	}
	var logs fault.SyncBuffer
	// A lease longer than any test run: each session that cannot start is
	// tried exactly once, however slow the machine.
	start(t, worker.Options{Agent: a, Prepare: prepare, Poll: 10 * time.Millisecond, LeaseTTL: time.Hour,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	waitStatus(t, st, cairn.StatusCompleted, ada, plain)
	output := func(id string) (out string, background bool) {
		st, err := cairn.Fold(mustEvents(t, st, id))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range st.Messages {
			if m.Role == cairn.RoleAssistant && m.Content != "" {
				out = m.Content
			}
			background = background || m.Role == cairn.RoleSystem && strings.Contains(m.Content, "remember")
		}
		return out, background
	}
	if out, bg := output(ada); out != "you are ada" || !bg {
		t.Errorf("ada's session answered %q (background %v), want the tool's result and the background", out, bg)
	}
	if out, bg := output(plain); out != "no tools" || bg {
		t.Errorf("the plain session answered %q (background %v), want the worker's agent's", out, bg)
	}
	for deadline := time.Now().Add(30 * time.Second); strings.Count(logs.String(), "msg=prepare") < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	for _, want := range []string{"no memory for this one", "another store", "retry=\"after its lease expires, in 1h0m0s\""} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, logs.String())
		}
	}
	if n := strings.Count(logs.String(), "msg=prepare"); n != 2 {
		t.Errorf("%d failed starts logged, want 2 (each session tried once within its lease):\n%s", n, logs.String())
	}
	waitStatus(t, st, cairn.StatusNew, failing, elsewhere)
}

func mustEvents(t *testing.T, st cairn.Store, id string) []cairn.Event {
	t.Helper()
	rec, err := st.Load(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Events
}
