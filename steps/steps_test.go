package steps_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/fault"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/steps"
)

// threeSteps is a loop of three steps and an end, counting the runs of
// its functions.
func threeSteps(t *testing.T, s *steps.Session, c *counter) []int {
	t.Helper()
	var got []int
	for i := range 3 {
		name := fmt.Sprintf("s%d", i)
		v, err := steps.Run(t.Context(), s, name, c.fn(name, 10*i))
		if err != nil {
			t.Fatalf("step %s: %v", name, err)
		}
		got = append(got, v)
	}
	if err := s.Finish(t.Context(), "done"); err != nil {
		t.Fatalf("finish: %v", err)
	}
	return got
}

// testRunReplaysRecordedResults: the first run runs each step once and
// records it as it goes; a re-run of the same loop, in a new Session,
// returns the recorded results in order and runs nothing.
func testRunReplaysRecordedResults(t *testing.T, st cairn.Store) {
	var first counter
	got := threeSteps(t, open(t, st, "a"), &first)
	if first.total() != 3 || !slices.Equal(got, []int{0, 10, 20}) {
		t.Fatalf("first run: %d calls, results %v", first.total(), got)
	}
	want := []string{"run.started", steps.TypeStep, steps.TypeStep, steps.TypeStep, "run.finished"}
	if k := kinds(t, loadEvents(t, st, "a")); !slices.Equal(k, want) {
		t.Fatalf("events %v, want %v", k, want)
	}
	var again counter
	s := open(t, st, "a")
	if !s.Replaying() || !s.Finished() {
		t.Fatalf("replaying %v, finished %v; want both", s.Replaying(), s.Finished())
	}
	if got := threeSteps(t, s, &again); again.total() != 0 || !slices.Equal(got, []int{0, 10, 20}) {
		t.Fatalf("re-run: %d calls, results %v; want 0 calls, the recorded results", again.total(), got)
	}
	if n := len(loadEvents(t, st, "a")); n != 5 {
		t.Errorf("the re-run appended: %d events, want 5", n)
	}
	info, err := st.Stat(t.Context(), "a")
	if err != nil || info.Status != cairn.StatusCompleted {
		t.Errorf("status %v (%v), want completed", info, err)
	}
}

