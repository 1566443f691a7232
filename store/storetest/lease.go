package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// runLease runs the lease section of the suite, for a backend that
// declares Leases, and the claim tests when it declares Claims. Time moves
// on the harness's clock only: no test sleeps.
func runLease(t *testing.T, open Opener, abilities Abilities) {
	type test struct {
		name string
		fn   func(*testing.T, *harness, cairn.Leaser)
	}
	tests := []test{
		{"Acquire", testLeaseAcquire},
		{"Expiry", testLeaseExpiry},
		{"Renew", testLeaseRenew},
		{"Release", testLeaseRelease},
		{"Takeover", testLeaseTakeover},
		{"Takeovers", testLeaseTakeovers},
		{"AppendFenced", testLeaseAppendFenced},
		{"AppendFencedRetried", testLeaseAppendFencedRetried},
		{"Delete", testLeaseDelete},
		{"CurrentLeases", testLeaseCurrentLeases},
		{"ConcurrentAcquire", testLeaseConcurrentAcquire},
		{"ConcurrentFencedAppend", testLeaseConcurrentFenced},
	}
	if abilities.Claims {
		tests = append(tests, test{"ClaimNext", testLeaseClaimNext}, test{"ConcurrentClaimNext", testLeaseConcurrentClaimNext})
	}
	for _, tt := range tests {
		t.Run("Lease/"+tt.name, func(t *testing.T) {
			h := newHarness(open, abilities)
			tt.fn(t, h, as[cairn.Leaser](t, h.store(t)))
		})
	}
}

const leaseTTL = 30 * time.Second

func mustAcquire(t *testing.T, l cairn.Leaser, id, holder string) cairn.Lease {
	t.Helper()
	lease, err := l.Acquire(t.Context(), id, holder, leaseTTL)
	if err != nil {
		t.Fatalf("Acquire(%s, %s): %v", id, holder, err)
	}
	if lease.Session != id || lease.Holder != holder || lease.Token <= 0 {
		t.Fatalf("Acquire(%s, %s) = %+v, want that session and holder and a positive token", id, holder, lease)
	}
	return lease
}

func wantHeld(t *testing.T, err error, holder string, expires time.Time) {
	t.Helper()
	if !errors.Is(err, cairn.ErrLeaseHeld) {
		t.Fatalf("got %v, want ErrLeaseHeld", err)
	}
	var he *cairn.LeaseHeldError
	if !errors.As(err, &he) {
		t.Fatalf("error %v is not a *cairn.LeaseHeldError", err)
	}
	if he.Holder != holder || !he.Expires.Equal(expires) {
		t.Errorf("held by %q until %s, want %q until %s", he.Holder, he.Expires, holder, expires)
	}
}

// testLeaseAcquire: one holder at a time; the refusal names the holder and
// the expiry; CurrentLease reports the holder; missing sessions and bad
// arguments are refused.
func testLeaseAcquire(t *testing.T, h *harness, l cairn.Leaser) {
	s := l.(cairn.Store)
	id := newSession(t, s, nil)
	a := mustAcquire(t, l, id, "worker-a")
	if want := h.clock.Now().Add(leaseTTL); !a.Expires.Equal(want) {
		t.Errorf("lease expires %s, want %s", a.Expires, want)
	}
	_, err := l.Acquire(t.Context(), id, "worker-b", leaseTTL)
	wantHeld(t, err, "worker-a", a.Expires)
	_, err = l.Acquire(t.Context(), id, "worker-a", leaseTTL)
	wantHeld(t, err, "worker-a", a.Expires)
	cur, err := l.CurrentLease(t.Context(), id)
	if err != nil {
		t.Fatalf("CurrentLease: %v", err)
	}
	if cur.Holder != "worker-a" || cur.Token != a.Token || !cur.Expires.Equal(a.Expires) {
		t.Errorf("CurrentLease = %+v, want %+v", cur, a)
	}
	other := newSession(t, s, nil)
	if cur, err := l.CurrentLease(t.Context(), other); err != nil || cur.Holder != "" {
		t.Errorf("CurrentLease of a session never leased = %+v, %v; want no holder", cur, err)
	}
	mustAcquire(t, l, other, "worker-b") // leases are per session
	if _, err := l.Acquire(t.Context(), "missing", "worker-a", leaseTTL); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Acquire of a missing session: got %v, want ErrNotFound", err)
	}
	if _, err := l.CurrentLease(t.Context(), "missing"); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("CurrentLease of a missing session: got %v, want ErrNotFound", err)
	}
	if _, err := l.Acquire(t.Context(), "../x", "worker-a", leaseTTL); !errors.Is(err, cairn.ErrInvalidID) {
		t.Errorf("Acquire of a bad ID: got %v, want ErrInvalidID", err)
	}
	if _, err := l.Acquire(t.Context(), id, "", leaseTTL); err == nil {
		t.Error("Acquire with no holder succeeded")
	}
	if _, err := l.Acquire(t.Context(), id, "worker-c", 0); err == nil {
		t.Error("Acquire with a zero TTL succeeded")
	}
}

