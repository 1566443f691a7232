//go:build linux || darwin

package file_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
	"github.com/cairnhq/cairn/store/file"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestStore_Erasure writes a marker into a session, deletes it, and looks
// for the marker in every file under the store's folder, with and without
// encryption.
func TestStore_Erasure(t *testing.T) {
	dir := t.TempDir()
	crypttest.Run(t, crypttest.Backend{
		URL: "file://" + dir,
		Raw: rawFiles(dir),
	})
}

// rawFiles returns the files under dir that hold needle, and the files
// and folders whose path holds it.
func rawFiles(dir string) func(t *testing.T, needle string) []string {
	return func(t *testing.T, needle string) []string {
		var where []string
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if rel, _ := filepath.Rel(dir, p); strings.Contains(rel, needle) {
				where = append(where, rel+" (its name)")
			}
			if d.IsDir() {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if bytes.Contains(b, []byte(needle)) {
				rel, _ := filepath.Rel(dir, p)
				where = append(where, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return where
	}
}

// TestLongTerm_Erasure writes markers into every field of long-term items,
// erases them (Delete, DeleteNamespace, a replace, Sweep), and looks for
// them in every file under the store's folder.
func TestLongTerm_Erasure(t *testing.T) {
	dir := t.TempDir()
	crypttest.RunLongTerm(t, crypttest.LongTermBackend{URL: "file://" + dir, Raw: rawFiles(dir)})
}

// TestSearch_Erasure writes markers into sessions that two stores of one
// folder have searched, so that both index them, then erases the sessions
// (Delete, and an expiry that Sweep ends) and looks for the markers, and
// for the sessions' IDs, in every file under the store's folder: the
// sessions' search files went with them, the feed no longer names them,
// and neither store finds them.
func TestSearch_Erasure(t *testing.T) {
	dir := t.TempDir()
	raw := rawFiles(dir)
	clock := storetest.NewClock()
	const ns = "erasure"
	opts := cairn.StoreOptions{Namespace: ns, TTL: time.Hour, Now: clock.Now}
	s, other := openIn(t, dir, opts), openIn(t, dir, opts)
	write := func() (id, marker string) {
		t.Helper()
		id, marker = "erased-"+testenv.RandHex(6), crypttest.Marker()
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(t.Context(), id, 0, crypttest.Events(marker)...); err != nil {
			t.Fatal(err)
		}
		for _, st := range []*file.Store{s, other} {
			if hits, err := st.Search(t.Context(), marker, 10); err != nil || len(hits) != 1 || hits[0].ID != id {
				t.Fatalf("Search for the marker = %v, %v; want %s", hits, err, id)
			}
		}
		// The marker in the session's search file, and its ID in the
		// feed: what the checks below must find gone.
		if where := raw(t, marker); !slices.Contains(where, filepath.Join(ns, id, file.SearchName)) {
			t.Fatalf("the marker is in %v, not in the session's search file: the test cannot see its erasure", where)
		}
		if where := raw(t, id); !slices.Contains(where, filepath.Join(ns, file.FeedName)) {
			t.Fatalf("the ID is in %v, not in the feed: the test cannot see its erasure", where)
		}
		return id, marker
	}
	gone := func(how, id, marker string) {
		t.Helper()
		for _, needle := range []string{marker, id} {
			if where := raw(t, needle); len(where) > 0 {
				t.Errorf("after %s, %s is still in %v", how, needle, where)
			}
		}
		for _, st := range []*file.Store{s, other} {
			if hits, err := st.Search(t.Context(), marker, 10); err != nil || len(hits) != 0 {
				t.Errorf("after %s, Search for the marker = %v, %v; want none", how, hits, err)
			}
		}
	}

	id, marker := write()
	if err := s.Delete(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	gone("Delete", id, marker)

	id, marker = write()
	clock.Advance(2 * time.Hour)
	for _, st := range []*file.Store{s, other} {
		if hits, err := st.Search(t.Context(), marker, 10); err != nil || len(hits) != 0 {
			t.Errorf("after expiry, Search for the marker = %v, %v; want none", hits, err)
		}
	}
	if n, err := other.Sweep(t.Context()); err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want 1", n, err)
	}
	gone("Sweep", id, marker)
}
