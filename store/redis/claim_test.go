package redis_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/redis"
	"github.com/cairnhq/cairn/store/storetest"
)

// The queue of the claim tests, and the filter cairn worker claims with.
var queue, workerFilter = storetest.Queue, storetest.WorkerFilter

// Events that move a session's status, one at a time.
var (
	runStarted  = cairn.MustEvent(cairn.KindRunStarted, "r", cairn.RunStarted{RunID: "r", Agent: "tester", Model: "offline"})
	runFinished = cairn.MustEvent(cairn.KindRunFinished, "r", cairn.RunFinished{Status: cairn.StatusCompleted, Output: "done"})
	runStopped  = cairn.MustEvent(cairn.KindRunInterrupted, "r", cairn.RunInterrupted{Reason: cairn.InterruptCancelled})
	runApproval = cairn.MustEvent(cairn.KindRunInterrupted, "r", cairn.RunInterrupted{Reason: cairn.InterruptApproval})
)

// createAt creates session id with the queue label, created at the store
// clock's now unless at is set.
func createAt(t *testing.T, s cairn.Store, id string, at time.Time) {
	t.Helper()
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: id, Labels: queue, CreatedAt: at}); err != nil {
		t.Fatalf("Create(%s): %v", id, err)
	}
}

// step appends events to id after its last seq.
func step(t *testing.T, s cairn.Store, id string, events ...cairn.Event) {
	t.Helper()
	rec, err := s.Load(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, id, rec.Info.LastSeq, storetest.Number(rec.Info.LastSeq, events...)...)
}

// claimSet returns the members of a namespace's claim set, the marker ""
// included, in order.
func claimSet(t *testing.T, ns string) []string {
	t.Helper()
	m, err := adminClient(t).ZRange(t.Context(), "cairn:"+ns+":claimable", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func wantClaimSet(t *testing.T, ns string, want ...string) {
	t.Helper()
	if got := claimSet(t, ns); !slices.Equal(got, want) {
		t.Errorf("claim set = %q, want %q", got, want)
	}
}

// TestStore_ClaimFollowsStatus moves sessions through every status and
// checks that claims take exactly the new, running and interrupted ones,
// in the order of their creation time (given or not), and that the claim
// set follows appends (plain and fenced) into and out of those statuses.
func TestStore_ClaimFollowsStatus(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			clock := storetest.NewClock()
			ns := "t_" + testenv.RandHex(6)
			s := m.open(t, cairn.StoreOptions{Namespace: ns, Now: clock.Now})
			early := time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC)
			createAt(t, s, "late", clock.Now().Add(time.Hour))
			for _, id := range []string{"done", "stopped", "running", "approval", "fresh"} {
				clock.Advance(time.Second)
				createAt(t, s, id, time.Time{})
			}
			createAt(t, s, "early", early)
			step(t, s, "done", runStarted, runFinished)
			step(t, s, "stopped", runStarted, runStopped)
			step(t, s, "running", runStarted)
			step(t, s, "approval", runStarted, runApproval)
			if m.name == "joint" {
				wantClaimSet(t, ns, "", "early", "stopped", "running", "fresh", "late")
			}
			got := storetest.ClaimAll(t, s, workerFilter)
			if want := []string{"early", "stopped", "running", "fresh", "late"}; !slices.Equal(got, want) {
				t.Fatalf("claimed %v, want %v", got, want)
			}

			// A new run of a completed session makes it claimable again,
			// with its creation time as score.
			step(t, s, "done", runStarted)
			if m.name == "joint" {
				sc, err := adminClient(t).ZScore(t.Context(), "cairn:"+ns+":claimable", "early").Result()
				if err != nil || int64(sc) != early.UnixMicro() {
					t.Errorf("score of early = %v, %v; want %d", int64(sc), err, early.UnixMicro())
				}
			}
			if got := storetest.ClaimAll(t, s, workerFilter); !slices.Equal(got, []string{"done"}) {
				t.Fatalf("after a new run of done: claimed %v, want [done]", got)
			}

			// A fenced append that completes a session takes it out.
			clock.Advance(2 * time.Minute) // every lease expired
			lease, err := s.ClaimNext(t.Context(), "w", time.Minute, workerFilter)
			if err != nil || lease.Session != "early" {
				t.Fatalf("ClaimNext = %+v, %v; want early", lease, err)
			}
			rec, err := s.Load(t.Context(), "early", 0)
			if err != nil {
				t.Fatal(err)
			}
			evs := storetest.Number(rec.Info.LastSeq, runStarted, runFinished)
			if err := s.AppendFenced(t.Context(), "early", lease, rec.Info.LastSeq, evs...); err != nil {
				t.Fatal(err)
			}
			if err := s.Release(t.Context(), lease); err != nil {
				t.Fatal(err)
			}
			if m.name == "joint" {
				wantClaimSet(t, ns, "", "done", "stopped", "running", "fresh", "late")
			}
			if got := storetest.ClaimAll(t, s, workerFilter); !slices.Equal(got, []string{"done", "stopped", "running", "fresh", "late"}) {
				t.Errorf("claimed %v, want every claimable session but early", got)
			}
		})
	}
}