// testLeaseExpiry: a dead holder's lease expires and can be taken; the new
// token is larger; the old holder can neither write nor renew.
func testLeaseExpiry(t *testing.T, h *harness, l cairn.Leaser) {
	s := l.(cairn.Store)
	id := newSession(t, s, nil)
	a := mustAcquire(t, l, id, "worker-a")
	if err := l.AppendFenced(t.Context(), id, a, 0, Custom(1, "a1")); err != nil {
		t.Fatalf("AppendFenced by the holder: %v", err)
	}
	h.clock.Advance(leaseTTL - time.Second)
	_, err := l.Acquire(t.Context(), id, "worker-b", leaseTTL)
	wantHeld(t, err, "worker-a", a.Expires)
	h.clock.Advance(time.Second)
	if cur, err := l.CurrentLease(t.Context(), id); err != nil || cur.Holder != "" {
		t.Errorf("CurrentLease at expiry = %+v, %v; want no holder", cur, err)
	}
	b := mustAcquire(t, l, id, "worker-b")
	if b.Token <= a.Token {
		t.Errorf("the new token %d is not larger than the old %d", b.Token, a.Token)
	}
	if err := l.AppendFenced(t.Context(), id, a, 1, Custom(2, "a2")); !errors.Is(err, cairn.ErrLeaseLost) {
		t.Errorf("AppendFenced by the expired holder after a takeover: got %v, want ErrLeaseLost", err)
	}
	if _, err := l.Renew(t.Context(), a, leaseTTL); !errors.Is(err, cairn.ErrLeaseLost) {
		t.Errorf("Renew by the expired holder: got %v, want ErrLeaseLost", err)
	}
	if err := l.Release(t.Context(), a); !errors.Is(err, cairn.ErrLeaseLost) {
		t.Errorf("Release by the expired holder: got %v, want ErrLeaseLost", err)
	}
	if err := l.AppendFenced(t.Context(), id, b, 1, Custom(2, "b2")); err != nil {
		t.Fatalf("AppendFenced by the new holder: %v", err)
	}
	assertEvents(t, mustLoad(t, s, id).Events, []cairn.Event{Custom(1, "a1"), Custom(2, "b2")})
}

// testLeaseRenew: renewing keeps others out past the first expiry.
func testLeaseRenew(t *testing.T, h *harness, l cairn.Leaser) {
	s := l.(cairn.Store)
	id := newSession(t, s, nil)
	a := mustAcquire(t, l, id, "worker-a")
	h.clock.Advance(leaseTTL - time.Second)
	r, err := l.Renew(t.Context(), a, leaseTTL)
	if err != nil {
		t.Fatalf("Renew: %v", err)
	}
	if r.Token != a.Token || !r.Expires.Equal(h.clock.Now().Add(leaseTTL)) {
		t.Errorf("Renew = %+v, want token %d expiring %s", r, a.Token, h.clock.Now().Add(leaseTTL))
	}
	h.clock.Advance(2 * time.Second)
	_, err = l.Acquire(t.Context(), id, "worker-b", leaseTTL)
	wantHeld(t, err, "worker-a", r.Expires)
	// Expired but not taken: the holder may still renew and write.
	h.clock.Advance(leaseTTL)
	if _, err := l.Renew(t.Context(), r, leaseTTL); err != nil {
		t.Errorf("Renew of an expired lease nobody took: %v", err)
	}
	if err := l.AppendFenced(t.Context(), id, r, 0, Custom(1, "a")); err != nil {
		t.Errorf("AppendFenced after a late renew: %v", err)
	}
}

