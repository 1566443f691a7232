//go:build linux || darwin

package file_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cairnhq/cairn"
)

func TestOpen_URL(t *testing.T) {
	parent := t.TempDir()
	t.Chdir(parent)
	cases := []struct {
		url, dir string // dir relative to parent
	}{
		{"file://" + filepath.Join(parent, "abs"), "abs"},
		{"file://localhost" + filepath.Join(parent, "local"), "local"},
		{"file:rel/dir", "rel/dir"},
		{"file:///./dotted", "dotted"},
		{"file:///.hidden/x", ".hidden/x"},
		{"file:with%20space", "with space"},
	}
	for _, c := range cases {
		s, err := cairn.Open(t.Context(), c.url, cairn.StoreOptions{Namespace: "n"})
		if err != nil {
			t.Errorf("Open(%q): %v", c.url, err)
			continue
		}
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: "x"}); err != nil {
			t.Errorf("Create in %q: %v", c.url, err)
		}
		s.Close()
		if _, err := os.Stat(filepath.Join(parent, c.dir, "n", "x", "events.jsonl")); err != nil {
			t.Errorf("Open(%q) did not store in %s: %v", c.url, c.dir, err)
		}
	}
	for _, bad := range []string{"file:", "file://", "file://example.com/x", "file:///x?mode=ro", "file:///x#frag"} {
		if s, err := cairn.Open(t.Context(), bad, cairn.StoreOptions{}); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded, want an error", bad)
		}
	}
}