// TestStore_ClaimSkipsGone checks that a claim passes over a session that
// expired on the store's clock and one whose keys Redis deleted on their
// TTL, and drops both from the claim set.
func TestStore_ClaimSkipsGone(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			clock := storetest.NewClock()
			ns := "t_" + testenv.RandHex(6)
			s := m.open(t, cairn.StoreOptions{Namespace: ns, TTL: time.Hour, Now: clock.Now})
			createAt(t, s, "expired", time.Time{})
			clock.Advance(40 * time.Minute)
			createAt(t, s, "deleted", time.Time{})
			createAt(t, s, "live", time.Time{})
			clock.Advance(30 * time.Minute)
			tag := "cairn:" + ns + ":{" + ns + ":deleted}"
			if err := adminClient(t).Del(t.Context(), tag+":meta", tag+":events").Err(); err != nil {
				t.Fatal(err)
			}
			if got := storetest.ClaimAll(t, s, workerFilter); !slices.Equal(got, []string{"live"}) {
				t.Fatalf("claimed %v, want [live]", got)
			}
			if m.name == "joint" {
				wantClaimSet(t, ns, "", "live")
				got, err := adminClient(t).TTL(t.Context(), "cairn:"+ns+":claimable").Result()
				if err != nil || got <= 0 || got > time.Hour {
					t.Errorf("TTL of the claim set = %v, %v; want in (0, 1h]", got, err)
				}
			}
		})
	}
}

// TestStore_ClaimBuildsSet checks that sessions written without a claim
// set (by an earlier version of the store, or before the set expired) are
// claimed, oldest first, even once later sessions made a new set.
func TestStore_ClaimBuildsSet(t *testing.T) {
	clock := storetest.NewClock()
	ns := "t_" + testenv.RandHex(6)
	s := openStore(t, cairn.StoreOptions{Namespace: ns, Now: clock.Now})
	for _, id := range []string{"old1", "old2", "old3"} {
		createAt(t, s, id, time.Time{})
		clock.Advance(time.Second)
	}
	step(t, s, "old2", runStarted, runFinished)
	key := "cairn:" + ns + ":claimable"
	if err := adminClient(t).Del(t.Context(), key).Err(); err != nil {
		t.Fatal(err)
	}
	lease, err := s.ClaimNext(t.Context(), "w", time.Minute, workerFilter)
	if err != nil || lease.Session != "old1" {
		t.Fatalf("ClaimNext without a claim set = %+v, %v; want old1", lease, err)
	}
	wantClaimSet(t, ns, "", "old1", "old3")

	// A set that a write made again after the old one vanished has no
	// marker: the claim still sees the sessions written before.
	if err := adminClient(t).Del(t.Context(), key).Err(); err != nil {
		t.Fatal(err)
	}
	createAt(t, s, "new", time.Time{})
	wantClaimSet(t, ns, "new")
	if got := storetest.ClaimAll(t, s, workerFilter); !slices.Equal(got, []string{"old3", "new"}) {
		t.Errorf("claimed %v, want [old3 new]", got)
	}
	wantClaimSet(t, ns, "", "old1", "old3", "new")
}

// TestStore_ClaimLongWalk puts more claimable sessions of another queue in
// front of the one a claim wants than one run of the claim script reads,
// so that the claim goes on where each run stopped.
func TestStore_ClaimLongWalk(t *testing.T) {
	ns := "t_" + testenv.RandHex(6)
	s := openStore(t, cairn.StoreOptions{Namespace: ns})
	other := map[string]string{"queue": "other"}
	for i := range 700 {
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: fmt.Sprintf("o%03d", i), Labels: other}); err != nil {
			t.Fatal(err)
		}
	}
	createAt(t, s, "mine", time.Time{})
	if got := storetest.ClaimAll(t, s, workerFilter); !slices.Equal(got, []string{"mine"}) {
		t.Errorf("claimed %v, want [mine]", got)
	}
	if n := len(claimSet(t, ns)); n != 702 {
		t.Errorf("claim set holds %d members, want 702 (the marker and every session)", n)
	}
}

// TestStore_ClaimOtherStatuses checks the claims the claim set cannot
// serve: a filter on other statuses, or on none, lists and acquires.
func TestStore_ClaimOtherStatuses(t *testing.T) {
	eachMode(t, 0, func(t *testing.T, s *redis.Store, _ string, clock *storetest.Clock) {
		for _, id := range []string{"a", "b", "c"} {
			createAt(t, s, id, time.Time{})
			clock.Advance(time.Second)
		}
		step(t, s, "b", runStarted, runFinished)
		step(t, s, "c", runStarted, runApproval)
		done := cairn.ListOptions{Status: []cairn.Status{cairn.StatusCompleted, cairn.StatusAwaiting}, Labels: queue}
		if got := storetest.ClaimAll(t, s, done); !slices.Equal(got, []string{"b", "c"}) {
			t.Errorf("claimed %v with %v, want [b c]", got, done.Status)
		}
		clock.Advance(2 * time.Minute)
		if got := storetest.ClaimAll(t, s, cairn.ListOptions{}); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Errorf("claimed %v with no filter, want [a b c]", got)
		}
	})
}
