package cairngenkit_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	cairngenkit "github.com/cairnhq/cairn/contrib/genkit"
	"github.com/firebase/genkit/go/core/x/session"
)

type chat struct {
	Turns    int      `json:"turns"`
	Messages []string `json:"messages"`
}

func TestStore(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, b) })
		t.Run("Restart", func(t *testing.T) { testRestart(t, b) })
		t.Run("Conflict", func(t *testing.T) { testConflict(t, b) })
		t.Run("NewOverExisting", func(t *testing.T) { testNewOverExisting(t, b) })
		t.Run("Views", func(t *testing.T) { testViews(t, b) })
		t.Run("Race", func(t *testing.T) { testRace(t, b) })
		t.Run("Snapshot", func(t *testing.T) { testSnapshot(t, b) })
		t.Run("BadInput", func(t *testing.T) { testBadInput(t, b) })
	})
}

// testRoundTrip: a Genkit session made and updated through the store reads
// back, and every save is one state.set event of the session.
func testRoundTrip(t *testing.T, b backend) {
	ctx := t.Context()
	cs := b.open(t)
	st := cairngenkit.NewStore[chat](cs, cairngenkit.StoreOptions{Labels: map[string]string{"app": "test"}})
	if d, err := st.Get(ctx, "absent"); d != nil || err != nil {
		t.Fatalf("Get of an absent session = %v, %v; want nil, nil", d, err)
	}
	sess, err := session.New(ctx, session.WithID[chat]("s1"), session.WithStore[chat](st), session.WithInitialState(chat{Turns: 0}))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		s := sess.State()
		s.Turns++
		s.Messages = append(s.Messages, "m"+string(rune('0'+i)))
		if err := sess.UpdateState(ctx, s); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
	got, err := session.Load(ctx, cairngenkit.NewStore[chat](cs, cairngenkit.StoreOptions{}), "s1")
	if err != nil {
		t.Fatal(err)
	}
	if s := got.State(); s.Turns != 3 || len(s.Messages) != 3 || s.Messages[2] != "m3" {
		t.Errorf("loaded state = %+v; want 3 turns, messages m1..m3", s)
	}
	rec, err := cs.Load(ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Events) != 4 {
		t.Errorf("the session holds %d events; want 4 (one per save)", len(rec.Events))
	}
	for _, e := range rec.Events {
		if e.Kind != cairn.KindStateSet {
			t.Errorf("event %d is %s; want state.set", e.Seq, e.Kind)
		}
	}
	if rec.Info.Labels["app"] != "test" {
		t.Errorf("labels = %v; want app=test", rec.Info.Labels)
	}
	var s chat
	if ok, err := (mustFold(t, rec.Events)).Var(cairngenkit.DefaultKey, &s); !ok || err != nil || s.Turns != 3 {
		t.Errorf("variable %s = %+v (set %v, %v); want 3 turns", cairngenkit.DefaultKey, s, ok, err)
	}
}

