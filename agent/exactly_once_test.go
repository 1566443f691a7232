package agent_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/agent/builtin"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/script"
)

// faultStore passes every call to a real store, and fails the calls a test
// picks: an outage before the store sees the call, or a lost reply after
// the store applied it.
type faultStore struct {
	cairn.Store
	mu sync.Mutex
	// appendFault decides, for each Append, whether the inner store
	// applies it and what error the caller sees.
	appendFault func(events []cairn.Event) (apply bool, err error)
}

func (f *faultStore) setAppendFault(fn func([]cairn.Event) (bool, error)) {
	f.mu.Lock()
	f.appendFault = fn
	f.mu.Unlock()
}

func (f *faultStore) Append(ctx context.Context, id string, seq int64, events ...cairn.Event) error {
	f.mu.Lock()
	fault := f.appendFault
	f.mu.Unlock()
	if fault == nil {
		return f.Store.Append(ctx, id, seq, events...)
	}
	apply, err := fault(events)
	if apply {
		if aerr := f.Store.Append(ctx, id, seq, events...); aerr != nil {
			return aerr
		}
	}
	return err
}

var errCut = fmt.Errorf("dial tcp 127.0.0.1:5432: %w", syscall.ECONNREFUSED)

// sideEffectAgent returns an agent on st with the built-in tools, among
// them append_file (not idempotent), and trigger, the tool that breaks the
// store, running steps.
func sideEffectAgent(t *testing.T, st cairn.Store, trigger *agent.Tool, steps ...script.Step) *agent.Agent {
	t.Helper()
	a := offlineAgent(st)
	a.Tools = append(builtin.Tools(), trigger)
	a.Model = scripted(t, steps...)
	return a
}

func appendStep(path, line string) script.Step {
	return script.Step{ToolCalls: []script.Call{call("append_file", fmt.Sprintf(`{"path":%q,"line":%q}`, path, line))}}
}

