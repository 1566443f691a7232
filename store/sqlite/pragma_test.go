package sqlite

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
)

func openTest(t *testing.T, path string, opts Options) *Store {
	t.Helper()
	s, err := Open(t.Context(), path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func pragma[T any](t *testing.T, db *sql.DB, name string) T {
	t.Helper()
	var v T
	if err := db.QueryRowContext(t.Context(), "PRAGMA "+name).Scan(&v); err != nil {
		t.Fatalf("PRAGMA %s: %v", name, err)
	}
	return v
}

func TestOpen_Pragmas(t *testing.T) {
	cases := []struct {
		synchronous string
		want        int
	}{
		{"", 2}, {"FULL", 2}, {"full", 2}, {"NORMAL", 1}, {"normal", 1},
	}
	for _, c := range cases {
		t.Run("synchronous="+c.synchronous, func(t *testing.T) {
			s := openTest(t, filepath.Join(t.TempDir(), "p.db"), Options{Synchronous: c.synchronous})
			if got := pragma[string](t, s.w, "journal_mode"); got != "wal" {
				t.Errorf("writer journal_mode = %q, want wal", got)
			}
			if got := pragma[int](t, s.w, "synchronous"); got != c.want {
				t.Errorf("writer synchronous = %d, want %d", got, c.want)
			}
			if got := pragma[int](t, s.w, "secure_delete"); got != 1 {
				t.Errorf("writer secure_delete = %d, want 1", got)
			}
			if got := pragma[int](t, s.w, "foreign_keys"); got != 1 {
				t.Errorf("writer foreign_keys = %d, want 1", got)
			}
			if got := pragma[int](t, s.w, "auto_vacuum"); got != 2 {
				t.Errorf("auto_vacuum of a new file = %d, want 2 (incremental)", got)
			}
			for name, db := range map[string]*sql.DB{"writer": s.w, "reader": s.r} {
				if got := pragma[int](t, db, "cell_size_check"); got != 1 {
					t.Errorf("%s cell_size_check = %d, want 1", name, got)
				}
				if got := pragma[int](t, db, "cache_size"); got != -16384 {
					t.Errorf("%s cache_size = %d, want -16384 (16 MiB)", name, got)
				}
			}
			if got, want := pragma[int64](t, s.w, "busy_timeout"), BusyTimeout.Milliseconds(); got != want {
				t.Errorf("writer busy_timeout = %d, want %d", got, want)
			}
			if got := pragma[string](t, s.r, "journal_mode"); got != "wal" {
				t.Errorf("reader journal_mode = %q, want wal", got)
			}
			if got := pragma[int](t, s.r, "query_only"); got != 1 {
				t.Errorf("reader query_only = %d, want 1", got)
			}
			if got, want := pragma[int64](t, s.r, "busy_timeout"), BusyTimeout.Milliseconds(); got != want {
				t.Errorf("reader busy_timeout = %d, want %d", got, want)
			}
			if got := s.w.Stats().MaxOpenConnections; got != 1 {
				t.Errorf("writer pool allows %d connections, want 1", got)
			}
		})
	}
}

// TestOpenLongTerm_Pragmas: the long-term store's writer checks the pages
// it reads, its readers do not (see OpenLongTerm); both keep the page
// cache and the rest of the session store's settings.
func TestOpenLongTerm_Pragmas(t *testing.T) {
	s, err := OpenLongTerm(t.Context(), filepath.Join(t.TempDir(), "p.db"), LongTermOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, c := range map[string]struct {
		db           *sql.DB
		check, query int
	}{"writer": {s.w, 1, 0}, "reader": {s.r, 0, 1}} {
		if got := pragma[int](t, c.db, "cell_size_check"); got != c.check {
			t.Errorf("%s cell_size_check = %d, want %d", name, got, c.check)
		}
		if got := pragma[int](t, c.db, "query_only"); got != c.query {
			t.Errorf("%s query_only = %d, want %d", name, got, c.query)
		}
		if got := pragma[int](t, c.db, "cache_size"); got != -16384 {
			t.Errorf("%s cache_size = %d, want -16384 (16 MiB)", name, got)
		}
		if got, want := pragma[int64](t, c.db, "busy_timeout"), BusyTimeout.Milliseconds(); got != want {
			t.Errorf("%s busy_timeout = %d, want %d", name, got, want)
		}
	}
	if got := pragma[int](t, s.w, "secure_delete"); got != 1 {
		t.Errorf("writer secure_delete = %d, want 1", got)
	}
}

func TestOpen_BadSynchronous(t *testing.T) {
	_, err := Open(t.Context(), filepath.Join(t.TempDir(), "p.db"), Options{Synchronous: "OFF"})
	if err == nil {
		t.Fatal("Open with synchronous OFF succeeded, want an error")
	}
}

func TestOpen_BadNamespace(t *testing.T) {
	_, err := Open(t.Context(), filepath.Join(t.TempDir(), "p.db"),
		Options{StoreOptions: cairn.StoreOptions{Namespace: "../x"}})
	if err == nil {
		t.Fatal("Open with namespace ../x succeeded, want ErrInvalidID")
	}
}

func TestOpen_CreatesPrivateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "cairn.db")
	s := openTest(t, path, Options{})
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, path: 0o600, path + "-wal": 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode(); got != want {
			t.Errorf("mode of %s = %v, want %v", filepath.Base(p), got, want)
		}
	}
}