func mustFold(t *testing.T, events []cairn.Event) *cairn.State {
	t.Helper()
	st, err := cairn.Fold(events)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// testRestart: a store opened anew (a restarted process) reads the state,
// and updates it.
func testRestart(t *testing.T, b backend) {
	ctx := t.Context()
	cs1 := b.open(t)
	sess, err := session.New(ctx, session.WithID[chat]("r1"), session.WithStore[chat](cairngenkit.NewStore[chat](cs1, cairngenkit.StoreOptions{})), session.WithInitialState(chat{Turns: 1}))
	if err != nil {
		t.Fatal(err)
	}
	_ = sess
	cs1.Close()

	cs2 := b.open(t)
	st2 := cairngenkit.NewStore[chat](cs2, cairngenkit.StoreOptions{})
	got, err := session.Load(ctx, st2, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if got.State().Turns != 1 {
		t.Fatalf("after a restart, turns = %d; want 1", got.State().Turns)
	}
	if err := got.UpdateState(ctx, chat{Turns: 2}); err != nil {
		t.Fatalf("update after a restart: %v", err)
	}
}

// testConflict: two writers load the same state; the second to save is
// refused with a ConflictError and writes nothing, until it loads again.
func testConflict(t *testing.T, b backend) {
	ctx := t.Context()
	base := cairngenkit.NewStore[chat](b.open(t), cairngenkit.StoreOptions{})
	if _, err := session.New(ctx, session.WithID[chat]("c1"), session.WithStore[chat](base), session.WithInitialState(chat{Turns: 1})); err != nil {
		t.Fatal(err)
	}
	// Two processes: two cairn stores of their own.
	a := cairngenkit.NewStore[chat](b.open(t), cairngenkit.StoreOptions{})
	bb := cairngenkit.NewStore[chat](b.open(t), cairngenkit.StoreOptions{})
	sa, err := session.Load(ctx, a, "c1")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := session.Load(ctx, bb, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if err := sa.UpdateState(ctx, chat{Turns: 2, Messages: []string{"from a"}}); err != nil {
		t.Fatalf("first writer: %v", err)
	}
	err = sb.UpdateState(ctx, chat{Turns: 2, Messages: []string{"from b"}})
	var ce *cairngenkit.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, cairn.ErrConflict) {
		t.Fatalf("stale writer's save: %v; want a *ConflictError wrapping cairn.ErrConflict", err)
	}
	if ce.Session != "c1" || ce.Read != 1 || ce.Last != 2 {
		t.Errorf("conflict = %+v; want session c1, read 1, last 2", ce)
	}
	t.Logf("stale save: %v", err)
	// Still refused: the stale writer has not read the session again.
	if err := sb.UpdateState(ctx, chat{Turns: 9}); !errors.Is(err, cairn.ErrConflict) {
		t.Fatalf("second stale save: %v; want a conflict", err)
	}
	got, err := session.Load(ctx, base.View(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if s := got.State(); s.Turns != 2 || len(s.Messages) != 1 || s.Messages[0] != "from a" {
		t.Fatalf("state = %+v; want the first writer's", s)
	}
	// Loaded again, the second writer saves.
	sb, err = session.Load(ctx, bb, "c1")
	if err != nil {
		t.Fatal(err)
	}
	s := sb.State()
	s.Turns++
	s.Messages = append(s.Messages, "from b")
	if err := sb.UpdateState(ctx, s); err != nil {
		t.Fatalf("save after loading again: %v", err)
	}
}

// testNewOverExisting: session.New with the ID of a session another
// process saved is refused rather than resetting its state.
func testNewOverExisting(t *testing.T, b backend) {
	ctx := t.Context()
	st := cairngenkit.NewStore[chat](b.open(t), cairngenkit.StoreOptions{})
	if _, err := session.New(ctx, session.WithID[chat]("n1"), session.WithStore[chat](st), session.WithInitialState(chat{Turns: 5})); err != nil {
		t.Fatal(err)
	}
	other := cairngenkit.NewStore[chat](b.open(t), cairngenkit.StoreOptions{})
	_, err := session.New(ctx, session.WithID[chat]("n1"), session.WithStore[chat](other))
	var ce *cairngenkit.ConflictError
	if !errors.As(err, &ce) || ce.Read != 0 {
		t.Fatalf("New over a saved session: %v; want a *ConflictError with Read 0", err)
	}
	d, err := other.Get(ctx, "n1")
	if err != nil || d == nil || d.State.Turns != 5 {
		t.Fatalf("Get = %+v, %v; want the first state (5 turns)", d, err)
	}
}

// testViews: two flow runs of one process, each with its own view, load
// the same state; the second to save is refused.
func testViews(t *testing.T, b backend) {
	ctx := t.Context()
	st := cairngenkit.NewStore[chat](b.open(t), cairngenkit.StoreOptions{})
	if _, err := session.New(ctx, session.WithID[chat]("v1"), session.WithStore[chat](st)); err != nil {
		t.Fatal(err)
	}
	r1, err := session.Load(ctx, st.View(), "v1")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := session.Load(ctx, st.View(), "v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := r1.UpdateState(ctx, chat{Turns: 1}); err != nil {
		t.Fatal(err)
	}
	if err := r2.UpdateState(ctx, chat{Turns: 1}); !errors.Is(err, cairn.ErrConflict) {
		t.Fatalf("second run's save: %v; want a conflict", err)
	}
}

// testSnapshot: a session saved many times is read back the same from the
// snapshot Get leaves, and a second Get folds only the events after it.
func testSnapshot(t *testing.T, b backend) {
	ctx := t.Context()
	cs := b.open(t)
	st := cairngenkit.NewStore[chat](cs, cairngenkit.StoreOptions{})
	sess, err := session.New(ctx, session.WithID[chat]("snap1"), session.WithStore[chat](st))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 70; i++ {
		if err := sess.UpdateState(ctx, chat{Turns: i}); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		d, err := st.Get(ctx, "snap1")
		if err != nil || d == nil || d.State.Turns != 70 {
			t.Fatalf("Get = %+v, %v; want 70 turns", d, err)
		}
	}
	sn, ok := cs.(cairn.Snapshotter)
	if !ok {
		return
	}
	snap, err := sn.LoadSnapshot(ctx, "snap1")
	if err != nil || snap == nil || snap.Seq != 71 {
		t.Fatalf("snapshot = %+v, %v; want one at seq 71", snap, err)
	}
	r, err := cairn.Restore(ctx, cs, "snap1")
	if err != nil || r.Base != 71 {
		t.Fatalf("restore: base %v, %v; want 71", r, err)
	}
}

func testBadInput(t *testing.T, b backend) {
	ctx := t.Context()
	st := cairngenkit.NewStore[chat](b.open(t), cairngenkit.StoreOptions{})
	if _, err := st.Get(ctx, "a/b"); !errors.Is(err, cairn.ErrInvalidID) {
		t.Errorf("Get a/b: %v; want ErrInvalidID", err)
	}
	if err := st.Save(ctx, "a b", &session.Data[chat]{}); !errors.Is(err, cairn.ErrInvalidID) {
		t.Errorf("Save 'a b': %v; want ErrInvalidID", err)
	}
	if err := st.Save(ctx, "x1", nil); err == nil {
		t.Error("Save of nil data: no error")
	}
	if err := st.Save(ctx, "x1", &session.Data[chat]{ID: "x2"}); err == nil {
		t.Error("Save of another session's data: no error")
	}
	// A state that is not of the store's type is refused with the key named.
	raw := cairngenkit.NewStore[string](b.open(t), cairngenkit.StoreOptions{})
	if err := raw.Save(ctx, "x3", &session.Data[string]{State: "text"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, "x3"); err == nil {
		t.Error("Get of a state that does not decode: no error")
	} else {
		t.Logf("bad state: %v", err)
	}
}

// testRace: writers in goroutines, each with a view that loaded the same
// state, save at once: exactly one save gets in, the others are refused.
func testRace(t *testing.T, b backend) {
	ctx := t.Context()
	st := cairngenkit.NewStore[chat](b.open(t), cairngenkit.StoreOptions{})
	if _, err := session.New(ctx, session.WithID[chat]("race1"), session.WithStore[chat](st)); err != nil {
		t.Fatal(err)
	}
	const n = 8
	sessions := make([]*session.Session[chat], n)
	for i := range sessions {
		cs := b.open(t) // a process of its own
		s, err := session.Load(ctx, cairngenkit.NewStore[chat](cs, cairngenkit.StoreOptions{}), "race1")
		if err != nil {
			t.Fatal(err)
		}
		sessions[i] = s
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, s := range sessions {
		wg.Go(func() { errs[i] = s.UpdateState(ctx, chat{Turns: i + 1}) })
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Errorf("writers %d and %d both saved", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, cairn.ErrConflict):
			t.Errorf("writer %d: %v; want a conflict", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no writer saved")
	}
	d, err := st.View().Get(ctx, "race1")
	if err != nil || d == nil || d.State.Turns != won+1 {
		t.Errorf("state = %+v, %v; want the winner's (%d turns)", d, err, won+1)
	}
}
