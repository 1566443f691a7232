package steps_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/steps"
	"github.com/cairnhq/cairn/store/memory"
)

// stalledLeaser is a store whose lease renewals fail once stalled: a
// process cut off from the store, or paused, while its lease runs out.
type stalledLeaser struct {
	cairn.Leaser
	cairn.Store
	mu      sync.Mutex
	stalled bool
}

func (s *stalledLeaser) stall() { s.mu.Lock(); s.stalled = true; s.mu.Unlock() }

func (s *stalledLeaser) Renew(ctx context.Context, l cairn.Lease, ttl time.Duration) (cairn.Lease, error) {
	s.mu.Lock()
	stalled := s.stalled
	s.mu.Unlock()
	if stalled {
		return cairn.Lease{}, errLost
	}
	return s.Leaser.Renew(ctx, l, ttl)
}

func stalling(st cairn.Store) *stalledLeaser {
	return &stalledLeaser{Leaser: st.(cairn.Leaser), Store: st}
}

// leaseCases are the lease tests, run on the memory store under synctest
// here and on every backend with the real clock (backends_test.go).
// ttl is the lease's TTL; wait waits until the store has expired a lease
// of that TTL taken now (and renewed no more).
func leaseHeld(t *testing.T, st cairn.Store) {
	a, err := steps.Open(t.Context(), st, "held", steps.Options{Claim: true, Holder: "first"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := steps.Run(t.Context(), a, "one", func(context.Context) (int, error) { return 1, nil }); err != nil {
		t.Fatal(err)
	}
	_, err = steps.Open(t.Context(), st, "held", steps.Options{Claim: true, Holder: "second"})
	var held *cairn.LeaseHeldError
	if !errors.As(err, &held) || held.Holder != "first" {
		t.Fatalf("second claim: %v, want a *cairn.LeaseHeldError naming first", err)
	}
	if l, ok := a.Lease(); !ok || l.Holder != "first" {
		t.Errorf("lease %+v %v", l, ok)
	}
	// Close releases the lease: another process claims it at once.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := steps.Open(t.Context(), st, "held", steps.Options{Claim: true, Holder: "second"})
	if err != nil {
		t.Fatalf("claim after Close: %v", err)
	}
	defer b.Close()
	if v, err := steps.Run(t.Context(), b, "one", func(context.Context) (int, error) { return 2, nil }); err != nil || v != 1 {
		t.Fatalf("the new holder replays: %v %v", v, err)
	}
}

// leaseTakeover: a takeover (Force) fences the first holder out: the
// result of the step it was running is refused, and its next step does
// not run.
func leaseTakeover(t *testing.T, st cairn.Store) {
	a, err := steps.Open(t.Context(), st, "over", steps.Options{Claim: true, Holder: "first"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var b *steps.Session
	_, err = steps.Run(t.Context(), a, "slow", func(context.Context) (int, error) {
		var err error
		b, err = steps.Open(t.Context(), st, "over", steps.Options{Claim: true, Holder: "second", Force: true})
		if err != nil {
			t.Error(err)
		}
		return 1, nil
	})
	if b == nil {
		t.FailNow()
	}
	defer b.Close()
	if !errors.Is(err, cairn.ErrLeaseLost) {
		t.Fatalf("first holder's write: %v, want ErrLeaseLost", err)
	}
	ran := false
	if _, err := steps.Run(t.Context(), a, "next", func(context.Context) (int, error) { ran = true; return 1, nil }, steps.NotIdempotent()); !errors.Is(err, cairn.ErrLeaseLost) || ran {
		t.Fatalf("first holder's next step: %v (ran %v), want ErrLeaseLost and not run", err, ran)
	}
	if v, err := steps.Run(t.Context(), b, "slow", func(context.Context) (int, error) { return 2, nil }); err != nil || v != 2 {
		t.Fatalf("the new holder runs the step: %v %v", v, err)
	}
	if n := len(loadEvents(t, st, "over")); n != 2 {
		t.Errorf("%d events, want run.started and the new holder's step", n)
	}
}

// leaseExpiry: a holder whose renewals fail stops acting once its lease
// may have run out; another process acquires the session after the
// store expired the lease, and the first one's writes are refused.
func leaseExpiry(t *testing.T, st cairn.Store, ttl time.Duration, waitExpired func(id string)) {
	sl := stalling(st)
	a, err := steps.Open(t.Context(), sl, "exp", steps.Options{Claim: true, Holder: "first", LeaseTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sl.stall()
	var b *steps.Session
	_, err = steps.Run(t.Context(), a, "slow", func(context.Context) (int, error) {
		waitExpired("exp")
		var err error
		if b, err = steps.Open(t.Context(), st, "exp", steps.Options{Claim: true, Holder: "second", LeaseTTL: time.Minute}); err != nil {
			t.Errorf("claim after expiry: %v", err)
		}
		return 1, nil
	})
	if b == nil {
		t.FailNow()
	}
	defer b.Close()
	if !errors.Is(err, cairn.ErrLeaseLost) {
		t.Fatalf("write after the lease expired and was taken: %v, want ErrLeaseLost", err)
	}
	// A holder whose lease expired and nobody took acts no more either.
	c, err := steps.Open(t.Context(), sl, "exp2", steps.Options{Claim: true, Holder: "third", LeaseTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitExpired("exp2")
	ran := false
	_, err = steps.Run(t.Context(), c, "x", func(context.Context) (int, error) { ran = true; return 1, nil })
	if !errors.Is(err, steps.ErrLeaseExpired) || ran {
		t.Fatalf("step past the lease: %v (ran %v), want ErrLeaseExpired, not run", err, ran)
	}
}

// TestLease_Memory runs the lease cases on the memory store, on the fake
// clock of a synctest bubble.
func TestLease_Memory(t *testing.T) {
	t.Run("Held", func(t *testing.T) { leaseHeld(t, testcheck.MemoryStore(t)) })
	t.Run("Takeover", func(t *testing.T) { leaseTakeover(t, testcheck.MemoryStore(t)) })
	t.Run("Expiry", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			st, err := memory.New(cairn.StoreOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			const ttl = 3 * time.Second
			leaseExpiry(t, st, ttl, func(string) { time.Sleep(ttl + time.Millisecond) })
		})
	})
	t.Run("NoLeases", func(t *testing.T) {
		type plain struct{ cairn.Store }
		_, err := steps.Open(t.Context(), plain{testcheck.MemoryStore(t)}, "x", steps.Options{Claim: true})
		if err == nil {
			t.Fatal("Claim on a store without leases: no error")
		}
	})
}

// TestLease_Renewed: a holder that keeps its lease renewed acts on past
// many TTLs.
func TestLease_Renewed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, err := memory.New(cairn.StoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		s, err := steps.Open(t.Context(), st, "r", steps.Options{Claim: true, LeaseTTL: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for i := range 10 {
			time.Sleep(2 * time.Second)
			if _, err := steps.Run(t.Context(), s, "tick", func(context.Context) (int, error) { return i, nil }); err != nil {
				t.Fatalf("tick %d: %v", i, err)
			}
		}
	})
}
