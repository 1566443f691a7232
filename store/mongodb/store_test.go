package mongodb_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/mongodb"
	"github.com/cairnhq/cairn/store/storetest"
)

var nsCount int

// newNamespace returns a namespace no other test uses.
func newNamespace() string {
	nsCount++
	return fmt.Sprintf("t_%d_%d", time.Now().UnixNano()%1e9, nsCount)
}

// collections returns the namespace's collections, on a client of the
// test's own.
func collections(t *testing.T, s *mongodb.Store) (sessions, events *mongo.Collection) {
	t.Helper()
	db := client(t)
	sn, en := s.Collections()
	return db.Collection(sn), db.Collection(en)
}

func count(t *testing.T, c *mongo.Collection, filter bson.D) int64 {
	t.Helper()
	n, err := c.CountDocuments(t.Context(), filter)
	if err != nil {
		t.Fatalf("count %s: %v", c.Name(), err)
	}
	return n
}

func create(t testing.TB, s cairn.Store, id string) {
	t.Helper()
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Fatalf("Create(%s): %v", id, err)
	}
}

func appendOK(t testing.TB, s cairn.Store, id string, expect int64, evs ...cairn.Event) {
	t.Helper()
	if err := s.Append(t.Context(), id, expect, evs...); err != nil {
		t.Fatalf("Append(%s, expect %d): %v", id, expect, err)
	}
}

func load(t *testing.T, s cairn.Store, id string) *cairn.Record {
	t.Helper()
	rec, err := s.Load(t.Context(), id, 0)
	if err != nil {
		t.Fatalf("Load(%s): %v", id, err)
	}
	return rec
}

// tags returns the writer tags of storetest.Custom events.
func tags(t *testing.T, evs []cairn.Event) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		var c cairn.Custom
		var tag string
		if err := json.Unmarshal(e.Data, &c); err != nil || json.Unmarshal(c.Payload, &tag) != nil {
			t.Fatalf("seq %d: not a tagged custom event: %s", e.Seq, e.Data)
		}
		out = append(out, tag)
	}
	return out
}