// TestOpen_NotADatabase: a file that is not SQLite's is refused as
// damage, named as SQLite names it, not as an outage, and left as it was.
func TestOpen_NotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junk.db")
	junk := []byte("this is not an SQLite database, not at all, no")
	if err := os.WriteFile(path, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), path, Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open of a file that is not a database succeeded")
	}
	if !errors.Is(err, cairn.ErrDamaged) || cairn.IsUnavailable(err) || !strings.Contains(err.Error(), "SQLITE_NOTADB") {
		t.Errorf("Open of a file that is not a database: got %v, want ErrDamaged naming SQLITE_NOTADB, not an outage", err)
	}
	if got, _ := os.ReadFile(path); string(got) != string(junk) {
		t.Error("Open changed the file")
	}
}

func TestOpen_PathWithURICharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a b?c#d%20e&f=g", "cairn.db")
	s := openTest(t, path, Options{})
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("no database at %s: %v", path, err)
	}
	if fi.Size() == 0 {
		t.Errorf("the database at %s is empty: SQLite wrote elsewhere", path)
	}
	s = openTest(t, path, Options{})
	if _, err := s.Load(t.Context(), "x", 0); err != nil {
		t.Errorf("Load after reopening %s: %v", path, err)
	}
}

// stablePlansOn returns the query planner stability setting of n
// connections of db, held at once so that each is another connection.
func stablePlansOn(t *testing.T, db *sql.DB, n int) []int32 {
	t.Helper()
	var got []int32
	for range n {
		c, err := db.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Raw(func(dc any) error {
			v, err := stablePlans(dc, -1)
			got = append(got, v)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

// TestOpen_StablePlans: every connection of a Store and of a LongTerm,
// the writer and each reader, runs with SQLite's query planner stability
// guarantee; a connection of modernc's own driver does not (the setting is
// the store's, read from the connection rather than assumed).
func TestOpen_StablePlans(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	s := openTest(t, path, Options{})
	lt, err := OpenLongTerm(t.Context(), path, LongTermOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Close()
	for name, c := range map[string]struct {
		db *sql.DB
		n  int
	}{"store writer": {s.w, 1}, "store reader": {s.r, readers}, "long-term writer": {lt.w, 1}, "long-term reader": {lt.r, readers}} {
		for i, v := range stablePlansOn(t, c.db, c.n) {
			if v != 1 {
				t.Errorf("%s %d: query planner stability %d, want 1", name, i, v)
			}
		}
	}
	plain, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if v := stablePlansOn(t, plain, 1); v[0] != 0 {
		t.Errorf("a connection of modernc's driver: query planner stability %d, want 0", v[0])
	}
}
