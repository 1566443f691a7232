package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

func testDelete(t *testing.T, h *harness) {
	s := h.store(t)
	id := newSession(t, s, nil)
	other := newSession(t, s, nil)
	mustAppend(t, s, id, 0, Conversation(0, "r1", "secret")...)
	mustAppend(t, s, other, 0, UserTurn(0, "r1", "keep me")...)
	if err := s.Delete(t.Context(), id); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Load(t.Context(), id, 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Load after Delete: got %v, want ErrNotFound", err)
	}
	if err := s.Append(t.Context(), id, 16, Custom(17, "late")); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("late Append after Delete: got %v, want ErrNotFound", err)
	}
	if err := s.Append(t.Context(), id, 0, Custom(1, "late")); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Append at seq 0 after Delete: got %v, want ErrNotFound", err)
	}
	if _, err := s.Load(t.Context(), id, 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("a late append brought the session back: %v", err)
	}
	if err := s.Delete(t.Context(), id); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("second Delete: got %v, want ErrNotFound", err)
	}
	if got := ids(listAll(t, s, cairn.ListOptions{})); len(got) != 1 || got[0] != other {
		t.Errorf("List after Delete = %v, want only %s", got, other)
	}
	assertEvents(t, mustLoad(t, s, other).Events, UserTurn(0, "r1", "keep me"))
	// The ID can be used again, and starts empty.
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Fatalf("Create after Delete: %v", err)
	}
	if rec := mustLoad(t, s, id); len(rec.Events) != 0 || rec.Info.Steps != 0 || rec.Info.FirstMessage != "" {
		t.Fatalf("re-created session kept old data: %d events, %d steps, first %q", len(rec.Events), rec.Info.Steps, rec.Info.FirstMessage)
	}
}

// testLongTTL: on a store whose TTL runs past the years a Unix time in
// nanoseconds holds (2262), a session lives: it is loaded, listed and
// appended to, and a sweep leaves it.
func testLongTTL(t *testing.T, h *harness) {
	s := h.storeWith(t, cairn.StoreOptions{TTL: 280 * 365 * 24 * time.Hour})
	id := newSession(t, s, nil)
	mustAppend(t, s, id, 0, UserTurn(0, "r", "for a long time")...)
	if h.abilities.Sweep {
		if _, err := as[driver.Sweeper](t, s).Sweep(t.Context()); err != nil {
			t.Fatalf("Sweep: %v", err)
		}
	}
	if rec := mustLoad(t, s, id); len(rec.Events) != 4 {
		t.Errorf("Load: %d events, want 4", len(rec.Events))
	}
	if got := ids(listAll(t, s, cairn.ListOptions{})); len(got) != 1 || got[0] != id {
		t.Errorf("List = %v, want %s", got, id)
	}
}

// testTTL expires sessions on the store's clock, without sleeping: a session
// is visible until TTL after its last update and invisible at once after,
// to Load, List, Append and Delete alike.
func testTTL(t *testing.T, h *harness) {
	const ttl = time.Hour
	s := h.storeWith(t, cairn.StoreOptions{TTL: ttl})
	id := newSession(t, s, nil)
	idle := newSession(t, s, nil)
	h.clock.Advance(ttl - time.Minute)
	mustAppend(t, s, id, 0, UserTurn(0, "r", "still here")...) // refreshes id, not idle
	h.clock.Advance(2 * time.Minute)

	if _, err := s.Load(t.Context(), idle, 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Load of a session idle past its TTL: got %v, want ErrNotFound", err)
	}
	if err := s.Append(t.Context(), idle, 0, Custom(1, "x")); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Append to an expired session: got %v, want ErrNotFound", err)
	}
	if got := ids(listAll(t, s, cairn.ListOptions{})); len(got) != 1 || got[0] != id {
		t.Errorf("List = %v, want only the refreshed %s", got, id)
	}
	mustLoad(t, s, id)

	h.clock.Advance(ttl)
	if _, err := s.Load(t.Context(), id, 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Load past TTL after the last append: got %v, want ErrNotFound", err)
	}
	if got := listAll(t, s, cairn.ListOptions{}); len(got) != 0 {
		t.Errorf("List past every TTL = %v, want none", ids(got))
	}
	if h.abilities.Sweep {
		if _, err := as[driver.Sweeper](t, s).Sweep(t.Context()); err != nil {
			t.Fatalf("Sweep: %v", err)
		}
		if _, err := s.Load(t.Context(), id, 0); !errors.Is(err, cairn.ErrNotFound) {
			t.Errorf("Load after Sweep: got %v, want ErrNotFound", err)
		}
	}
	// An expired ID is free again.
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: idle}); err != nil {
		t.Errorf("Create with an expired session's ID: %v", err)
	}
	if rec := mustLoad(t, s, idle); len(rec.Events) != 0 {
		t.Errorf("re-created session has %d old events", len(rec.Events))
	}
}