// testLeaseRelease: a released session can be acquired at once, and the
// released lease no longer writes.
func testLeaseRelease(t *testing.T, h *harness, l cairn.Leaser) {
	s := l.(cairn.Store)
	id := newSession(t, s, nil)
	a := mustAcquire(t, l, id, "worker-a")
	if err := l.Release(t.Context(), a); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if cur, err := l.CurrentLease(t.Context(), id); err != nil || cur.Holder != "" {
		t.Errorf("CurrentLease after Release = %+v, %v; want no holder", cur, err)
	}
	if err := l.AppendFenced(t.Context(), id, a, 0, Custom(1, "a")); !errors.Is(err, cairn.ErrLeaseLost) {
		t.Errorf("AppendFenced with a released lease: got %v, want ErrLeaseLost", err)
	}
	b := mustAcquire(t, l, id, "worker-b")
	if b.Token <= a.Token {
		t.Errorf("token after release %d, want more than %d", b.Token, a.Token)
	}
	if err := l.Release(t.Context(), a); !errors.Is(err, cairn.ErrLeaseLost) {
		t.Errorf("second Release of the old lease: got %v, want ErrLeaseLost", err)
	}
	if cur, _ := l.CurrentLease(t.Context(), id); cur.Holder != "worker-b" {
		t.Errorf("releasing a stale lease freed the new one: holder %q", cur.Holder)
	}
}

// testLeaseTakeover: a forced takeover fences the live holder at once.
func testLeaseTakeover(t *testing.T, h *harness, l cairn.Leaser) {
	s := l.(cairn.Store)
	id := newSession(t, s, nil)
	a := mustAcquire(t, l, id, "worker-a")
	b, err := l.Takeover(t.Context(), id, "worker-b", leaseTTL)
	if err != nil {
		t.Fatalf("Takeover: %v", err)
	}
	if b.Holder != "worker-b" || b.Token <= a.Token {
		t.Errorf("Takeover = %+v, want worker-b with a token above %d", b, a.Token)
	}
	if err := l.AppendFenced(t.Context(), id, a, 0, Custom(1, "a")); !errors.Is(err, cairn.ErrLeaseLost) {
		t.Errorf("AppendFenced by the holder taken over: got %v, want ErrLeaseLost", err)
	}
	// Several events at once take another path in some stores.
	if err := l.AppendFenced(t.Context(), id, a, 0, Custom(1, "a"), Custom(2, "a")); !errors.Is(err, cairn.ErrLeaseLost) {
		t.Errorf("AppendFenced of two events by the holder taken over: got %v, want ErrLeaseLost", err)
	}
	if err := l.AppendFenced(t.Context(), id, b, 0, Custom(1, "b")); err != nil {
		t.Errorf("AppendFenced after Takeover: %v", err)
	}
	if _, err := l.Takeover(t.Context(), "missing", "worker-b", leaseTTL); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Takeover of a missing session: got %v, want ErrNotFound", err)
	}
}

