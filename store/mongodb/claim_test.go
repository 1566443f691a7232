package mongodb_test

import (
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/storetest"
)

// The queue of the claim tests, and the filter cairn worker claims with.
var queue, workerFilter = storetest.Queue, storetest.WorkerFilter

// createQueued creates session id with labels, created at the given time
// (the store's now when zero).
func createQueued(t *testing.T, s cairn.Store, id string, labels map[string]string, at time.Time) {
	t.Helper()
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: id, Labels: labels, CreatedAt: at}); err != nil {
		t.Fatalf("Create(%s): %v", id, err)
	}
}

// TestStore_ClaimOldestFirst checks that claims go by creation time (as
// given to Create, not the order of the Creates), then by ID, across the
// statuses of the filter, and leave out other statuses and labels.
func TestStore_ClaimOldestFirst(t *testing.T) {
	clock := storetest.NewClock()
	s := openStore(t, cairn.StoreOptions{Namespace: newNamespace(), Now: clock.Now})
	t0 := clock.Now()
	createQueued(t, s, "third", queue, t0.Add(2*time.Second))
	createQueued(t, s, "first-b", queue, t0)
	createQueued(t, s, "first-a", queue, t0)
	createQueued(t, s, "second", queue, t0.Add(time.Second))
	createQueued(t, s, "other", map[string]string{"queue": "other"}, t0.Add(-time.Hour))
	createQueued(t, s, "done", queue, t0.Add(-time.Hour))
	started := cairn.MustEvent(cairn.KindRunStarted, "r", cairn.RunStarted{RunID: "r", Agent: "tester", Model: "offline"})
	stopped := cairn.MustEvent(cairn.KindRunInterrupted, "r", cairn.RunInterrupted{Reason: cairn.InterruptCancelled})
	for id, evs := range map[string][]cairn.Event{
		"done":   storetest.UserTurn(0, "r", "hi"),
		"second": storetest.Number(0, started, stopped),
		"third":  storetest.Number(0, started),
	} {
		if err := s.Append(t.Context(), id, 0, evs...); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"first-a", "first-b", "second", "third"}
	if got := storetest.ClaimAll(t, s, workerFilter); !slices.Equal(got, want) {
		t.Errorf("claimed %v, want %v", got, want)
	}
}

// TestStore_ClaimSkipsLeased checks that a claim passes over sessions with
// a live lease, takes one whose run was interrupted and its lease released
// at once, and is not misled by a lease hint that says free while a lease
// is live.
func TestStore_ClaimSkipsLeased(t *testing.T) {
	clock := storetest.NewClock()
	s := openStore(t, cairn.StoreOptions{Namespace: newNamespace(), Now: clock.Now})
	for _, id := range []string{"a", "b", "c", "d"} {
		createQueued(t, s, id, queue, time.Time{})
		clock.Advance(time.Second)
	}
	held, err := s.Acquire(t.Context(), "a", "other", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(t.Context(), "b", "other", time.Hour); err != nil {
		t.Fatal(err)
	}
	// A stale hint on b: its lease is live, the hint says none.
	sessions, _ := s.Collections()
	if _, err := client(t).Collection(sessions).UpdateOne(t.Context(), bson.D{{Key: "_id", Value: "b"}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "lease_expires_ns", Value: 0}}}}); err != nil {
		t.Fatal(err)
	}
	lease, err := s.ClaimNext(t.Context(), "w", time.Minute, workerFilter)
	if err != nil || lease.Session != "c" {
		t.Fatalf("ClaimNext = %+v, %v; want c", lease, err)
	}
	stop := storetest.Number(0,
		cairn.MustEvent(cairn.KindRunStarted, "r", cairn.RunStarted{RunID: "r", Agent: "tester", Model: "offline"}),
		cairn.MustEvent(cairn.KindRunInterrupted, "r", cairn.RunInterrupted{Reason: cairn.InterruptShutdown}))
	if err := s.AppendFenced(t.Context(), "a", held, 0, stop...); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(t.Context(), held); err != nil {
		t.Fatal(err)
	}
	if got := storetest.ClaimAll(t, s, workerFilter); !slices.Equal(got, []string{"a", "d"}) {
		t.Errorf("after a's run was interrupted and its lease released: claimed %v, want [a d]", got)
	}
	clock.Advance(2 * time.Hour) // every lease expired
	if got := storetest.ClaimAll(t, s, workerFilter); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("after every lease expired: claimed %v, want [a b c d]", got)
	}
}

// TestStore_ClaimIndex checks that the index ClaimNext's query sorts and
// filters by exists.
func TestStore_ClaimIndex(t *testing.T) {
	s := openStore(t, cairn.StoreOptions{Namespace: newNamespace()})
	sessions, _ := s.Collections()
	specs, err := client(t).Collection(sessions).Indexes().ListSpecifications(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range specs {
		if sp.Name == "status_created_id" {
			var keys bson.D
			if err := bson.Unmarshal(sp.KeysDocument, &keys); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, k := range keys {
				names = append(names, k.Key)
			}
			if !slices.Equal(names, []string{"status", "created_ns", "_id"}) {
				t.Errorf("index status_created_id on %v, want status, created_ns, _id", names)
			}
			return
		}
	}
	t.Errorf("no index status_created_id on %s", sessions)
}