// testRunResumesWhereItStopped: a loop that stopped half way (its
// process gone) goes on from the first step without a result.
func testRunResumesWhereItStopped(t *testing.T, st cairn.Store) {
	var c counter
	s := open(t, st, "a")
	for _, name := range []string{"s0", "s1"} {
		if _, err := steps.Run(t.Context(), s, name, c.fn(name, 1)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s = open(t, st, "a")
	for _, name := range []string{"s0", "s1", "s2", "s3"} {
		if _, err := steps.Run(t.Context(), s, name, c.fn(name, 1)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"s0", "s1", "s2", "s3"} {
		if c.get(name) != 1 {
			t.Errorf("step %s ran %d times, want once", name, c.get(name))
		}
	}
	if s.Replaying() {
		t.Error("still replaying at the end of the history")
	}
}

// testRunMismatch: a loop that asks for another step than the one
// recorded at that point gets a *MismatchError naming both, and nothing
// runs or is recorded.
func testRunMismatch(t *testing.T, st cairn.Store) {
	var c counter
	s := open(t, st, "a")
	for _, name := range []string{"fetch", "charge"} {
		if _, err := steps.Run(t.Context(), s, name, c.fn(name, 1)); err != nil {
			t.Fatal(err)
		}
	}
	s = open(t, st, "a")
	if _, err := steps.Run(t.Context(), s, "fetch", c.fn("fetch", 1)); err != nil {
		t.Fatal(err)
	}
	_, err := steps.Run(t.Context(), s, "refund", c.fn("refund", 1))
	var me *steps.MismatchError
	if !errors.As(err, &me) || !errors.Is(err, steps.ErrNotDeterministic) {
		t.Fatalf("got %v, want a *MismatchError", err)
	}
	if me.Step != 2 || me.Asked != `step "refund"` || me.Recorded != `step "charge"` || me.Seq != 3 {
		t.Errorf("mismatch %+v, want step 2, refund asked, charge recorded at seq 3", me)
	}
	for _, w := range []string{"session a", "step 2", `"refund"`, `"charge"`, "seq 3", "not deterministic"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if c.get("refund") != 0 || len(loadEvents(t, st, "a")) != 3 {
		t.Errorf("the mismatched step ran (%d) or wrote (%d events)", c.get("refund"), len(loadEvents(t, st, "a")))
	}
}

// testRunErrorRecorded: a step's error is recorded as {code, message}
// and returned again, with the same text, on a re-run, without running
// the step; a *StepError chooses the code.
func testRunErrorRecorded(t *testing.T, st cairn.Store) {
	runs := 0
	loop := func(s *steps.Session) (error, error) {
		_, err1 := steps.Run(t.Context(), s, "plain", func(context.Context) (int, error) {
			runs++
			return 0, errors.New("the service said no")
		})
		_, err2 := steps.Run(t.Context(), s, "coded", func(context.Context) (string, error) {
			runs++
			return "", fmt.Errorf("wrapped: %w", &steps.StepError{Code: "quota", Message: "over quota"})
		})
		return err1, err2
	}
	e1, e2 := loop(open(t, st, "a"))
	r1, r2 := loop(open(t, st, "a"))
	if runs != 2 {
		t.Fatalf("%d runs, want 2: a recorded failure is not run again", runs)
	}
	var se1, se2 *steps.StepError
	if !errors.As(r1, &se1) || se1.Code != steps.CodeError || r1.Error() != e1.Error() {
		t.Errorf("re-run error %#v, want a *StepError code %q text %q", r1, steps.CodeError, e1)
	}
	if !errors.As(r2, &se2) || se2.Code != "quota" || r2.Error() != e2.Error() {
		t.Errorf("re-run error %#v, want a *StepError code quota text %q", r2, e2)
	}
}

// testRunRetryable: a retryable failure recorded last runs again on a
// re-run; one the loop went on after is returned again, as the first run
// saw it.
func testRunRetryable(t *testing.T, st cairn.Store) {
	fails := true
	runs := 0
	flaky := func(context.Context) (string, error) {
		runs++
		if fails {
			return "", errors.New("timeout")
		}
		return "ok", nil
	}
	s := open(t, st, "last")
	if _, err := steps.Run(t.Context(), s, "flaky", flaky, steps.Retryable(), steps.NotIdempotent()); err == nil {
		t.Fatal("no error")
	}
	fails = false
	s = open(t, st, "last")
	v, err := steps.Run(t.Context(), s, "flaky", flaky, steps.Retryable(), steps.NotIdempotent())
	if err != nil || v != "ok" || runs != 2 {
		t.Fatalf("re-run: %q %v after %d runs; want ok after 2", v, err, runs)
	}
	s = open(t, st, "last")
	if v, err := steps.Run(t.Context(), s, "flaky", flaky, steps.Retryable(), steps.NotIdempotent()); err != nil || v != "ok" || runs != 2 {
		t.Fatalf("second re-run: %q %v after %d runs; want the recorded ok", v, err, runs)
	}

	// The loop went on after the failure (to another step): the re-run
	// sees the failure again.
	fails, runs = true, 0
	s = open(t, st, "went-on")
	if _, err := steps.Run(t.Context(), s, "flaky", flaky, steps.Retryable()); err == nil {
		t.Fatal("no error")
	}
	if _, err := steps.Run(t.Context(), s, "other", new(counter).fn("other", 1)); err != nil {
		t.Fatal(err)
	}
	fails = false
	s = open(t, st, "went-on")
	if _, err := steps.Run(t.Context(), s, "flaky", flaky, steps.Retryable()); err == nil || err.Error() != "timeout" || runs != 1 {
		t.Fatalf("re-run: %v after %d runs; want the recorded timeout, no new run", err, runs)
	}
}

// testRunNotIdempotentOutcomeUnknown: a not-idempotent step whose start
// was recorded and whose result was not is not run again: the loop gets an
// *OutcomeUnknownError and decides. Resolve records what it found out, and
// later re-runs return that.
func testRunNotIdempotentOutcomeUnknown(t *testing.T, mem cairn.Store) {
	// The process "dies" at its second append: the result of charge.
	f := &faultyStore{Store: mem, n: 2, err: fault.ErrNoSpace}
	charges := 0
	charge := func(context.Context) (string, error) { charges++; return "charged", nil }
	s := open(t, f, "a")
	if _, err := steps.Run(t.Context(), s, "charge", charge, steps.NotIdempotent()); !errors.Is(err, fault.ErrNoSpace) {
		t.Fatalf("got %v, want the store's error", err)
	}
	if want := []string{"run.started", steps.TypeStarted}; !slices.Equal(kinds(t, loadEvents(t, mem, "a")), want) {
		t.Fatalf("events %v, want %v", kinds(t, loadEvents(t, mem, "a")), want)
	}
	s = open(t, mem, "a")
	_, err := steps.Run(t.Context(), s, "charge", charge, steps.NotIdempotent())
	var u *steps.OutcomeUnknownError
	if !errors.As(err, &u) || !errors.Is(err, steps.ErrOutcomeUnknown) || u.Name != "charge" || u.Step != 1 || u.Seq != 2 {
		t.Fatalf("got %v, want an *OutcomeUnknownError for step 1 charge, started at seq 2", err)
	}
	if charges != 1 {
		t.Fatalf("charge ran %d times, want once", charges)
	}
	if err := s.Resolve(t.Context(), "other", "x"); err == nil {
		t.Error("Resolve of another step: no error")
	}
	if err := s.Resolve(t.Context(), "charge", "charged (found in the bank's log)"); err != nil {
		t.Fatal(err)
	}
	if err := s.Resolve(t.Context(), "charge", "twice"); err == nil {
		t.Error("a second Resolve: no error")
	}
	s = open(t, mem, "a")
	v, err := steps.Run(t.Context(), s, "charge", charge, steps.NotIdempotent())
	if err != nil || v != "charged (found in the bank's log)" || charges != 1 {
		t.Fatalf("after Resolve: %q %v, %d charges; want the resolved result, 1 charge", v, err, charges)
	}
}

// testRunResolveErrorOutcomeUnknown: the decision to leave an outcome
// unknown, recorded with ResolveError, replays as ErrOutcomeUnknown.
func testRunResolveErrorOutcomeUnknown(t *testing.T, mem cairn.Store) {
	f := &faultyStore{Store: mem, n: 2, err: fault.ErrNoSpace}
	send := func(context.Context) (bool, error) { return true, nil }
	s := open(t, f, "a")
	_, _ = steps.Run(t.Context(), s, "send", send, steps.NotIdempotent())
	s = open(t, mem, "a")
	_, err := steps.Run(t.Context(), s, "send", send, steps.NotIdempotent())
	if err := s.ResolveError(t.Context(), "send", err); err != nil {
		t.Fatal(err)
	}
	if _, err := steps.Run(t.Context(), s, "next", func(context.Context) (int, error) { return 1, nil }); err != nil {
		t.Fatal(err)
	}
	s = open(t, mem, "a")
	_, err = steps.Run(t.Context(), s, "send", send, steps.NotIdempotent())
	var se *steps.StepError
	if !errors.Is(err, steps.ErrOutcomeUnknown) || !errors.As(err, &se) || se.Code != steps.CodeOutcomeUnknown {
		t.Fatalf("got %#v, want a *StepError of code %s", err, steps.CodeOutcomeUnknown)
	}
	if v, err := steps.Run(t.Context(), s, "next", func(context.Context) (int, error) { return 2, nil }); err != nil || v != 1 {
		t.Fatalf("next: %v %v, want the recorded 1", v, err)
	}
}

// testRunUnresolvedGoesOn: a loop may go on without resolving an unknown
// outcome; every re-run meets the same unknown outcome at the same point,
// and a late Resolve, after later steps were recorded, is refused.
func testRunUnresolvedGoesOn(t *testing.T, mem cairn.Store) {
	f := &faultyStore{Store: mem, n: 2, err: fault.ErrNoSpace}
	var c counter
	_, _ = steps.Run(t.Context(), open(t, f, "a"), "send", c.fn("send", 1), steps.NotIdempotent())
	for range 2 {
		s := open(t, mem, "a")
		if _, err := steps.Run(t.Context(), s, "send", c.fn("send", 1), steps.NotIdempotent()); !errors.Is(err, steps.ErrOutcomeUnknown) {
			t.Fatalf("got %v, want an unknown outcome", err)
		}
		if _, err := steps.Run(t.Context(), s, "after", c.fn("after", 2)); err != nil {
			t.Fatal(err)
		}
	}
	if c.get("send") != 1 || c.get("after") != 1 {
		t.Errorf("send ran %d times, after %d; want once each", c.get("send"), c.get("after"))
	}
	s := open(t, mem, "a")
	_, _ = steps.Run(t.Context(), s, "send", c.fn("send", 1), steps.NotIdempotent())
	if err := s.Resolve(t.Context(), "send", 1); err == nil || !strings.Contains(err.Error(), "went on") {
		t.Errorf("late Resolve: %v, want refused", err)
	}
}

// testRunNotIdempotentStartFirst: the start of a not-idempotent step is
// in the store before its function runs; a store that cannot record it
// keeps the function from running.
func testRunNotIdempotentStartFirst(t *testing.T, mem cairn.Store) {
	s := open(t, mem, "a")
	_, err := steps.Run(t.Context(), s, "send", func(context.Context) (int, error) {
		if k := kinds(t, loadEvents(t, mem, "a")); !slices.Equal(k, []string{"run.started", steps.TypeStarted}) {
			t.Errorf("while the step runs the store holds %v, want its start", k)
		}
		return 1, nil
	}, steps.NotIdempotent())
	if err != nil {
		t.Fatal(err)
	}
	f := &faultyStore{Store: mem, n: 1, err: fault.ErrNoSpace}
	s = open(t, f, "a")
	ran := false
	if _, err := steps.Run(t.Context(), s, "send", func(context.Context) (int, error) { return 1, nil }, steps.NotIdempotent()); err != nil {
		t.Fatal(err) // replayed
	}
	_, err = steps.Run(t.Context(), s, "send2", func(context.Context) (int, error) { ran = true; return 1, nil }, steps.NotIdempotent())
	if !errors.Is(err, fault.ErrNoSpace) || ran {
		t.Fatalf("got %v, ran %v; want the store's error and the step not run", err, ran)
	}
}

// testRunReplyLost: the start of a not-idempotent step is stored but its
// reply is lost (an outage): the step does not run and the call fails;
// called again, the session finds its own start in the store, knows the
// step never ran, and runs it once under that start.
func testRunReplyLost(t *testing.T, mem cairn.Store) {
	f := &faultyStore{Store: mem, n: 1, err: errLost, applied: true}
	s := open(t, f, "a")
	var c counter
	if _, err := steps.Run(t.Context(), s, "send", c.fn("send", 7), steps.NotIdempotent()); !cairn.IsUnavailable(err) {
		t.Fatalf("got %v, want the outage", err)
	}
	if c.get("send") != 0 {
		t.Fatal("the step ran though its start was not confirmed")
	}
	v, err := steps.Run(t.Context(), s, "send", c.fn("send", 7), steps.NotIdempotent())
	if err != nil || v != 7 || c.get("send") != 1 {
		t.Fatalf("retry: %v %v, ran %d; want 7, once", v, err, c.get("send"))
	}
	want := []string{"run.started", steps.TypeStarted, steps.TypeStep}
	if k := kinds(t, loadEvents(t, mem, "a")); !slices.Equal(k, want) {
		t.Fatalf("events %v, want %v", k, want)
	}
}

// testRunConflict: two processes run the same session without a lease;
// the second, whose view is stale, reads what the first recorded when its
// write is refused, and returns that instead of running the step.
func testRunConflict(t *testing.T, mem cairn.Store) {
	a, b := open(t, mem, "x"), open(t, mem, "x")
	var ca, cb counter
	if v, err := steps.Run(t.Context(), a, "send", ca.fn("send", 1), steps.NotIdempotent()); err != nil || v != 1 {
		t.Fatal(v, err)
	}
	v, err := steps.Run(t.Context(), b, "send", cb.fn("send", 2), steps.NotIdempotent())
	if err != nil || v != 1 || cb.get("send") != 0 {
		t.Fatalf("stale process: %v %v, ran %d; want the recorded 1, not run", v, err, cb.get("send"))
	}
	// An idempotent step: the stale process ran it, then reads the
	// recorded result and returns it.
	if _, err := steps.Run(t.Context(), a, "read", ca.fn("read", 10)); err != nil {
		t.Fatal(err)
	}
	if v, err := steps.Run(t.Context(), b, "read", cb.fn("read", 20)); err != nil || v != 10 {
		t.Fatalf("stale process: %v %v; want the recorded 10", v, err)
	}
	if n := len(loadEvents(t, mem, "x")); n != 4 {
		t.Errorf("%d events, want 4", n)
	}
}

// testRunCancelled: a step whose context ends while it runs is not
// recorded: it runs again on a re-run.
func testRunCancelled(t *testing.T, mem cairn.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	s := open(t, mem, "a")
	_, err := steps.Run(ctx, s, "slow", func(ctx context.Context) (int, error) {
		cancel()
		<-ctx.Done()
		return 0, ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	var c counter
	if v, err := steps.Run(t.Context(), open(t, mem, "a"), "slow", c.fn("slow", 3)); err != nil || v != 3 || c.get("slow") != 1 {
		t.Fatalf("re-run: %v %v; want the step run", v, err)
	}
}

// TestRun_Busy: steps run one at a time and do not nest.
func TestRun_Busy(t *testing.T) {
	s := open(t, testcheck.MemoryStore(t), "a")
	_, err := steps.Run(t.Context(), s, "outer", func(ctx context.Context) (int, error) {
		_, err := steps.Run(ctx, s, "inner", func(context.Context) (int, error) { return 1, nil })
		return 0, err
	})
	if !errors.Is(err, steps.ErrBusy) {
		t.Fatalf("got %v, want ErrBusy", err)
	}
}

// TestRun_Panic: a panic in a step is recovered as the step's error.
func TestRun_Panic(t *testing.T) {
	s := open(t, testcheck.MemoryStore(t), "a")
	_, err := steps.Run(t.Context(), s, "boom", func(context.Context) (int, error) { panic("kaboom") })
	if err == nil || !strings.Contains(err.Error(), "kaboom") {
		t.Fatalf("got %v", err)
	}
}

// TestRun_BadInput: an empty name, a nil function, a closed session.
func TestRun_BadInput(t *testing.T) {
	s := open(t, testcheck.MemoryStore(t), "a")
	if _, err := steps.Run(t.Context(), s, "", func(context.Context) (int, error) { return 1, nil }); err == nil {
		t.Error("empty name: no error")
	}
	if _, err := steps.Run[int](t.Context(), s, "x", nil); err == nil {
		t.Error("nil function: no error")
	}
	s.Close()
	if _, err := steps.Run(t.Context(), s, "x", func(context.Context) (int, error) { return 1, nil }); !errors.Is(err, steps.ErrClosed) {
		t.Errorf("closed: %v", err)
	}
	if _, err := steps.Open(t.Context(), testcheck.MemoryStore(t), "../x", steps.Options{}); !errors.Is(err, cairn.ErrInvalidID) {
		t.Errorf("bad ID: %v", err)
	}
	if _, err := steps.Open(t.Context(), testcheck.MemoryStore(t), "x", steps.Options{Force: true}); err == nil || !strings.Contains(err.Error(), "Claim") {
		t.Errorf("Force without Claim: %v", err)
	}
	if _, err := steps.Open(t.Context(), nil, "x", steps.Options{}); err == nil {
		t.Error("no store: no error")
	}
}
