package realpath

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOf: a link, a relative name and a path not made yet under a linked
// folder all resolve to one name.
func TestOf(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	want := filepath.Join(dir, "real", "new", "c.db")
	for _, p := range []string{"link/new/c.db", "./real/new/../new/c.db", filepath.Join(dir, "link", "new", "c.db")} {
		if got := Of(p); got != want {
			t.Errorf("Of(%q) = %q, want %q", p, got, want)
		}
	}
}