// twoNamespaces opens stores a and b on two namespaces of the test's own
// and creates session id in each.
func twoNamespaces(t *testing.T, h *harness, id string) (a, b cairn.Store) {
	t.Helper()
	a = h.storeWith(t, cairn.StoreOptions{Namespace: h.ns + "_a"})
	b = h.storeWith(t, cairn.StoreOptions{Namespace: h.ns + "_b"})
	for _, s := range []cairn.Store{a, b} {
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatalf("Create the same ID in two namespaces: %v", err)
		}
	}
	return a, b
}

func testNamespaces(t *testing.T, h *harness) {
	const id = "shared-id"
	a, b := twoNamespaces(t, h, id)
	mustAppend(t, a, id, 0, UserTurn(0, "r", "in a")...)
	onlyA := newSession(t, a, nil)
	if rec := mustLoad(t, b, id); len(rec.Events) != 0 {
		t.Errorf("namespace b sees %d events appended in a", len(rec.Events))
	}
	if _, err := b.Load(t.Context(), onlyA, 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("b loads a's session: %v", err)
	}
	if err := b.Delete(t.Context(), onlyA); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("b deletes a's session: %v", err)
	}
	if got := ids(listAll(t, b, cairn.ListOptions{})); len(got) != 1 || got[0] != id {
		t.Errorf("b lists %v, want only its own %s", got, id)
	}
	if got := listAll(t, a, cairn.ListOptions{}); len(got) != 2 {
		t.Errorf("a lists %v, want its 2", ids(got))
	}
	if err := b.Delete(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	assertEvents(t, mustLoad(t, a, id).Events, UserTurn(0, "r", "in a"))
}

// SweepMany checks Sweep over more sessions than a backend that sweeps in
// batches reads in one: s, a driver.Sweeper opened with a TTL of an hour
// and clock's Now, gets expired sessions that expire, then live ones that
// do not. CountExpired counts the expired ones, Sweep deletes them and
// says so, CountExpired then counts none, and List lists the live ones.
// The caller then checks what its storage holds.
func SweepMany(t *testing.T, s cairn.Store, clock *Clock, expired, live int) {
	t.Helper()
	create := func(prefix string, n int) {
		t.Helper()
		for i := range n {
			if err := s.Create(t.Context(), cairn.SessionMeta{ID: fmt.Sprintf("%s-%d", prefix, i)}); err != nil {
				t.Fatalf("Create(%s-%d): %v", prefix, i, err)
			}
		}
	}
	create("old", expired)
	clock.Advance(30 * time.Minute)
	create("new", live)
	clock.Advance(45 * time.Minute)
	sw := as[driver.Sweeper](t, s)
	if n, err := sw.CountExpired(t.Context()); n != expired || err != nil {
		t.Errorf("CountExpired = %d, %v; want %d", n, err, expired)
	}
	if n, err := sw.Sweep(t.Context()); n != expired || err != nil {
		t.Errorf("Sweep = %d, %v; want %d", n, err, expired)
	}
	if n, err := sw.CountExpired(t.Context()); n != 0 || err != nil {
		t.Errorf("CountExpired after Sweep = %d, %v; want 0", n, err)
	}
	if got := listAll(t, s, cairn.ListOptions{}); len(got) != live {
		t.Errorf("after Sweep %d sessions listed, want %d", len(got), live)
	}
}

