package realpath

import (
	"net/url"
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

// TestURL: a path becomes a URL and back, with a Windows drive read as a
// drive, not as a host, and anything a path may hold escaped.
func TestURL(t *testing.T) {
	cases := []struct {
		path, url string
		windows   bool
		back      string
	}{
		{"/var/lib/cairn.db", "sqlite:///var/lib/cairn.db", false, "/var/lib/cairn.db"},
		{"/tmp/a b/50%/c.db", "sqlite:///tmp/a%20b/50%25/c.db", false, "/tmp/a b/50%/c.db"},
		{"C:/Users/ada/cairn.db", "sqlite:///C:/Users/ada/cairn.db", true, "C:/Users/ada/cairn.db"},
		{"d:/x.db", "sqlite:///d:/x.db", true, "d:/x.db"},
		{"/C:/on/linux.db", "sqlite:///C:/on/linux.db", false, "/C:/on/linux.db"},
	}
	for _, c := range cases {
		got := URL("sqlite", c.path)
		if got != c.url {
			t.Errorf("URL(sqlite, %q) = %q, want %q", c.path, got, c.url)
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("%q does not parse: %v", got, err)
		}
		if u.Host != "" {
			t.Errorf("%q has the host %q", got, u.Host)
		}
		if back := fromURL(u.Path, c.windows); back != c.back {
			t.Errorf("fromURL(%q, windows=%v) = %q, want %q", u.Path, c.windows, back, c.back)
		}
	}
}
