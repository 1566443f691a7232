package sqlite

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestStore_ErrorKinds: a lock held past the busy timeout is an outage
// (cairn.IsUnavailable), a full database is not, and each error names
// SQLite's code.
func TestStore_ErrorKinds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.db")
	s := openTest(t, path, Options{})
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "e"}); err != nil {
		t.Fatal(err)
	}

	t.Run("busy", func(t *testing.T) {
		// Another store holds the write lock; this one waits 50 ms.
		other := openTest(t, path, Options{})
		tx, err := other.w.BeginTx(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(t.Context(), `UPDATE sessions SET steps = steps WHERE id = 'e'`); err != nil {
			t.Fatal(err)
		}
		if _, err := s.w.ExecContext(t.Context(), "PRAGMA busy_timeout = 50"); err != nil {
			t.Fatal(err)
		}
		defer s.w.ExecContext(t.Context(), "PRAGMA busy_timeout = 10000")
		err = s.Append(t.Context(), "e", 0, storetest.Custom(1, "x"))
		if !cairn.IsUnavailable(err) || !strings.Contains(err.Error(), "SQLITE_BUSY") {
			t.Errorf("Append while another store holds the lock: got %v, want an outage naming SQLITE_BUSY", err)
		}
	})

	t.Run("full", func(t *testing.T) {
		var pages int
		if err := s.w.QueryRowContext(t.Context(), "PRAGMA page_count").Scan(&pages); err != nil {
			t.Fatal(err)
		}
		if _, err := s.w.ExecContext(t.Context(), fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
			t.Fatal(err)
		}
		err := s.Append(t.Context(), "e", 0, storetest.Padded(1, 64<<10))
		if err == nil || cairn.IsUnavailable(err) || errors.Is(err, cairn.ErrDamaged) || !strings.Contains(err.Error(), "SQLITE_FULL") {
			t.Errorf("Append to a full database: got %v, want an error naming SQLITE_FULL, neither an outage nor damage", err)
		}
	})
}