// testSweep: Sweep deletes the namespace's expired sessions, and only
// those, and returns how many it deleted.
func testSweep(t *testing.T, h *harness) {
	const ttl = time.Hour
	s := h.storeWith(t, cairn.StoreOptions{TTL: ttl})
	other := h.storeWith(t, cairn.StoreOptions{Namespace: h.ns + "_other", TTL: ttl})
	sweep := func(s cairn.Store, want int, when string) {
		t.Helper()
		if n, err := as[driver.Sweeper](t, s).CountExpired(t.Context()); err != nil || n != want {
			t.Errorf("CountExpired %s = %d, %v; want %d", when, n, err, want)
		}
		n, err := as[driver.Sweeper](t, s).Sweep(t.Context())
		if err != nil {
			t.Fatalf("Sweep %s: %v", when, err)
		}
		if n != want {
			t.Errorf("Sweep %s deleted %d sessions, want %d", when, n, want)
		}
	}
	sweep(s, 0, "of an empty namespace")
	idle := newSession(t, s, nil)
	used := newSession(t, s, nil)
	mustAppend(t, s, used, 0, UserTurn(0, "r", "old")...)
	kept := newSession(t, s, nil)
	otherIdle := newSession(t, other, nil)
	sweep(s, 0, "before any TTL passed")
	h.clock.Advance(ttl - time.Minute)
	mustAppend(t, s, kept, 0, UserTurn(0, "r", "kept")...)
	h.clock.Advance(2 * time.Minute)
	sweep(s, 2, "past two sessions' TTL")
	sweep(s, 0, "a second time")
	assertEvents(t, mustLoad(t, s, kept).Events, UserTurn(0, "r", "kept"))
	sweep(other, 1, "of another namespace, untouched by the first")
	for _, id := range []string{idle, used, otherIdle} {
		st := s
		if id == otherIdle {
			st = other
		}
		if _, err := st.Load(t.Context(), id, 0); !errors.Is(err, cairn.ErrNotFound) {
			t.Errorf("Load of swept session %s: got %v, want ErrNotFound", id, err)
		}
		if err := st.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Errorf("Create with a swept session's ID: %v", err)
		}
	}
	if rec := mustLoad(t, s, used); len(rec.Events) != 0 || rec.Info.Steps != 0 {
		t.Errorf("a session created with a swept one's ID has %d events and %d steps, want none", len(rec.Events), rec.Info.Steps)
	}
}

// testCheck: Check of sound data finds no damage, counts the namespace's
// sessions (not those deleted, nor another namespace's) and changes
// nothing.
func testCheck(t *testing.T, h *harness) {
	s := h.store(t)
	check := func(wantSessions int, when string) {
		t.Helper()
		rep, err := as[driver.Checker](t, s).Check(t.Context())
		if err != nil {
			t.Fatalf("Check %s: %v", when, err)
		}
		if rep.Sessions != wantSessions {
			t.Errorf("Check %s checked %d sessions, want %d", when, rep.Sessions, wantSessions)
		}
		for _, p := range rep.Problems {
			if p.Damage {
				t.Errorf("Check %s of sound data reports damage: %+v", when, p)
			}
		}
	}
	check(0, "of an empty namespace")
	a := newSession(t, s, nil)
	mustAppend(t, s, a, 0, Conversation(0, "r1", "checked")...)
	newSession(t, s, nil)
	gone := newSession(t, s, nil)
	mustAppend(t, s, gone, 0, UserTurn(0, "r1", "deleted")...)
	if err := s.Delete(t.Context(), gone); err != nil {
		t.Fatal(err)
	}
	newSession(t, h.storeWith(t, cairn.StoreOptions{Namespace: h.ns + "_other"}), nil)
	before := mustLoad(t, s, a)
	check(2, "of two sessions")
	assertUnchanged(t, s, a, before)
}

