package sqlite_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestStore_GroupCommit runs appends from many goroutines at once, so that
// they share commits, with failing appends (conflicts, a missing session)
// among them: every good append must be stored and every bad one refused
// with its own error.
func TestStore_GroupCommit(t *testing.T) {
	ctx := t.Context()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "cairn.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const sessions, appends = 6, 25
	for i := range sessions {
		if err := s.Create(ctx, cairn.SessionMeta{ID: fmt.Sprint("s", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, sessions*appends*3)
	for i := range sessions {
		id := fmt.Sprint("s", i)
		wg.Go(func() {
			for seq := int64(1); seq <= appends; seq++ {
				if err := s.Append(ctx, id, seq-1, storetest.Custom(seq, id)); err != nil {
					errs <- fmt.Errorf("append %s seq %d: %w", id, seq, err)
				}
			}
		})
		wg.Go(func() {
			for range appends {
				if err := s.Append(ctx, id, 1000, storetest.Custom(1001, "stale")); !errors.Is(err, cairn.ErrConflict) {
					errs <- fmt.Errorf("stale append to %s: got %v, want ErrConflict", id, err)
				}
				if err := s.Append(ctx, "missing", 0, storetest.Custom(1, "missing")); !errors.Is(err, cairn.ErrNotFound) {
					errs <- fmt.Errorf("append to a missing session: got %v, want ErrNotFound", err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range sessions {
		id := fmt.Sprint("s", i)
		rec, err := s.Load(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(rec.Events); got != appends || rec.Info.LastSeq != appends {
			t.Fatalf("%s: %d events, last seq %d; want %d", id, got, rec.Info.LastSeq, appends)
		}
		for j, e := range rec.Events {
			if want := storetest.Custom(int64(j+1), id); string(e.Data) != string(want.Data) {
				t.Errorf("%s seq %d: data %s, want %s", id, e.Seq, e.Data, want.Data)
			}
		}
	}
}

// TestStore_GroupCommitWriteFailure plants an event row where the next
// append of one session will write, so that its INSERT fails after its
// checks passed: the appends of other sessions that share its commit must
// still be stored, and the failing one must leave its session as it was.
func TestStore_GroupCommitWriteFailure(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "cairn.db")
	s := openStore(t, path, cairn.StoreOptions{})
	const sessions, appends = 6, 25
	for i := range sessions {
		if err := s.Create(ctx, cairn.SessionMeta{ID: fmt.Sprint("s", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Create(ctx, cairn.SessionMeta{ID: "bad"}); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	if _, err := db.ExecContext(ctx, `INSERT INTO events (namespace, session_id, seq, envelope) VALUES (?, 'bad', 1, '{}')`,
		cairn.DefaultNamespace); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, sessions*appends*2)
	for i := range sessions {
		id := fmt.Sprint("s", i)
		wg.Go(func() {
			for seq := int64(1); seq <= appends; seq++ {
				if err := s.Append(ctx, id, seq-1, storetest.Custom(seq, id)); err != nil {
					errs <- fmt.Errorf("append %s seq %d: %w", id, seq, err)
				}
			}
		})
		wg.Go(func() {
			for range appends {
				if err := s.Append(ctx, "bad", 0, storetest.Custom(1, "bad")); err == nil {
					errs <- errors.New("an append onto a planted row succeeded")
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range sessions {
		id := fmt.Sprint("s", i)
		rec, err := s.Load(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(rec.Events); got != appends || rec.Info.LastSeq != appends {
			t.Errorf("%s: %d events, last seq %d; want %d", id, got, rec.Info.LastSeq, appends)
		}
	}
	rec, err := s.Load(ctx, "bad", 0)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Info.LastSeq != 0 || len(rec.Events) != 0 {
		t.Errorf("bad: last seq %d, %d events; want 0 and 0", rec.Info.LastSeq, len(rec.Events))
	}
}