// testLeaseTakeovers: a lease granted while an earlier holder had not
// released it (expired, or taken by force) counts a takeover, in every
// lease the store returns from then on; a released lease, a renewal and a
// refused Acquire do not; a session deleted and created again starts at 0.
func testLeaseTakeovers(t *testing.T, h *harness, l cairn.Leaser) {
	s := l.(cairn.Store)
	id := newSession(t, s, nil)
	want := func(what string, lease cairn.Lease, n int64) {
		t.Helper()
		if lease.Takeovers != n {
			t.Errorf("%s: Takeovers = %d, want %d (%+v)", what, lease.Takeovers, n, lease)
		}
	}
	current := func(what string, n int64) {
		t.Helper()
		cur, err := l.CurrentLease(t.Context(), id)
		if err != nil {
			t.Fatalf("CurrentLease: %v", err)
		}
		want("CurrentLease "+what, cur, n)
	}
	current("of a session never leased", 0)
	a := mustAcquire(t, l, id, "worker-a")
	want("the first Acquire", a, 0)
	if err := l.Release(t.Context(), a); err != nil {
		t.Fatalf("Release: %v", err)
	}
	b := mustAcquire(t, l, id, "worker-b")
	want("Acquire after a Release", b, 0)
	if _, err := l.Acquire(t.Context(), id, "worker-x", leaseTTL); !errors.Is(err, cairn.ErrLeaseHeld) {
		t.Fatalf("Acquire of a held lease: got %v, want ErrLeaseHeld", err)
	}
	h.clock.Advance(leaseTTL)
	current("after the holder's lease expired", 0)
	c := mustAcquire(t, l, id, "worker-c")
	want("Acquire after an expiry", c, 1)
	current("held after a takeover", 1)
	d, err := l.Takeover(t.Context(), id, "worker-d", leaseTTL)
	if err != nil {
		t.Fatalf("Takeover: %v", err)
	}
	want("Takeover of a live lease", d, 2)
	h.clock.Advance(leaseTTL)
	d, err = l.Renew(t.Context(), d, leaseTTL)
	if err != nil {
		t.Fatalf("Renew of an expired lease nobody took: %v", err)
	}
	want("Renew", d, 2)
	if got, err := l.CurrentLeases(t.Context(), []string{id}); err != nil || got[id].Takeovers != 2 {
		t.Errorf("CurrentLeases = %+v, %v; want %s with 2 takeovers", got, err, id)
	}
	if err := l.Release(t.Context(), d); err != nil {
		t.Fatalf("Release: %v", err)
	}
	current("after a Release", 2)
	e, err := l.Takeover(t.Context(), id, "worker-e", leaseTTL)
	if err != nil {
		t.Fatalf("Takeover: %v", err)
	}
	want("Takeover of a released lease", e, 2)
	if err := s.Delete(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Fatal(err)
	}
	current("of a session created again", 0)
	want("the first Acquire of a session created again", mustAcquire(t, l, id, "worker-f"), 0)
}

// testLeaseAppendFenced: a fenced append keeps Append's contract.
func testLeaseAppendFenced(t *testing.T, h *harness, l cairn.Leaser) {
	s := l.(cairn.Store)
	id := newSession(t, s, nil)
	a := mustAcquire(t, l, id, "worker-a")
	evs := Conversation(0, "r1", "fenced")
	if err := l.AppendFenced(t.Context(), id, a, 0, evs...); err != nil {
		t.Fatalf("AppendFenced: %v", err)
	}
	if err := l.AppendFenced(t.Context(), id, a, 3, Custom(4, "stale")); !errors.Is(err, cairn.ErrConflict) {
		t.Errorf("AppendFenced at a stale seq: got %v, want ErrConflict", err)
	}
	if err := l.AppendFenced(t.Context(), id, a, int64(len(evs)), Custom(int64(len(evs))+2, "gap")); !errors.Is(err, cairn.ErrInvalidEvent) {
		t.Errorf("AppendFenced with a seq gap: got %v, want ErrInvalidEvent", err)
	}
	other := newSession(t, s, nil)
	if err := l.AppendFenced(t.Context(), other, a, 0, Custom(1, "x")); !errors.Is(err, cairn.ErrLeaseLost) {
		t.Errorf("AppendFenced to another session with this lease: got %v, want ErrLeaseLost", err)
	}
	if err := l.AppendFenced(t.Context(), "missing", a, 0, Custom(1, "x")); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("AppendFenced to a missing session: got %v, want ErrNotFound", err)
	}
	rec := mustLoad(t, s, id)
	assertEvents(t, rec.Events, evs)
	if rec.Info.LastSeq != int64(len(evs)) || rec.Info.Status != cairn.StatusCompleted {
		t.Errorf("info after fenced appends: last seq %d status %s, want %d completed", rec.Info.LastSeq, rec.Info.Status, len(evs))
	}
}