// TestSession_DegradeNeverRunsUnrecordedSideEffect: in degrade mode, while
// the store is down, model calls and idempotent tools go on in memory, but
// a tool that is not idempotent does not run: its start cannot be
// recorded. The run stops as interrupted (store_degraded), saying so; once
// the store is back the session is flushed and resumed, and the side
// effect happens exactly once.
func TestSession_DegradeNeverRunsUnrecordedSideEffect(t *testing.T) {
	st := &faultStore{Store: testcheck.MemoryStore(t)}
	path := filepath.Join(t.TempDir(), "side.txt")
	cut := agent.NewTool("cut", "", func(context.Context, struct{}) (string, error) {
		st.setAppendFault(func([]cairn.Event) (bool, error) { return false, errCut })
		return "cut", nil
	})
	a := sideEffectAgent(t, st, cut,
		appendStep(path, "l1"),
		script.Step{ToolCalls: []script.Call{call("cut", `{}`)}},
		script.Step{ToolCalls: []script.Call{call("calc", `{"expression":"1+1"}`)}},
		appendStep(path, "l2"),
		script.Step{Text: "done"},
	)
	s, err := a.Start(t.Context(), agent.WithID("deg"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(t.Context(), "go")
	if nr, ok := errors.AsType[*agent.NotRecordedError](err); !ok || !cairn.IsUnavailable(nr) {
		t.Fatalf("run: %v, want a *NotRecordedError of an outage", err)
	}
	if res.Status != cairn.StatusInterrupted || res.Unsaved == 0 || !cairn.IsUnavailable(res.StoreError) {
		t.Fatalf("result %+v, want interrupted with unsaved events and the outage as their cause", res)
	}
	if got := testcheck.SideLines(t, path); strings.Join(got, ",") != "l1" {
		t.Fatalf("side effects %v, want only l1: l2 ran without its start recorded", got)
	}
	if st := s.State(); st.Interrupt != cairn.InterruptDegraded || len(st.Pending) != 1 || st.Pending[0].Started {
		t.Fatalf("state: interrupt %q, pending %+v; want store_degraded with the unstarted call pending", st.Interrupt, st.Pending)
	}

	st.setAppendFault(nil)
	if err := s.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	sameEvents(t, st, s)
	again, err := a.Resume(t.Context(), "deg")
	if err != nil {
		t.Fatal(err)
	}
	res, err = again.ResumeRun(t.Context())
	if err != nil || res.Status != cairn.StatusCompleted {
		t.Fatalf("resume: %+v %v", res, err)
	}
	if got := testcheck.SideLines(t, path); strings.Join(got, ",") != "l1,l2" {
		t.Fatalf("side effects %v, want l1,l2 once each", got)
	}
	checkReplay(t, again, st)
}

// TestSession_DegradeAdoptsStartThatLanded: the tool.started write reaches
// the store but its reply is lost, and the store stays down for the
// interruption. The tool does not run. When the store answers, the flush
// finds the start stored, takes it into the memory and writes the rest
// after it: no conflict, the store equals the memory. The process knows
// the tool did not run (it heard the start fail), so the call's result
// says so (NotRun) rather than "outcome unknown", and the call is not run
// again.
func TestSession_DegradeAdoptsStartThatLanded(t *testing.T) {
	st := &faultStore{Store: testcheck.MemoryStore(t)}
	path := filepath.Join(t.TempDir(), "side.txt")
	arm := agent.NewTool("arm", "", func(context.Context, struct{}) (string, error) {
		landed := false // then down from now on
		st.setAppendFault(func(events []cairn.Event) (bool, error) {
			if !landed && events[len(events)-1].Kind == cairn.KindToolStarted {
				landed = true
				return true, fmt.Errorf("read tcp: %w", syscall.ECONNRESET)
			}
			return false, errCut
		})
		return "armed", nil
	})
	a := sideEffectAgent(t, st, arm,
		script.Step{ToolCalls: []script.Call{call("arm", `{}`)}},
		appendStep(path, "l1"),
		script.Step{Text: "done"},
	)
	s, _ := a.Start(t.Context(), agent.WithID("adopt"))
	res, err := s.Run(t.Context(), "go")
	if _, ok := errors.AsType[*agent.NotRecordedError](err); !ok || res.Status != cairn.StatusInterrupted {
		t.Fatalf("run: %+v %v, want interrupted, start not recorded", res, err)
	}
	if got := testcheck.SideLines(t, path); len(got) != 0 {
		t.Fatalf("side effects %v, want none", got)
	}
	st.setAppendFault(nil)
	if err := s.Flush(t.Context()); err != nil {
		t.Fatalf("flush: %v", err)
	}
	sameEvents(t, st, s)
	checkReplay(t, s, st)
	kinds := testcheck.Kinds(loadEvents(t, st, "adopt"))
	if k := kinds[len(kinds)-3:]; k[0] != cairn.KindToolStarted || k[1] != cairn.KindToolResult || k[2] != cairn.KindRunInterrupted {
		t.Fatalf("last events %v, want the adopted tool.started, its not-run result, then run.interrupted", k)
	}
	if st := s.State(); len(st.Pending) != 0 {
		t.Errorf("pending after the flush: %+v, want none", st.Pending)
	}
	again, _ := a.Resume(t.Context(), "adopt")
	if res, err := again.ResumeRun(t.Context()); err != nil || res.Status != cairn.StatusCompleted {
		t.Fatalf("resume: %+v %v", res, err)
	}
	events := loadEvents(t, st, "adopt")
	started := decoded[cairn.ToolStarted](t, events, cairn.KindToolStarted)
	if len(started) != 1 {
		t.Fatalf("%d tool.started, want 1", len(started))
	}
	var got []string
	for _, r := range decoded[cairn.ToolResult](t, events, cairn.KindToolResult) {
		if r.CallID == started[0].CallID {
			got = append(got, r.Output)
		}
	}
	if !slices.Equal(got, []string{agent.NotRun}) {
		t.Errorf("the started call's results %q, want one, the not-run error", got)
	}
	if got := testcheck.SideLines(t, path); len(got) != 0 {
		t.Fatalf("side effects %v, want none", got)
	}
}

// TestSession_DegradeOnlyForOutages: an error that is an answer from the
// store (here a full disk) stops a degrade-mode run with that error, as
// "fail" would; nothing is kept unsaved and the side effect after it never
// runs.
func TestSession_DegradeOnlyForOutages(t *testing.T) {
	full := fmt.Errorf("write cairn.db: %w", syscall.ENOSPC)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"full disk", full},
		{"damaged", &driver.DamagedError{Session: "s", Msg: "checksum mismatch"}},
		{"closed", cairn.ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &faultStore{Store: testcheck.MemoryStore(t)}
			path := filepath.Join(t.TempDir(), "side.txt")
			fail := agent.NewTool("fail", "", func(context.Context, struct{}) (string, error) {
				st.setAppendFault(func([]cairn.Event) (bool, error) { return false, tc.err })
				return "failing", nil
			})
			a := sideEffectAgent(t, st, fail,
				script.Step{ToolCalls: []script.Call{call("fail", `{}`)}},
				appendStep(path, "l1"),
				script.Step{Text: "done"},
			)
			s, _ := a.Start(t.Context())
			res, err := s.Run(t.Context(), "go")
			if !errors.Is(err, tc.err) || cairn.IsUnavailable(err) {
				t.Fatalf("run: %v, want the store's own error", err)
			}
			if res.Unsaved != 0 || len(res.Warnings) != 0 {
				t.Errorf("result %+v: a store's answer must not degrade", res)
			}
			if got := testcheck.SideLines(t, path); len(got) != 0 {
				t.Errorf("side effects %v, want none", got)
			}
		})
	}
}

// leaseStore is a memory store with leases whose Renew can be cut.
type leaseStore struct {
	*faultStore
	leaser   cairn.Leaser
	cutRenew chan struct{} // closed: every Renew fails with an outage
}

