package sqlite_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestStore_EventRowDeleted deletes or changes event rows of session "hit"
// from outside the store, as the sqlite3 shell would, while no store is
// open and while one is. Before, a store that had not loaded the session
// listed it with the status its row held (completed) until something
// loaded it, and appended to it at its last seq, past the gap. Now the change marks the session's row
// (migration 0006): List, in a store that never read the session, shows
// it damaged under every filter, and Load, Append and Check refuse it,
// naming the seq; the other session goes on; Delete removes it, and a
// session created again under its ID is sound.
func TestStore_EventRowDeleted(t *testing.T) {
	for name, c := range map[string]struct {
		sql  string
		want string
	}{
		"a row in the middle": {`DELETE FROM events WHERE session_id = 'hit' AND seq = 5`, "seq 5 was deleted"},
		"the last row":        {`DELETE FROM events WHERE session_id = 'hit' AND seq = 17`, "seq 17 was deleted"},
		"every row":           {`DELETE FROM events WHERE session_id = 'hit'`, "was deleted"},
		"a row changed": {`UPDATE events SET envelope = replace(envelope, 'payload of hit', 'payload of him')
			WHERE session_id = 'hit' AND seq = 17`, "seq 17 was changed"},
	} {
		for _, open := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "/no store open", true: "/a store open"}[open], func(t *testing.T) {
				path, _ := damagedFile(t)
				var s cairn.Store
				if open {
					s = openStore(t, path, cairn.StoreOptions{})
					assertListed(t, s, nil, map[string]cairn.Status{"hit": cairn.StatusCompleted, "kept": cairn.StatusCompleted})
				}
				if _, err := rawDB(t, path).ExecContext(t.Context(), c.sql); err != nil {
					t.Fatal(err)
				}
				// Append first, in a store that has read nothing of hit:
				// refused, at the last seq too, where it would write
				// over the gap.
				fresh := openStore(t, path, cairn.StoreOptions{})
				for _, expect := range []int64{17, 16} {
					if err := fresh.Append(t.Context(), "hit", expect, storetest.Custom(expect+1, "x")); !errors.Is(err, cairn.ErrDamaged) {
						t.Errorf("Append(hit) at seq %d, first = %v, want ErrDamaged", expect, err)
					}
				}
				if !open {
					s = openStore(t, path, cairn.StoreOptions{})
				}
				// List, in a store that has not read hit's events.
				assertListed(t, s, nil, map[string]cairn.Status{"hit": cairn.StatusDamaged, "kept": cairn.StatusCompleted})
				assertListed(t, s, []cairn.Status{cairn.StatusCompleted}, map[string]cairn.Status{"kept": cairn.StatusCompleted})
				assertListed(t, s, []cairn.Status{cairn.StatusDamaged}, map[string]cairn.Status{"hit": cairn.StatusDamaged})
				assertListed(t, s, []cairn.Status{cairn.StatusDamaged, cairn.StatusCompleted},
					map[string]cairn.Status{"hit": cairn.StatusDamaged, "kept": cairn.StatusCompleted})

				_, err := s.Load(t.Context(), "hit", 0)
				if d, ok := errors.AsType[*driver.DamagedError](err); !ok || d.Session != "hit" || !strings.Contains(err.Error(), c.want) {
					t.Errorf("Load(hit) = %v, want a *driver.DamagedError for hit saying %q", err, c.want)
				}
				for _, expect := range []int64{16, 17} {
					if err := s.Append(t.Context(), "hit", expect, storetest.Custom(expect+1, "x")); !errors.Is(err, cairn.ErrDamaged) {
						t.Errorf("Append(hit) at seq %d = %v, want ErrDamaged", expect, err)
					}
				}
				if err := s.Append(t.Context(), "kept", 17, storetest.Custom(18, "x")); err != nil {
					t.Errorf("Append(kept): %v", err)
				}
				// Another store finds it with Check alone.
				rep := check(t, openStore(t, path, cairn.StoreOptions{}))
				if d := rep.Damaged(); rep.Sessions != 2 || len(d) != 1 || d[0].Session != "hit" || !strings.Contains(d[0].Msg, c.want) {
					t.Errorf("Check = %+v, want 2 sessions and hit damaged, saying %q", rep, c.want)
				}

				if err := s.Delete(t.Context(), "hit"); err != nil {
					t.Fatalf("Delete(hit): %v", err)
				}
				if err := s.Create(t.Context(), cairn.SessionMeta{ID: "hit"}); err != nil {
					t.Fatal(err)
				}
				if err := s.Append(t.Context(), "hit", 0, storetest.Conversation(0, "r2", "again")...); err != nil {
					t.Fatalf("Append to hit created again: %v", err)
				}
				assertListed(t, s, nil, map[string]cairn.Status{"hit": cairn.StatusCompleted, "kept": cairn.StatusCompleted})
			})
		}
	}
}

// BenchmarkDelete deletes a session of 2,000 events of about 1 KB, and
// Sweep 64 expired sessions of 16 events: the erasures that delete event
// rows, each of which the trigger of migration 0006 follows with a lookup
// of the session's row (gone by then). Only the deletion is timed.
func BenchmarkDelete(b *testing.B) {
	b.Run("session=2000", func(b *testing.B) {
		s := openStore(b, filepath.Join(b.TempDir(), "cairn.db"), cairn.StoreOptions{})
		var spent time.Duration
		for i := 0; b.Loop(); i++ {
			id := fmt.Sprintf("s%d", i)
			if err := s.Create(b.Context(), cairn.SessionMeta{ID: id}); err != nil {
				b.Fatal(err)
			}
			storetest.Prefill(b, s, id, 2000)
			t0 := time.Now()
			if err := s.Delete(b.Context(), id); err != nil {
				b.Fatal(err)
			}
			spent += time.Since(t0)
		}
		b.ReportMetric(float64(spent.Microseconds())/float64(b.N), "delete-µs")
	})
	b.Run("sweep=64", func(b *testing.B) {
		clock := storetest.NewClock()
		s := openStore(b, filepath.Join(b.TempDir(), "cairn.db"), cairn.StoreOptions{TTL: time.Hour, Now: clock.Now})
		var spent time.Duration
		for i := 0; b.Loop(); i++ {
			for j := range sqlite.SweepBatch {
				id := fmt.Sprintf("s%d-%d", i, j)
				if err := s.Create(b.Context(), cairn.SessionMeta{ID: id}); err != nil {
					b.Fatal(err)
				}
				if err := s.Append(b.Context(), id, 0, storetest.Conversation(0, "r", "x")...); err != nil {
					b.Fatal(err)
				}
			}
			clock.Advance(2 * time.Hour)
			t0 := time.Now()
			if n, err := s.Sweep(b.Context()); err != nil || n != sqlite.SweepBatch {
				b.Fatalf("Sweep = %d, %v", n, err)
			}
			spent += time.Since(t0)
		}
		b.ReportMetric(float64(spent.Microseconds())/float64(b.N), "sweep-µs")
	})
}