// testLeaseDelete: deleting a session deletes its lease; a new session
// with the same ID starts unleased, and the old lease cannot write to it.
func testLeaseDelete(t *testing.T, h *harness, l cairn.Leaser) {
	s := l.(cairn.Store)
	id := newSession(t, s, nil)
	a := mustAcquire(t, l, id, "worker-a")
	if err := s.Delete(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if err := l.AppendFenced(t.Context(), id, a, 0, Custom(1, "late")); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("AppendFenced after Delete: got %v, want ErrNotFound", err)
	}
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Fatal(err)
	}
	b := mustAcquire(t, l, id, "worker-b")
	if err := l.AppendFenced(t.Context(), id, a, 0, Custom(1, "old")); !errors.Is(err, cairn.ErrLeaseLost) {
		t.Errorf("AppendFenced with the deleted session's lease: got %v, want ErrLeaseLost", err)
	}
	if err := l.AppendFenced(t.Context(), id, b, 0, Custom(1, "new")); err != nil {
		t.Errorf("AppendFenced by the new holder: %v", err)
	}
}

// testLeaseConcurrentAcquire: of 16 racing Acquires exactly one wins.
func testLeaseConcurrentAcquire(t *testing.T, h *harness, l cairn.Leaser) {
	const racers = 16
	s := l.(cairn.Store)
	id := newSession(t, s, nil)
	won, errs := Race(racers, cairn.ErrLeaseHeld, func(i int) (string, error) {
		holder := fmt.Sprintf("w%d", i)
		_, err := l.Acquire(t.Context(), id, holder, leaseTTL)
		return holder, err
	})
	if len(errs) > 0 {
		t.Fatalf("errors other than ErrLeaseHeld: %v", errs)
	}
	if len(won) != 1 {
		t.Fatalf("%d holders acquired the lease (%v), want exactly 1", len(won), won)
	}
}

// testLeaseConcurrentFenced: a holder taken over mid-stream never gets a
// write in after the takeover.
func testLeaseConcurrentFenced(t *testing.T, h *harness, l cairn.Leaser) {
	s := l.(cairn.Store)
	id := newSession(t, s, nil)
	a := mustAcquire(t, l, id, "worker-a")
	for i := range int64(3) {
		if err := l.AppendFenced(t.Context(), id, a, i, Custom(i+1, "a")); err != nil {
			t.Fatal(err)
		}
	}
	b, err := l.Takeover(t.Context(), id, "worker-b", leaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var aErr, bErr error
	wg.Go(func() { aErr = l.AppendFenced(t.Context(), id, a, 3, Custom(4, "a")) })
	wg.Go(func() { bErr = l.AppendFenced(t.Context(), id, b, 3, Custom(4, "b")) })
	wg.Wait()
	if !errors.Is(aErr, cairn.ErrLeaseLost) {
		t.Errorf("the old holder's append: got %v, want ErrLeaseLost", aErr)
	}
	if bErr != nil {
		t.Errorf("the new holder's append: %v", bErr)
	}
	assertEvents(t, mustLoad(t, s, id).Events, []cairn.Event{Custom(1, "a"), Custom(2, "a"), Custom(3, "a"), Custom(4, "b")})
}

// testLeaseClaimNext: claims go oldest first, skip leased sessions and
// those the filter leaves out, and end with ErrNotFound.
func testLeaseClaimNext(t *testing.T, h *harness, l cairn.Leaser) {
	s := l.(cairn.Store)
	c := as[driver.Claimer](t, s)
	queued := map[string]string{"queue": "q1"}
	var ids []string
	for range 3 {
		ids = append(ids, newSession(t, s, queued))
		h.clock.Advance(time.Second)
	}
	newSession(t, s, map[string]string{"queue": "other"})
	held := mustAcquire(t, l, ids[0], "someone")
	filter := cairn.ListOptions{Status: []cairn.Status{cairn.StatusNew}, Labels: queued}
	var got []string
	for range 2 {
		lease, err := c.ClaimNext(t.Context(), "worker", leaseTTL, filter)
		if err != nil {
			t.Fatalf("ClaimNext: %v", err)
		}
		if lease.Holder != "worker" || lease.Token <= 0 {
			t.Errorf("ClaimNext = %+v", lease)
		}
		got = append(got, lease.Session)
	}
	if got[0] != ids[1] || got[1] != ids[2] {
		t.Errorf("claimed %v, want %v (oldest first, the leased one skipped)", got, ids[1:])
	}
	if _, err := c.ClaimNext(t.Context(), "worker", leaseTTL, filter); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("ClaimNext with nothing left: got %v, want ErrNotFound", err)
	}
	h.clock.Advance(leaseTTL)
	lease, err := c.ClaimNext(t.Context(), "worker", leaseTTL, filter)
	if err != nil || lease.Session != ids[0] || lease.Token <= held.Token || lease.Takeovers != 1 {
		t.Errorf("ClaimNext after every lease expired = %+v, %v; want %s with a new token and 1 takeover", lease, err, ids[0])
	}
}