func (l *leaseStore) Acquire(ctx context.Context, id, holder string, ttl time.Duration) (cairn.Lease, error) {
	return l.leaser.Acquire(ctx, id, holder, ttl)
}
func (l *leaseStore) Takeover(ctx context.Context, id, holder string, ttl time.Duration) (cairn.Lease, error) {
	return l.leaser.Takeover(ctx, id, holder, ttl)
}
func (l *leaseStore) Renew(ctx context.Context, lease cairn.Lease, ttl time.Duration) (cairn.Lease, error) {
	select {
	case <-l.cutRenew:
		return cairn.Lease{}, errCut
	default:
		return l.leaser.Renew(ctx, lease, ttl)
	}
}
func (l *leaseStore) Release(ctx context.Context, lease cairn.Lease) error {
	return l.leaser.Release(ctx, lease)
}
func (l *leaseStore) CurrentLease(ctx context.Context, id string) (cairn.Lease, error) {
	return l.leaser.CurrentLease(ctx, id)
}

// The claim tests need leases: a method missing here would run them
// unclaimed.
var _ cairn.Leaser = (*leaseStore)(nil)

func (l *leaseStore) CurrentLeases(ctx context.Context, ids []string) (map[string]cairn.Lease, error) {
	return l.leaser.CurrentLeases(ctx, ids)
}
func (l *leaseStore) AppendFenced(ctx context.Context, id string, lease cairn.Lease, seq int64, events ...cairn.Event) error {
	return l.leaser.AppendFenced(ctx, id, lease, seq, events...)
}

// TestClaim_StopsActingAtLeaseValidity: the holder's renewals fail (the
// store is cut off from it) while a model call takes long; the holder
// stops before its lease could have expired — no tool runs after that
// point — and the run is interrupted with lease_expired. A taker that
// waits for the lease to expire on the store's clock then acquires it and
// finishes the run: the side effect happens once.
func TestClaim_StopsActingAtLeaseValidity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := testcheck.MemoryStore(t)
		st := &leaseStore{faultStore: &faultStore{Store: mem}, leaser: mem, cutRenew: make(chan struct{})}
		path := filepath.Join(t.TempDir(), "side.txt")
		const ttl = 3 * time.Second
		calls := 0
		a := offlineAgent(st)
		a.Tools = builtin.Tools()
		a.Model = funcModelOf(func() (string, []cairn.ToolCall) {
			calls++
			switch calls {
			case 1:
				close(st.cutRenew)
				return "", []cairn.ToolCall{{Name: "append_file", Args: []byte(fmt.Sprintf(`{"path":%q,"line":"l1"}`, path))}}
			case 2:
				time.Sleep(ttl * 5 / 6) // a slow model: past the holder's validity, before the store's expiry
				return "", []cairn.ToolCall{{Name: "append_file", Args: []byte(fmt.Sprintf(`{"path":%q,"line":"l2"}`, path))}}
			}
			return "done", nil
		})
		s, _ := a.Start(t.Context(), agent.WithID("held"))
		cl, err := s.Claim(t.Context(), agent.ClaimOptions{Holder: "A", TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Release(t.Context())
		res, err := s.Run(t.Context(), "go")
		if !errors.Is(err, agent.ErrLeaseExpired) || res.Status != cairn.StatusInterrupted {
			t.Fatalf("run: %+v %v, want interrupted for the lease", res, err)
		}
		if err := cl.Check(); !errors.Is(err, agent.ErrLeaseExpired) {
			t.Errorf("Check: %v, want ErrLeaseExpired", err)
		}
		if got := testcheck.SideLines(t, path); strings.Join(got, ",") != "l1" {
			t.Fatalf("side effects %v, want l1 only", got)
		}
		if st := s.State(); st.Interrupt != cairn.InterruptLease {
			t.Errorf("interrupt %q, want %q", st.Interrupt, cairn.InterruptLease)
		}
		// The lease has not expired on the store yet: the holder stopped first.
		if _, err := mem.Acquire(t.Context(), "held", "B", ttl); !errors.Is(err, cairn.ErrLeaseHeld) {
			t.Fatalf("acquire right after the holder stopped: %v, want held", err)
		}
		time.Sleep(ttl)
		b := offlineAgent(mem)
		b.Tools, b.Model = builtin.Tools(), a.Model
		sb, err := b.Resume(t.Context(), "held")
		if err != nil {
			t.Fatal(err)
		}
		clb, err := sb.Claim(t.Context(), agent.ClaimOptions{Holder: "B", TTL: ttl})
		if err != nil {
			t.Fatalf("taker: %v", err)
		}
		defer clb.Release(t.Context())
		if res, err := sb.ResumeRun(t.Context()); err != nil || res.Status != cairn.StatusCompleted {
			t.Fatalf("taker's run: %+v %v", res, err)
		}
		if got := testcheck.SideLines(t, path); strings.Join(got, ",") != "l1,l2" {
			t.Fatalf("side effects %v, want l1,l2 once each", got)
		}
	})
}

// funcModelOf answers each call with what next returns.
func funcModelOf(next func() (string, []cairn.ToolCall)) funcModel {
	return func(*provider.Request) (*provider.Response, error) {
		text, calls := next()
		return &provider.Response{Text: text, ToolCalls: calls}, nil
	}
}
