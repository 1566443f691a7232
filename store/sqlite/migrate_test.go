package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
)

type applied struct {
	version int
	at      int64
}

func appliedMigrations(t *testing.T, db *sql.DB) []applied {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `SELECT version, applied_at FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []applied
	for rows.Next() {
		var a applied
		if err := rows.Scan(&a.version, &a.at); err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMigrations_Embedded(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].File != "0001_init.sql" {
		t.Fatalf("embedded migrations = %v, want 0001_init.sql first", ms)
	}
	if got := SchemaVersion(); got != len(ms) {
		t.Errorf("SchemaVersion() = %d, want %d", got, len(ms))
	}
}

func TestMigrate_RecordedOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	s := openTest(t, path, Options{})
	first := appliedMigrations(t, s.w)
	if len(first) != SchemaVersion() {
		t.Fatalf("schema_migrations has %d rows, want %d", len(first), SchemaVersion())
	}
	for i, a := range first {
		if a.version != i+1 || a.at == 0 {
			t.Errorf("row %d = {version %d applied_at %d}, want version %d and a time", i, a.version, a.at, i+1)
		}
	}
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "kept"}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	for range 2 {
		s = openTest(t, path, Options{})
		again := appliedMigrations(t, s.w)
		if len(again) != len(first) {
			t.Fatalf("after reopen schema_migrations has %d rows, want %d", len(again), len(first))
		}
		for i := range first {
			if again[i] != first[i] {
				t.Errorf("after reopen row %d = %+v, want %+v (a migration ran again)", i, again[i], first[i])
			}
		}
		if _, err := s.Load(t.Context(), "kept", 0); err != nil {
			t.Errorf("session created before the reopen: %v", err)
		}
		s.Close()
	}
}

func TestMigrate_NewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	s := openTest(t, path, Options{})
	newer := SchemaVersion() + 1
	if _, err := s.w.ExecContext(t.Context(), `INSERT INTO schema_migrations (version, applied_at) VALUES (?, 1)`, newer); err != nil {
		t.Fatal(err)
	}
	s.Close()

	_, err := Open(t.Context(), path, Options{})
	if !errors.Is(err, cairn.ErrSchemaTooNew) {
		t.Fatalf("Open of a database at version %d: got %v, want ErrNewerSchema", newer, err)
	}
	for _, want := range []string{path, "upgrade cairn"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// TestOpen_WhileAnotherWrites: another connection (a process running an
// append, say) holds the database's write lock. Opening the store, whose
// schema is current, and reading it must not wait for that lock: a
// command that only shows a session used to wait out the whole busy
// timeout and fail with SQLITE_BUSY.
func TestOpen_WhileAnotherWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	s := openTest(t, path, Options{})
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "kept"}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	other, err := sql.Open("sqlite", dsn(path, []string{"busy_timeout(1000)"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), `UPDATE sessions SET steps = steps + 1 WHERE id = 'kept'`); err != nil {
		t.Fatal(err)
	}
	// Open waits at most its context for a lock: a second is much more
	// than a read takes, and much less than the busy timeout.
	ctx, cancel := context.WithTimeout(t.Context(), BusyTimeout/2)
	defer cancel()
	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("Open while another connection holds the write lock: %v", err)
	}
	defer s.Close()
	if _, err := s.Load(ctx, "kept", 0); err != nil {
		t.Errorf("Load while another connection holds the write lock: %v", err)
	}
	if _, err := conn.ExecContext(t.Context(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
}
