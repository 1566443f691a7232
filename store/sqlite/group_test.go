package sqlite_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/storetest"
)

// Both tests append 25 events to each of 6 sessions from their own
// goroutines, so that the appends share commits, while bad appends run
// beside them.
const groupSessions, groupAppends = 6, 25

// appendBeside creates the sessions s0…s5, appends groupAppends events to
// each from a goroutine of its own, and runs bad groupAppends times beside
// each of them; it reports every error of the good appends and every one
// that bad returns.
func appendBeside(t *testing.T, s cairn.Store, bad func(id string) error) {
	t.Helper()
	ctx := t.Context()
	for i := range groupSessions {
		if err := s.Create(ctx, cairn.SessionMeta{ID: fmt.Sprint("s", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, groupSessions*groupAppends*3)
	for i := range groupSessions {
		id := fmt.Sprint("s", i)
		wg.Go(func() {
			for seq := int64(1); seq <= groupAppends; seq++ {
				if err := s.Append(ctx, id, seq-1, storetest.Custom(seq, id)); err != nil {
					errs <- fmt.Errorf("append %s seq %d: %w", id, seq, err)
				}
			}
		})
		wg.Go(func() {
			for range groupAppends {
				if err := bad(id); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range groupSessions {
		id := fmt.Sprint("s", i)
		rec, err := s.Load(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(rec.Events); got != groupAppends || rec.Info.LastSeq != groupAppends {
			t.Fatalf("%s: %d events, last seq %d; want %d", id, got, rec.Info.LastSeq, groupAppends)
		}
		for j, e := range rec.Events {
			if want := storetest.Custom(int64(j+1), id); string(e.Data) != string(want.Data) {
				t.Errorf("%s seq %d: data %s, want %s", id, e.Seq, e.Data, want.Data)
			}
		}
	}
}

// TestStore_GroupCommit runs failing appends (conflicts, a missing
// session) among appends that share commits: every good append must be
// stored and every bad one refused with its own error.
func TestStore_GroupCommit(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "cairn.db"), cairn.StoreOptions{})
	appendBeside(t, s, func(id string) error {
		if err := s.Append(t.Context(), id, 1000, storetest.Custom(1001, "stale")); !errors.Is(err, cairn.ErrConflict) {
			return fmt.Errorf("stale append to %s: got %v, want ErrConflict", id, err)
		}
		if err := s.Append(t.Context(), "missing", 0, storetest.Custom(1, "missing")); !errors.Is(err, cairn.ErrNotFound) {
			return fmt.Errorf("append to a missing session: got %v, want ErrNotFound", err)
		}
		return nil
	})
}

// TestStore_GroupCommitWriteFailure plants an event row where the next
// append of one session will write, so that its INSERT fails after its
// checks passed: the appends of other sessions that share its commit must
// still be stored, and the failing one must leave its session as it was.
func TestStore_GroupCommitWriteFailure(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "cairn.db")
	s := openStore(t, path, cairn.StoreOptions{})
	if err := s.Create(ctx, cairn.SessionMeta{ID: "bad"}); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	if _, err := db.ExecContext(ctx, `INSERT INTO events (namespace, session_id, seq, envelope) VALUES (?, 'bad', 1, '{}')`,
		cairn.DefaultNamespace); err != nil {
		t.Fatal(err)
	}
	appendBeside(t, s, func(string) error {
		if err := s.Append(ctx, "bad", 0, storetest.Custom(1, "bad")); err == nil {
			return errors.New("an append onto a planted row succeeded")
		}
		return nil
	})
	rec, err := s.Load(ctx, "bad", 0)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Info.LastSeq != 0 || len(rec.Events) != 0 {
		t.Errorf("bad: last seq %d, %d events; want 0 and 0", rec.Info.LastSeq, len(rec.Events))
	}
}
