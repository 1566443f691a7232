package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/sqlite"
)

// TestStore_LockFile: the lock file is beside the database's real path,
// whatever name the store is opened by, and per namespace; an ID that
// breaks the rules has none.
func TestStore_LockFile(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "real.db")
	if err := os.WriteFile(real, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "link.db")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	lock := func(path, ns string) string {
		t.Helper()
		s, err := sqlite.Open(t.Context(), path, sqlite.Options{StoreOptions: cairn.StoreOptions{Namespace: ns}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if s.LockFile("../x") != "" {
			t.Errorf("LockFile(../x) = %q, want none", s.LockFile("../x"))
		}
		return s.LockFile("s1")
	}
	want := filepath.Join(dir, "real.db.locks", "default", "s1.lock")
	for _, p := range []string{real, "link.db", "./real.db"} {
		if got := lock(p, ""); got != want {
			t.Errorf("LockFile of %s = %q, want %q", p, got, want)
		}
	}
	if got := lock(real, "other"); got != filepath.Join(dir, "real.db.locks", "other", "s1.lock") {
		t.Errorf("LockFile in namespace other = %q", got)
	}
}