// testClosed: after Close (twice), every method of the store and of each
// declared ability returns ErrClosed, and none of them changed anything.
func testClosed(t *testing.T, h *harness) {
	s := h.store(t)
	id := newSession(t, s, nil)
	mustAppend(t, s, id, 0, Custom(1, "x"))
	var lease cairn.Lease
	if h.abilities.Leases {
		lease = mustAcquire(t, as[cairn.Leaser](t, s), id, "worker-a")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	ctx := t.Context()
	calls := map[string]func() error{
		"Create": func() error { return s.Create(ctx, cairn.SessionMeta{ID: "made-after-close"}) },
		"Append": func() error { return s.Append(ctx, id, 1, Custom(2, "x")) },
		"Load":   func() error { _, err := s.Load(ctx, id, 0); return err },
		"List":   func() error { _, err := s.List(ctx, cairn.ListOptions{}); return err },
		"Delete": func() error { return s.Delete(ctx, id) },
	}
	if h.abilities.Sweep {
		calls["Sweep"] = func() error { _, err := as[driver.Sweeper](t, s).Sweep(ctx); return err }
	}
	if h.abilities.Check {
		calls["Check"] = func() error { _, err := as[driver.Checker](t, s).Check(ctx); return err }
	}
	if h.abilities.Snapshots {
		sn := as[cairn.Snapshotter](t, s)
		snap := cairn.Snapshot{Seq: 1, Data: snapData("after close")}
		calls["PutSnapshot"] = func() error { return sn.PutSnapshot(ctx, id, snap) }
		calls["LoadSnapshot"] = func() error { _, err := sn.LoadSnapshot(ctx, id); return err }
		calls["DropSnapshot"] = func() error { return sn.DropSnapshot(ctx, id) }
	}
	if h.abilities.Leases {
		l := as[cairn.Leaser](t, s)
		calls["Acquire"] = func() error { _, err := l.Acquire(ctx, id, "worker-b", leaseTTL); return err }
		calls["Takeover"] = func() error { _, err := l.Takeover(ctx, id, "worker-b", leaseTTL); return err }
		calls["Renew"] = func() error { _, err := l.Renew(ctx, lease, leaseTTL); return err }
		calls["Release"] = func() error { return l.Release(ctx, lease) }
		calls["CurrentLease"] = func() error { _, err := l.CurrentLease(ctx, id); return err }
		calls["AppendFenced"] = func() error { return l.AppendFenced(ctx, id, lease, 1, Custom(2, "x")) }
	}
	if h.abilities.Claims {
		c := as[driver.Claimer](t, s)
		calls["ClaimNext"] = func() error { _, err := c.ClaimNext(ctx, "worker-b", leaseTTL, cairn.ListOptions{}); return err }
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, cairn.ErrClosed) {
			t.Errorf("%s after Close: got %v, want ErrClosed", name, err)
		}
	}
	// A store opened again sees the session as it was before Close.
	again := h.store(t)
	assertEvents(t, mustLoad(t, again, id).Events, []cairn.Event{Custom(1, "x")})
	if _, err := again.Load(ctx, "made-after-close", 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Create after Close made a session: Load got %v, want ErrNotFound", err)
	}
	if h.abilities.Snapshots {
		wantSnapshot(t, as[cairn.Snapshotter](t, again), id, nil, "after a PutSnapshot on a closed store")
	}
	if h.abilities.Leases {
		if cur, err := as[cairn.Leaser](t, again).CurrentLease(ctx, id); err != nil || cur.Token != lease.Token {
			t.Errorf("the lease after the calls on a closed store = %+v, %v; want %+v still held", cur, err, lease)
		}
	}
}
