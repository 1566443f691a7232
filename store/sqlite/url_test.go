package sqlite

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
)

func TestParseURL(t *testing.T) {
	cases := []struct {
		url, path, sync string
	}{
		{"sqlite:///abs/path.db", "/abs/path.db", ""},
		{"sqlite:/abs/path.db", "/abs/path.db", ""},
		{"sqlite:relative/path.db", "relative/path.db", ""},
		{"sqlite:cairn.db", "cairn.db", ""},
		{"sqlite:///.cairn/cairn.db", ".cairn/cairn.db", ""},
		{"sqlite:///./x.db", "./x.db", ""},
		{"sqlite:///../x.db", "../x.db", ""},
		{"sqlite:///abs/with%20space.db", "/abs/with space.db", ""},
		{"sqlite:rel%20dir/x.db", "rel dir/x.db", ""},
		{"sqlite:///abs/x.db?synchronous=normal", "/abs/x.db", "NORMAL"},
		{"sqlite:rel.db?synchronous=FULL", "rel.db", "FULL"},
	}
	for _, c := range cases {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		path, o, err := parseURL(u)
		if err != nil {
			t.Errorf("parseURL(%s): %v", c.url, err)
			continue
		}
		if path != c.path || o.Synchronous != c.sync {
			t.Errorf("parseURL(%s) = %q, synchronous %q; want %q, %q", c.url, path, o.Synchronous, c.path, c.sync)
		}
	}
}

func TestParseURL_Errors(t *testing.T) {
	cases := []struct {
		url, mention string
	}{
		{"sqlite:///x.db?mode=ro", "mode"},
		{"sqlite:///x.db?cache=shared&zz=1", "cache, zz"},
		{"sqlite:///x.db?synchronous=off", "synchronous"},
		{"sqlite:///x.db?synchronous=full&synchronous=normal", "synchronous"},
		{"sqlite://host/x.db", "host"},
		{"sqlite://user:secret@/x.db", "host"},
		{"sqlite:", "no file name"},
		{"sqlite:///", "no file name"},
		{"sqlite:///dir/", "no file name"},
		{"sqlite:///x.db#frag", "fragment"},
	}
	for _, c := range cases {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = parseURL(u)
		if err == nil {
			t.Errorf("parseURL(%s) succeeded, want an error mentioning %q", c.url, c.mention)
			continue
		}
		if !strings.Contains(err.Error(), c.mention) {
			t.Errorf("parseURL(%s) = %v, want it to mention %q", c.url, err, c.mention)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("parseURL(%s) error shows the password: %v", c.url, err)
		}
	}
}

// TestRegister_URLForms opens stores through cairn.Open with each URL form
// and checks which file they use.
func TestRegister_URLForms(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	abs := filepath.Join(dir, "abs", "cairn.db")
	cases := []struct {
		url, file string
		sync      int
	}{
		{"sqlite://" + filepath.ToSlash(abs), abs, 2},
		{"sqlite:rel/cairn.db?synchronous=normal", filepath.Join(dir, "rel", "cairn.db"), 1},
		{"sqlite:///.cairn/cairn.db", filepath.Join(dir, ".cairn", "cairn.db"), 2},
	}
	for _, c := range cases {
		st, err := cairn.Open(t.Context(), c.url, cairn.StoreOptions{})
		if err != nil {
			t.Fatalf("cairn.Open(%s): %v", c.url, err)
		}
		s := st.(*Store)
		if got := s.Path(); got != c.file {
			t.Errorf("cairn.Open(%s) uses %s, want %s", c.url, got, c.file)
		}
		if got := pragma[int](t, s.w, "synchronous"); got != c.sync {
			t.Errorf("cairn.Open(%s): synchronous = %d, want %d", c.url, got, c.sync)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(c.file); err != nil {
			t.Errorf("cairn.Open(%s) left no file at %s: %v", c.url, c.file, err)
		}
	}
	if _, err := cairn.Open(t.Context(), "sqlite:///.cairn/cairn.db?journal=off", cairn.StoreOptions{}); err == nil ||
		!strings.Contains(err.Error(), "journal") {
		t.Errorf("cairn.Open with an unknown parameter: got %v, want an error naming journal", err)
	}
}
