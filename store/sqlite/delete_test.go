package sqlite_test

import (
	"bytes"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/store/storetest"
)

func openStore(t testing.TB, path string, opts cairn.StoreOptions) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path, sqlite.Options{StoreOptions: opts})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// rawDB opens the file with the bare driver, as an inspector would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// rows counts a session's rows in each table.
func rows(t *testing.T, db *sql.DB, ns, id string) (sessions, events int) {
	t.Helper()
	if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM sessions WHERE namespace = ? AND id = ?`, ns, id).Scan(&sessions); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM events WHERE namespace = ? AND session_id = ?`, ns, id).Scan(&events); err != nil {
		t.Fatal(err)
	}
	return sessions, events
}

func checkpoint(t *testing.T, db *sql.DB) {
	t.Helper()
	var busy, logged, moved int
	if err := db.QueryRowContext(t.Context(), `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &moved); err != nil {
		t.Fatal(err)
	}
	if busy != 0 {
		t.Fatalf("wal_checkpoint(TRUNCATE) was blocked (busy %d, %d frames, %d moved)", busy, logged, moved)
	}
}

func fileHas(t *testing.T, path string, marker []byte) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(b, marker)
}

// TestStore_DeleteLeavesNothing deletes a session and finds no row of it in
// either table, and, after a checkpoint, none of its bytes in the file.
func TestStore_DeleteLeavesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cairn.db")
	s := openStore(t, path, cairn.StoreOptions{})
	const marker = "do-not-keep-7f3a9c"
	for _, id := range []string{"gone", "kept"} {
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append(t.Context(), "gone", 0, storetest.Conversation(0, "r1", marker)...); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(t.Context(), "kept", 0, storetest.UserTurn(0, "r1", "keep me")...); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	checkpoint(t, db)
	if !fileHas(t, path, []byte(marker)) {
		t.Fatal("the marker is not in the database file before the delete; the test cannot see an erasure")
	}
	if n, m := rows(t, db, cairn.DefaultNamespace, "gone"); n != 1 || m != 16 {
		t.Fatalf("before Delete: %d session rows and %d event rows, want 1 and 16", n, m)
	}

	if err := s.Delete(t.Context(), "gone"); err != nil {
		t.Fatal(err)
	}
	if n, m := rows(t, db, cairn.DefaultNamespace, "gone"); n != 0 || m != 0 {
		t.Errorf("after Delete: %d session rows and %d event rows left, want none", n, m)
	}
	if n, m := rows(t, db, cairn.DefaultNamespace, "kept"); n != 1 || m != 4 {
		t.Errorf("the other session has %d session rows and %d event rows, want 1 and 4", n, m)
	}
	checkpoint(t, db)
	if fileHas(t, path, []byte(marker)) {
		t.Error("after Delete and a checkpoint the database file still holds the deleted session's text")
	}
}

// TestStore_SweepLeavesNothing sweeps expired sessions and finds no row of
// them, while the live one stays.
func TestStore_SweepLeavesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cairn.db")
	clock := storetest.NewClock()
	s := openStore(t, path, cairn.StoreOptions{TTL: time.Hour, Now: clock.Now})
	for _, id := range []string{"old1", "old2"} {
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(t.Context(), id, 0, storetest.UserTurn(0, "r", "x")...); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(30 * time.Minute)
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "young"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(31 * time.Minute)
	n, err := s.Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("Sweep deleted %d sessions, want 2", n)
	}
	db := rawDB(t, path)
	for _, id := range []string{"old1", "old2"} {
		if a, b := rows(t, db, cairn.DefaultNamespace, id); a != 0 || b != 0 {
			t.Errorf("after Sweep %s has %d session rows and %d event rows, want none", id, a, b)
		}
	}
	if _, err := s.Load(t.Context(), "young", 0); err != nil {
		t.Errorf("Load of the live session after Sweep: %v", err)
	}
	if n, err := s.Sweep(t.Context()); err != nil || n != 0 {
		t.Errorf("second Sweep = %d, %v; want 0, nil", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sweep(t.Context()); !errors.Is(err, cairn.ErrClosed) {
		t.Errorf("Sweep after Close: got %v, want ErrClosed", err)
	}
	if _, err := s.List(t.Context(), cairn.ListOptions{}); !errors.Is(err, cairn.ErrClosed) {
		t.Errorf("List after Close: got %v, want ErrClosed", err)
	}
	if err := s.Delete(t.Context(), "young"); !errors.Is(err, cairn.ErrClosed) {
		t.Errorf("Delete after Close: got %v, want ErrClosed", err)
	}
}