func TestStore_DeleteRemovesEveryDocument(t *testing.T) {
	s := openStore(t, cairn.StoreOptions{Namespace: newNamespace()})
	sessions, events := collections(t, s)
	create(t, s, "gone")
	create(t, s, "kept")
	appendOK(t, s, "gone", 0, storetest.Conversation(0, "r1", "secret")...)
	appendOK(t, s, "kept", 0, storetest.UserTurn(0, "r1", "keep")...)
	if got := count(t, events, bson.D{{Key: "session", Value: "gone"}}); got != 16 {
		t.Fatalf("before Delete: %d event documents, want 16", got)
	}
	if err := s.Delete(t.Context(), "gone"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if got := count(t, sessions, bson.D{{Key: "_id", Value: "gone"}}); got != 0 {
		t.Errorf("after Delete: %d session documents, want 0", got)
	}
	if got := count(t, events, bson.D{{Key: "session", Value: "gone"}}); got != 0 {
		t.Errorf("after Delete: %d event documents, want 0", got)
	}
	if got := count(t, events, bson.D{{Key: "session", Value: "kept"}}); got != 4 {
		t.Errorf("the other session has %d event documents, want 4", got)
	}
}

// insertStray writes an event document by hand as a writer that died
// between its insert and its commit would have left it.
func insertStray(t *testing.T, events *mongo.Collection, id string, seq int64, age time.Duration) {
	t.Helper()
	_, err := events.InsertOne(t.Context(), bson.D{
		{Key: "session", Value: id},
		{Key: "seq", Value: seq},
		{Key: "token", Value: "dead-writer"},
		{Key: "written_at", Value: bson.NewDateTimeFromTime(time.Now().Add(-age))},
		{Key: "event", Value: []byte(`{"v":1,"seq":` + fmt.Sprint(seq) + `,"kind":"custom","stray":true}`)},
	})
	if err != nil {
		t.Fatalf("insert stray: %v", err)
	}
}

func TestStore_StaleStrayDoesNotBlock(t *testing.T) {
	s := openStore(t, cairn.StoreOptions{Namespace: newNamespace()})
	_, events := collections(t, s)
	create(t, s, "a")
	appendOK(t, s, "a", 0, storetest.Custom(1, "w1"), storetest.Custom(2, "w1"))
	insertStray(t, events, "a", 3, 2*mongodb.StaleAfter)
	insertStray(t, events, "a", 4, 2*mongodb.StaleAfter)

	if got := tags(t, load(t, s, "a").Events); len(got) != 2 {
		t.Fatalf("Load with strays above last seq returned %v, want the 2 committed events", got)
	}
	appendOK(t, s, "a", 2, storetest.Custom(3, "w2"))
	rec := load(t, s, "a")
	if got, want := fmt.Sprint(tags(t, rec.Events)), "[w1 w1 w2]"; got != want {
		t.Fatalf("after the append over stale strays: events %s, want %s", got, want)
	}
	if rec.Info.LastSeq != 3 {
		t.Errorf("last seq = %d, want 3", rec.Info.LastSeq)
	}
	if got := count(t, events, bson.D{{Key: "token", Value: "dead-writer"}}); got != 0 {
		t.Errorf("%d stale strays left, want 0", got)
	}
	appendOK(t, s, "a", 3, storetest.Custom(4, "w3"))
}

// TestStore_FreshUncommittedBlocks: a live writer between its insert and
// its commit holds seq 2. An append at seq 1 cannot know yet whether it
// conflicts: it waits, and when its context ends first it returns an
// outage (nothing written, outcome of the race unknown), never ErrConflict
// while the session is still at seq 1.
func TestStore_FreshUncommittedBlocks(t *testing.T) {
	s := openStore(t, cairn.StoreOptions{Namespace: newNamespace()})
	_, events := collections(t, s)
	create(t, s, "a")
	appendOK(t, s, "a", 0, storetest.Custom(1, "w1"))
	insertStray(t, events, "a", 2, 0) // written after the session's fence: it can commit
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	err := s.Append(ctx, "a", 1, storetest.Custom(2, "w2"))
	if errors.Is(err, cairn.ErrConflict) || !cairn.IsUnavailable(err) {
		t.Fatalf("Append over an in-flight writer's position: got %v, want an outage (the race is undecided), not a conflict", err)
	}
	if got := tags(t, load(t, s, "a").Events); fmt.Sprint(got) != "[w1]" {
		t.Fatalf("Load = %v, want [w1]", got)
	}
	if got := count(t, events, bson.D{{Key: "token", Value: "dead-writer"}}); got != 1 {
		t.Errorf("the in-flight writer's document was touched: %d left, want 1", got)
	}
}

// TestStore_UncommittedDecides: an append that meets a live writer's
// uncommitted event waits for the race to be decided. The writer commits:
// a conflict. The writer gives up and removes its event: the append goes
// through.
func TestStore_UncommittedDecides(t *testing.T) {
	s := openStore(t, cairn.StoreOptions{Namespace: newNamespace()})
	sessions, events := collections(t, s)
	for _, c := range []struct {
		id, name string
		decide   func(id string) error
		want     func(error) bool
		tags     string
	}{
		{"commits", "the writer commits", func(id string) error {
			_, err := sessions.UpdateOne(t.Context(), bson.D{{Key: "_id", Value: id}, {Key: "last_seq", Value: 1}},
				bson.D{{Key: "$set", Value: bson.D{{Key: "last_seq", Value: 2}}}})
			return err
		}, func(err error) bool { return errors.Is(err, cairn.ErrConflict) }, ""},
		{"gives-up", "the writer gives up", func(id string) error {
			_, err := events.DeleteMany(t.Context(), bson.D{{Key: "session", Value: id}, {Key: "token", Value: "dead-writer"}})
			return err
		}, func(err error) bool { return err == nil }, "[w1 w2]"},
	} {
		t.Run(c.id, func(t *testing.T) {
			create(t, s, c.id)
			appendOK(t, s, c.id, 0, storetest.Custom(1, "w1"))
			insertStray(t, events, c.id, 2, 0)
			done := make(chan error, 1)
			go func() { done <- s.Append(t.Context(), c.id, 1, storetest.Custom(2, "w2")) }()
			if err := c.decide(c.id); err != nil {
				t.Fatal(err)
			}
			if err := <-done; !c.want(err) {
				t.Fatalf("%s: Append got %v", c.name, err)
			}
			if c.tags != "" {
				if got := fmt.Sprint(tags(t, load(t, s, c.id).Events)); got != c.tags {
					t.Errorf("Load = %s, want %s", got, c.tags)
				}
			}
		})
	}
}

func TestStore_CreateClearsOldEvents(t *testing.T) {
	s := openStore(t, cairn.StoreOptions{Namespace: newNamespace()})
	_, events := collections(t, s)
	// Event documents of an ID with no session, recent ones included.
	insertStray(t, events, "reborn", 1, time.Second)
	insertStray(t, events, "reborn", 2, time.Hour)
	create(t, s, "reborn")
	if got := count(t, events, bson.D{{Key: "session", Value: "reborn"}}); got != 0 {
		t.Fatalf("Create left %d old event documents, want 0", got)
	}
	appendOK(t, s, "reborn", 0, storetest.Custom(1, "new"))
	if got := tags(t, load(t, s, "reborn").Events); fmt.Sprint(got) != "[new]" {
		t.Fatalf("Load = %v, want [new]", got)
	}
}

func TestStore_InterruptedCreateAndDelete(t *testing.T) {
	s := openStore(t, cairn.StoreOptions{Namespace: newNamespace()})
	sessions, _ := collections(t, s)
	// Documents a Create and a Delete left when their process died.
	for _, d := range []struct {
		id   string
		seq  int64
		busy time.Duration
	}{{"creating-old", -1, time.Hour}, {"erasing-old", -2, time.Hour}, {"creating-now", -1, 0}} {
		_, err := sessions.InsertOne(t.Context(), bson.D{
			{Key: "_id", Value: d.id}, {Key: "last_seq", Value: d.seq}, {Key: "expires_ns", Value: int64(1 << 62)},
			{Key: "busy_since", Value: bson.NewDateTimeFromTime(time.Now().Add(-d.busy))},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"creating-old", "erasing-old", "creating-now"} {
		if _, err := s.Load(t.Context(), id, 0); !errors.Is(err, cairn.ErrNotFound) {
			t.Errorf("Load(%s) of an unfinished document: got %v, want ErrNotFound", id, err)
		}
		if err := s.Append(t.Context(), id, 0, storetest.Custom(1, "x")); !errors.Is(err, cairn.ErrNotFound) {
			t.Errorf("Append(%s) to an unfinished document: got %v, want ErrNotFound", id, err)
		}
	}
	page, err := s.List(t.Context(), cairn.ListOptions{})
	if err != nil || len(page.Sessions) != 0 {
		t.Errorf("List = %v, %v; want no sessions", page, err)
	}
	create(t, s, "creating-old")
	create(t, s, "erasing-old")
	// A Create in progress that neither finishes nor fails: the new Create
	// cannot say the session exists (no reader sees it) nor make it.
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := s.Create(ctx, cairn.SessionMeta{ID: "creating-now"}); errors.Is(err, cairn.ErrExists) || !cairn.IsUnavailable(err) {
		t.Errorf("Create over a Create in progress: got %v, want an outage, not ErrExists", err)
	}
	appendOK(t, s, "creating-old", 0, storetest.Custom(1, "x"))
}

// TestStore_CreateOverErasure: a Delete marked the session erased and died
// (or is slow) before removing it. Load says it is gone, so Create makes
// it anew at once; the erasure's own removals, should they come late,
// leave the new session's documents alone.
func TestStore_CreateOverErasure(t *testing.T) {
	s := openStore(t, cairn.StoreOptions{Namespace: newNamespace()})
	sessions, events := collections(t, s)
	create(t, s, "e")
	appendOK(t, s, "e", 0, storetest.Custom(1, "old"), storetest.Custom(2, "old"))
	mark := bson.NewDateTimeFromTime(time.Now())
	if _, err := sessions.UpdateOne(t.Context(), bson.D{{Key: "_id", Value: "e"}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "last_seq", Value: -2}, {Key: "busy_since", Value: mark}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(t.Context(), "e", 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("Load of a session marked erased: got %v, want ErrNotFound", err)
	}
	create(t, s, "e")
	appendOK(t, s, "e", 0, storetest.Custom(1, "new"))
	l, err := s.Acquire(t.Context(), "e", "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The erasure's removals arrive now, as the old Delete sends them.
	if _, err := events.DeleteMany(t.Context(), bson.D{{Key: "session", Value: "e"}, {Key: "$or", Value: mongodb.WrittenBefore(mark + 1)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sessions.DeleteOne(t.Context(), bson.D{{Key: "_id", Value: "e"}, {Key: "last_seq", Value: -2}, {Key: "busy_since", Value: mark}}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(tags(t, load(t, s, "e").Events)); got != "[new]" {
		t.Errorf("after the old erasure's removals: Load = %s, want [new]", got)
	}
	if err := s.AppendFenced(t.Context(), "e", l, 1, storetest.Custom(2, "new")); err != nil {
		t.Errorf("AppendFenced with the new session's lease after the old erasure's removals: %v", err)
	}
}

func TestStore_TwoClientsRace(t *testing.T) {
	ns := newNamespace()
	a := openStore(t, cairn.StoreOptions{Namespace: ns})
	b, err := mongodb.Open(t.Context(), serverURI(t), cairn.StoreOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	create(t, a, "race")
	const rounds = 20
	var winners []string
	stores := []*mongodb.Store{a, b}
	for round := range rounds {
		expect := int64(round)
		won, errs := storetest.Race(len(stores), cairn.ErrConflict, func(i int) (string, error) {
			tag := fmt.Sprintf("r%d-%c", round, 'a'+i)
			return tag, stores[i].Append(t.Context(), "race", expect, storetest.Custom(expect+1, tag))
		})
		if len(errs) > 0 {
			t.Fatalf("round %d: %v, want nil or ErrConflict", round, errs)
		}
		if len(won) != 1 {
			t.Fatalf("round %d: %v won, want exactly one store", round, won)
		}
		winners = append(winners, won[0])
	}
	for _, s := range stores {
		if got := tags(t, load(t, s, "race").Events); fmt.Sprint(got) != fmt.Sprint(winners) {
			t.Fatalf("history %v, want the winners %v", got, winners)
		}
	}
}

func TestStore_Sweep(t *testing.T) {
	clock := storetest.NewClock()
	s := openStore(t, cairn.StoreOptions{Namespace: newNamespace(), TTL: time.Hour, Now: clock.Now})
	sessions, events := collections(t, s)
	create(t, s, "old")
	appendOK(t, s, "old", 0, storetest.UserTurn(0, "r", "x")...)
	clock.Advance(30 * time.Minute)
	create(t, s, "young")
	insertStray(t, events, "orphan", 1, 2*mongodb.StaleAfter)
	insertStray(t, events, "orphan-recent", 1, 0)
	clock.Advance(45 * time.Minute)

	n, err := s.Sweep(t.Context())
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if n != 1 {
		t.Errorf("Sweep deleted %d sessions, want 1", n)
	}
	if got := count(t, sessions, bson.D{{Key: "_id", Value: "old"}}); got != 0 {
		t.Errorf("expired session document still there after Sweep")
	}
	if got := count(t, events, bson.D{{Key: "session", Value: "old"}}); got != 0 {
		t.Errorf("%d events of the expired session after Sweep, want 0", got)
	}
	if got := count(t, events, bson.D{{Key: "session", Value: "orphan"}}); got != 0 {
		t.Errorf("old orphan event documents survived Sweep")
	}
	if got := count(t, events, bson.D{{Key: "session", Value: "orphan-recent"}}); got != 1 {
		t.Errorf("Sweep removed a recent event document whose session may be being created")
	}
	load(t, s, "young")
}

func TestStore_LabelsWithAnyKey(t *testing.T) {
	s := openStore(t, cairn.StoreOptions{Namespace: newNamespace()})
	labels := map[string]string{"a.b": "1", "$x": "2", `q"uote`: "3", "": "empty"}
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "l", Labels: labels}); err != nil {
		t.Fatal(err)
	}
	create(t, s, "other")
	for k, v := range labels {
		page, err := s.List(t.Context(), cairn.ListOptions{Labels: map[string]string{k: v}})
		if err != nil {
			t.Fatalf("List label %q: %v", k, err)
		}
		if len(page.Sessions) != 1 || page.Sessions[0].ID != "l" {
			t.Errorf("List label %q=%q: got %d sessions, want only l", k, v, len(page.Sessions))
		}
	}
	if got := load(t, s, "l").Info.Labels; fmt.Sprint(got) != fmt.Sprint(labels) {
		t.Errorf("labels = %v, want %v", got, labels)
	}
}

func TestStore_ClosedNew(t *testing.T) {
	db := client(t)
	s, err := mongodb.New(t.Context(), db, cairn.StoreOptions{Namespace: newNamespace()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropCollections(t, s) })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Close of a store made by New leaves the caller's client connected.
	if err := db.Client().Ping(context.Background(), nil); err != nil {
		t.Errorf("the caller's client after Close: %v", err)
	}
	if _, err := s.List(t.Context(), cairn.ListOptions{}); !errors.Is(err, cairn.ErrClosed) {
		t.Errorf("List after Close: got %v, want ErrClosed", err)
	}
	if _, err := s.Sweep(t.Context()); !errors.Is(err, cairn.ErrClosed) {
		t.Errorf("Sweep after Close: got %v, want ErrClosed", err)
	}
}

// TestStore_LeaseKeepsCommits takes a session's lease over and over while
// another store appends to it, and checks that every append acknowledged
// is in the history. FerretDB writes an update as a whole document read
// before: a takeover's write of the session document that raced a commit
// undid the commit (an acknowledged append lost), until lease changes held
// the session's next position as appends do.
func TestStore_LeaseKeepsCommits(t *testing.T) {
	ns := newNamespace()
	a := openStore(t, cairn.StoreOptions{Namespace: ns})
	b, err := mongodb.Open(t.Context(), serverURI(t), cairn.StoreOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	create(t, a, "k")
	const rounds = 100
	done, stop := make(chan struct{}), make(chan struct{})
	var takeovers int
	var terr error
	go func() {
		defer close(done)
		for range rounds {
			select {
			case <-stop:
				return
			default:
			}
			if _, terr = b.Takeover(t.Context(), "k", "taker", time.Minute); terr != nil {
				return
			}
			takeovers++
		}
	}()
	defer func() {
		close(stop)
		<-done
		if terr != nil {
			t.Errorf("Takeover: %v", terr)
		}
	}()
	var acked []string
	for i := int64(0); ; i++ {
		select {
		case <-done:
			if got := tags(t, load(t, a, "k").Events); fmt.Sprint(got) != fmt.Sprint(acked) {
				t.Fatalf("after %d takeovers the history is %v, want the %d appends acknowledged: %v", takeovers, got, len(acked), acked)
			}
			return
		default:
		}
		last := int64(len(acked))
		tag := fmt.Sprintf("e%d", i)
		err := a.Append(t.Context(), "k", last, storetest.Custom(last+1, tag))
		switch {
		case err == nil:
			acked = append(acked, tag)
		case errors.Is(err, cairn.ErrConflict):
			t.Fatalf("append at seq %d, the last this writer saw: %v, and it is the only writer", last, err)
		case !cairn.IsUnavailable(err):
			t.Fatalf("append: %v", err)
		}
	}
}

// TestStore_SweepInBatches sweeps more expired sessions than one batch
// reads, among live ones, and counts them first.
func TestStore_SweepInBatches(t *testing.T) {
	clock := storetest.NewClock()
	s := openStore(t, cairn.StoreOptions{Namespace: newNamespace(), TTL: time.Hour, Now: clock.Now})
	const expired, live = 230, 20
	storetest.SweepMany(t, s, clock, expired, live)
	sessions, _ := collections(t, s)
	if got := count(t, sessions, bson.D{}); got != live {
		t.Errorf("%d session documents after Sweep, want %d", got, live)
	}
}

// TestStore_LoadAcrossRecreate: a Load reads the session document, then
// its events. When, between the two, the session is deleted and created
// again and an append of the new session has inserted its events but not
// committed them, the events at the old document's seqs are the new
// session's uncommitted ones: the Load must not return them as the old
// session's history (a history that never was).
func TestStore_LoadAcrossRecreate(t *testing.T) {
	ns := newNamespace()
	other := openStore(t, cairn.StoreOptions{Namespace: ns})
	_, events := collections(t, other)
	create(t, other, "a")
	appendOK(t, other, "a", 0, storetest.Custom(1, "old"))

	// The store under test, on a client whose monitor runs the delete,
	// the create and the new append's insert just before Load's read of
	// the events.
	var once sync.Once
	var between error
	var ran bool
	armed := make(chan struct{})
	mon := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if e.CommandName != "find" || e.Command.Lookup("find").StringValue() != events.Name() {
			return
		}
		select {
		case <-armed:
		default:
			return
		}
		once.Do(func() {
			ran = true
			if between = other.Delete(context.Background(), "a"); between != nil {
				return
			}
			if between = other.Create(context.Background(), cairn.SessionMeta{ID: "a"}); between != nil {
				return
			}
			_, between = events.InsertOne(context.Background(), bson.D{
				{Key: "session", Value: "a"},
				{Key: "seq", Value: int64(1)},
				{Key: "token", Value: "uncommitted-writer"},
				{Key: "written_at", Value: bson.NewDateTimeFromTime(time.Now())},
				{Key: "event", Value: envelope(t, storetest.Custom(1, "new-uncommitted"))},
			})
		})
	}}
	s := monitored(t, ns, mon)

	close(armed)
	rec, err := s.Load(t.Context(), "a", 0)
	if !ran {
		t.Fatal("Load never read the events: the test did not make the race")
	}
	if between != nil {
		t.Fatalf("between Load's reads: %v", between)
	}
	switch {
	case errors.Is(err, cairn.ErrNotFound):
		// The session was deleted while Load read it: its answer is the
		// one of the moment between the delete and the create.
	case err != nil:
		t.Fatalf("Load: %v", err)
	case len(rec.Events) != 0:
		t.Fatalf("Load = %v at last seq %d, a history the session never had: the new session has committed nothing",
			tags(t, rec.Events), rec.Info.LastSeq)
	}
}

// envelope returns the stored envelope of e, at its own seq.
func envelope(t *testing.T, e cairn.Event) []byte {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStore_StrayLeaseIsNoLease: an Acquire writes its lease document
// before it records its token in the session document, and one that then
// finds its session gone (deleted, and created again, while its request
// was on its way) records nothing and answers ErrNotFound; its document
// stays. The session created again must not be held by that holder: not
// for Acquire, CurrentLease or CurrentLeases, and a lease taken since is
// the one they all report.
func TestStore_StrayLeaseIsNoLease(t *testing.T) {
	s := openStore(t, cairn.StoreOptions{Namespace: newNamespace()})
	_, events := collections(t, s)
	create(t, s, "a")
	appendOK(t, s, "a", 0, storetest.Custom(1, "w1"))
	stray := func(gen int64) {
		t.Helper()
		_, err := events.InsertOne(t.Context(), bson.D{
			{Key: "session", Value: "a"}, {Key: "seq", Value: -gen}, {Key: "holder", Value: "told-not-found"},
			{Key: "lease_token", Value: time.Now().UnixNano()}, {Key: "expires_ns", Value: time.Now().Add(time.Hour).UnixNano()},
			{Key: "released", Value: false}, {Key: "written_at", Value: bson.NewDateTimeFromTime(time.Now())},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	free := func(when string) {
		t.Helper()
		if l, err := s.CurrentLease(t.Context(), "a"); err != nil || l.Holder != "" {
			t.Fatalf("%s: CurrentLease = %+v, %v; want none", when, l, err)
		}
		if ls, err := s.CurrentLeases(t.Context(), []string{"a"}); err != nil || len(ls) != 0 {
			t.Fatalf("%s: CurrentLeases = %+v, %v; want none", when, ls, err)
		}
	}
	stray(1)
	free("a lease document whose token no session records")

	l, err := s.Acquire(t.Context(), "a", "h2", time.Minute)
	if err != nil {
		t.Fatalf("Acquire over a lease document whose token no session records: %v", err)
	}
	stray(3) // another, above the lease (generation 3; the lease is generation 2)
	if cur, err := s.CurrentLease(t.Context(), "a"); err != nil || cur.Holder != "h2" || cur.Token != l.Token {
		t.Fatalf("CurrentLease = %+v, %v; want h2's (token %d)", cur, err, l.Token)
	}
	if ls, err := s.CurrentLeases(t.Context(), []string{"a"}); err != nil || ls["a"].Holder != "h2" {
		t.Fatalf("CurrentLeases = %+v, %v; want h2's", ls, err)
	}
	var held *cairn.LeaseHeldError
	if _, err := s.Acquire(t.Context(), "a", "h3", time.Minute); !errors.As(err, &held) || held.Holder != "h2" {
		t.Fatalf("Acquire of a session h2 holds: %v, want held by h2", err)
	}
	if l, err = s.Renew(t.Context(), l, time.Minute); err != nil {
		t.Fatalf("Renew of h2's lease under a stray above it: %v", err)
	}
	if err := s.AppendFenced(t.Context(), "a", l, 1, storetest.Custom(2, "h2")); err != nil {
		t.Fatalf("AppendFenced with h2's lease: %v", err)
	}
	if err := s.Release(t.Context(), l); err != nil {
		t.Fatalf("Release: %v", err)
	}
	free("after h2's release")
	l4, err := s.Acquire(t.Context(), "a", "h4", time.Minute)
	if err != nil {
		t.Fatalf("Acquire after the release: %v", err)
	}
	if l4.Token <= l.Token {
		t.Errorf("the next lease's token %d is not above the last one's %d", l4.Token, l.Token)
	}
}

// monitored opens a store of namespace ns on a client of its own whose
// commands mon sees before they are sent.
func monitored(t *testing.T, ns string, mon *event.CommandMonitor) *mongodb.Store {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(serverURI(t)).SetMonitor(mon))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	s, err := mongodb.New(t.Context(), c.Database(client(t).Name()), cairn.StoreOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestStore_RetryAcrossRecreate: an append sent again after its reply was
// lost meets its own events at the insert, and reads them back to tell a
// retry from a conflict. When the session is deleted and created again
// between its read of the session document and its read of the events, the
// events are gone: a conflict would be no state the session was in (at seq
// 0 for an append at seq 0). The answer is the session's absence between
// the delete and the create.
func TestStore_RetryAcrossRecreate(t *testing.T) {
	ns := newNamespace()
	other := openStore(t, cairn.StoreOptions{Namespace: ns})
	_, events := collections(t, other)
	var armed atomic.Bool
	var between error
	mon := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if e.CommandName != "find" || e.Command.Lookup("find").StringValue() != events.Name() || !armed.CompareAndSwap(true, false) {
			return
		}
		if between = other.Delete(context.Background(), "a"); between == nil {
			between = other.Create(context.Background(), cairn.SessionMeta{ID: "a"})
		}
	}}
	s := monitored(t, ns, mon)
	create(t, s, "a")
	appendOK(t, s, "a", 0, storetest.Custom(1, "retried"))
	armed.Store(true)
	err := s.Append(t.Context(), "a", 0, storetest.Custom(1, "retried"))
	if between != nil {
		t.Fatalf("between the retry's reads: %v", between)
	}
	if armed.Load() {
		t.Fatal("the retry never read the events: the test did not make the race")
	}
	if !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("the retry, with the session deleted and created between its reads: %v; want ErrNotFound", err)
	}
	if got := load(t, s, "a"); len(got.Events) != 0 {
		t.Fatalf("the session created again holds %d events, want none", len(got.Events))
	}
}
