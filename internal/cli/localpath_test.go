package cli

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLocalPath(t *testing.T) {
	tests := []struct{ url, want string }{
		{"sqlite:///abs/c.db", "/abs/c.db"},
		{"sqlite:///.cairn/cairn.db", ".cairn/cairn.db"},
		{"sqlite:rel/c.db", "rel/c.db"},
		{"sqlite:rel%20dir/c.db", "rel dir/c.db"},
		{"file:///abs/dir", "/abs/dir"},
		{"file:///./dir", "./dir"},
		{"file://localhost/abs/dir", "/abs/dir"},
		{"file://otherhost/abs/dir", ""},
		{"postgres://127.0.0.1/db", ""},
		{"memory:", ""},
		{"::", ""},
	}
	for _, tt := range tests {
		if got := LocalPath(tt.url); got != tt.want {
			t.Errorf("LocalPath(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}

// TestRealPath: a link, a relative name and a path not made yet under a
// linked folder all resolve to one name.
func TestRealPath(t *testing.T) {
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
		if got := RealPath(p); got != want {
			t.Errorf("RealPath(%q) = %q, want %q", p, got, want)
		}
	}
}