// testLeaseConcurrentClaimNext: 16 claimers on two stores of one namespace
// (as two processes would be) take 40 queued sessions: each is claimed
// exactly once.
func testLeaseConcurrentClaimNext(t *testing.T, h *harness, l cairn.Leaser) {
	const sessions, claimers = 40, 16
	queued := map[string]string{"queue": "q1"}
	for range sessions {
		newSession(t, l.(cairn.Store), queued)
	}
	stores := []driver.Claimer{as[driver.Claimer](t, l.(cairn.Store)), as[driver.Claimer](t, h.store(t))}
	filter := cairn.ListOptions{Status: []cairn.Status{cairn.StatusNew, cairn.StatusRunning, cairn.StatusInterrupted}, Labels: queued}
	var (
		mu   sync.Mutex
		got  = map[string]int{}
		errs []error
		wg   sync.WaitGroup
	)
	start := make(chan struct{})
	for i := range claimers {
		wg.Go(func() {
			<-start
			c := stores[i%len(stores)]
			for {
				lease, err := c.ClaimNext(t.Context(), fmt.Sprintf("w%d", i), leaseTTL, filter)
				mu.Lock()
				switch {
				case err == nil:
					got[lease.Session]++
				case !errors.Is(err, cairn.ErrNotFound):
					errs = append(errs, err)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("errors other than ErrNotFound: %v", errs)
	}
	if len(got) != sessions {
		t.Errorf("%d sessions claimed, want %d", len(got), sessions)
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("session %s claimed %d times, want once", id, n)
		}
	}
}

// testLeaseCurrentLeases checks the leases of many sessions at once: the
// live ones only, as CurrentLease gives each.
func testLeaseCurrentLeases(t *testing.T, h *harness, l cairn.Leaser) {
	s := l.(cairn.Store)
	held, released, expired, free, deleted := newSession(t, s, nil), newSession(t, s, nil), newSession(t, s, nil), newSession(t, s, nil), newSession(t, s, nil)
	if err := l.Release(t.Context(), mustAcquire(t, l, released, "worker-r")); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if _, err := l.Acquire(t.Context(), expired, "worker-e", time.Second); err != nil {
		t.Fatalf("Acquire(%s): %v", expired, err)
	}
	mustAcquire(t, l, deleted, "worker-d")
	if err := s.Delete(t.Context(), deleted); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	h.clock.Advance(2 * time.Second)
	a := mustAcquire(t, l, held, "worker-a")
	got, err := l.CurrentLeases(t.Context(), []string{free, held, released, expired, deleted, "never-created", held})
	if err != nil {
		t.Fatalf("CurrentLeases: %v", err)
	}
	want, err := l.CurrentLease(t.Context(), held)
	if err != nil {
		t.Fatalf("CurrentLease(%s): %v", held, err)
	}
	g := got[held]
	if len(got) != 1 || g.Session != held || g.Holder != want.Holder || g.Token != want.Token || !g.Expires.Equal(want.Expires) || want.Token != a.Token || want.Holder != "worker-a" {
		t.Errorf("CurrentLeases = %+v\nwant only %s: %+v (CurrentLease gives %+v)", got, held, a, want)
	}
	if got, err := l.CurrentLeases(t.Context(), nil); err != nil || len(got) != 0 {
		t.Errorf("CurrentLeases(nil) = %v, %v; want an empty map", got, err)
	}
}
